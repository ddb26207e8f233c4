"""What the notebooks need around the lessons, apart from the layers they teach.

    colab.py     the Colab badge and install cell of every notebook, and the set-up they run
    show.py      a package function or kernel shown in a cell, by name; PyCUDA's PTX
    pictures.py  the lessons' figures: who copies what, the launch grid, the store
    sizes.py     lesson sizes: full on a GPU, small on a CPU (benchmarks take them too)
    demo.py      the first kernel, `move`, in CUDA C and Numba

These import only the base floor (device, data, launch, cuda_c, numba_index), so any layer
may use them (the sampler's and scale's benchmarks take their sizes from sizes.py). The old
paths (`wd_teach.colab`, `wd_teach.show`, ...) still work and warn.
"""
