"""Scaling up (notebook 09): throughput benchmarks, how many envs fit, one process per GPU.

    bench.py          run_bench: steps per second against envs and agents
    bench_pictures.py its figures
    autoscale.py      fit_num_envs: the most envs that fit the GPU
    distributed.py    train_data_parallel: the same training on every GPU of a machine
"""
