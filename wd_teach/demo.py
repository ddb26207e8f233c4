"""Moved to `wd_teach.lessons.demo` (notebook plumbing lives in wd_teach/lessons/).

This old path still works: importing it warns once and hands back the moved module itself,
so every name (and every object) is the same as under the new path.
"""

import sys
import warnings

from wd_teach.lessons import demo as _moved

warnings.warn("wd_teach.demo moved to wd_teach.lessons.demo: import it from there",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
