"""The fast floor: what exists for speed alone, behind one switch (wd_teach.floors).

Nothing here is imported while the fast floor is off (WD_TEACH_FAST=0). Each piece names the
plain function it replaces and what it gained (bench/NOTES.md).

    triton_kernels.py   the ReLU's backward and the gradient's masked product, in Triton
"""
