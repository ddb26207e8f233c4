"""Races (lesson 06): many threads add to one counter, with a plain += and with an atomic.

kernels.cu and kernels_numba.py are the twins; races.py measures the adds that a plain +=
loses on a GPU; pictures.py draws a race step by step, and the measurement.
"""
