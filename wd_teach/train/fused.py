"""The old home of the Triton kernels, now wd_teach.fast.triton_kernels (the fast floor).

Kept so that code which imported `wd_teach.train.fused` still runs; it warns once, on
import, and re-exports the kernels' module's public functions and constants. The switch
FUSE_RELU_BACKWARD is not among them: set it on wd_teach.fast.triton_kernels, where it is read.
"""

import warnings

from wd_teach.fast.triton_kernels import (  # noqa: F401 (re-exported)
    BLOCK_ROWS,
    MAX_COLS,
    PRODUCT_BLOCKS,
    PRODUCT_COLS,
    ProductBlocks,
    kernel_takes,
    masked_product,
    product_blocks,
    product_takes,
    relu_backward,
    require_triton,
)

warnings.warn("wd_teach.train.fused moved to wd_teach.fast.triton_kernels (the fast floor): "
              "import it from there.", DeprecationWarning, stacklevel=2)
