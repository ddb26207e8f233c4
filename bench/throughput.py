"""Benchmark: throughput against the number of envs and of agents, GPU and CPU.

    python bench/throughput.py env --envs 100,1000,10000 --agents 110 --out results/env.json
    python bench/throughput.py train --envs 100,500 --cpu-baseline --out results/train.json
    python bench/throughput.py all --out results/all.json        # every measurement

The same as `wd-teach bench` (the arguments are its arguments): env step, sampler, rollout
and end-to-end training through `wd_teach.scale.bench.run_bench`, a table on screen and, with
--out, JSON with the GPU's name, the driver and the versions. Without a GPU it runs small
and says so. It reports; it never fails on a time. bench/merge_results.py joins the JSON
of several runs on one machine into one file.
"""

import sys

from wd_teach.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
