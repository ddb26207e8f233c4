"""Moved to `wd_teach.lessons.colab` (notebook plumbing lives in wd_teach/lessons/).

This old path still works: importing it warns once and hands back the moved module itself,
so every name (and every object) is the same as under the new path.
"""

import sys
import warnings

from wd_teach.lessons import colab as _moved

warnings.warn("wd_teach.colab moved to wd_teach.lessons.colab: import it from there",
              DeprecationWarning, stacklevel=2)
if __name__ == "__main__":  # `python -m wd_teach.colab`, run by older notebooks' install cell
    sys.exit(_moved.setup_colab())
sys.modules[__name__] = _moved
