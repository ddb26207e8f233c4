// Inlines the @import of a package's CSS (the Jupyter widgets' stylesheet imports two more),
// which Remix's bundler would otherwise refuse.
module.exports = { plugins: { 'postcss-import': {} } };
