"""What the two Tag games share: the Python base (game.py), the Numba device functions and
catch kernel (tag_numba.py), and their NumPy twins (tag_reference.py). The CUDA C twin is
tag.cuh and tag.cu here, beside their twins."""
