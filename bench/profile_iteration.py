"""Where a graphed training iteration spends the GPU's time, kernel by kernel.

    python bench/profile_iteration.py out.json --envs 500 --set trainer.precision=bf16
    python bench/profile_iteration.py out.json --envs 500 --ppo
    python bench/profile_iteration.py out.json --envs 500 --unfused   # Linear and ReLU apart
    python bench/profile_iteration.py out.json --envs 500 --separate-heads  # two output layers

The Trainer runs as `wd-teach train` runs it (rollout and update replayed as CUDA graphs),
warmed up for a few iterations; then torch.profiler records `--iterations` more. The table
groups the kernels into families (GEMMs, elementwise, reductions, our env/sampler/reset
kernels, optimiser, copies) and gives each family's share of the GPU's busy time, beside
the iteration's wall time: their difference is time the GPU sat idle (launch gaps, the
host's work between the graphs). The twenty costliest kernels follow. A table to read,
never a pass or fail.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from wd_teach.fast import policy
from wd_teach.fast import triton_kernels as fused
from wd_teach.train.trainer import Trainer

PPO = ["algorithm.name=ppo", "algorithm.epochs=4", "algorithm.num_minibatches=4",
       "algorithm.clip_coef=0.2", "trainer.steps=128"]
#: (family, substrings of a kernel's name), first match wins
FAMILIES = [
    ("env/sampler/reset (ours)", ("step", "sample", "reset", "tag_", "catch", "nearest",
                                  "observ", "reward")),  # "tag_": cuBLAS names hold "stage"
    ("gemm", ("gemm", "cutlass", "sm90_xmma", "nvjet", "ampere_", "sm80_", "cublas")),
    ("optimizer", ("adam", "multi_tensor", "foreach")),
    ("reduction", ("reduce", "softmax", "logsumexp", "cumsum", "scan", "norm")),
    ("copy", ("copy", "memcpy", "memset", "fill", "cat", "index")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "pointwise")),
]


def family(name: str) -> str:
    low = name.lower()
    for fam, keys in FAMILIES:
        if any(k in low for k in keys):
            return fam
    return "other"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--env", default="tag_continuous")
    parser.add_argument("--envs", type=int, default=500)
    parser.add_argument("--ppo", action="store_true")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--unfused", action="store_true",
                        help="run each Linear and its ReLU as two kernels, as before the "
                             "fused product, and a shared body's output layers apart "
                             "(wd_teach.fast.policy.FUSE_LINEAR_RELU and FUSE_HEADS)")
    parser.add_argument("--torch-relu-backward", action="store_true",
                        help="the ReLU's backward and its bias gradient as PyTorch's two "
                             "kernels (wd_teach.fast.triton_kernels.FUSE_RELU_BACKWARD)")
    parser.add_argument("--separate-heads", action="store_true",
                        help="a shared body's actor and critic output layers as two products "
                             "(wd_teach.fast.policy.FUSE_HEADS)")
    args = parser.parse_args(argv)
    policy.FUSE_LINEAR_RELU = not args.unfused
    policy.FUSE_HEADS = not (args.unfused or args.separate_heads)
    fused.FUSE_RELU_BACKWARD = not (args.unfused or args.torch_relu_backward)
    sets = [f"env.num_envs={args.envs}", *(PPO if args.ppo else []), *args.set]
    trainer = Trainer(args.env, gpu=True, sets=sets)
    for _ in range(3):
        trainer.iterate()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.iterations):
        trainer.iterate()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / args.iterations
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.iterations):
            trainer.iterate()
        torch.cuda.synchronize()
    kernels = defaultdict(lambda: [0.0, 0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels[event.name]
            k[0] += event.device_time_total / 1e3 / args.iterations  # ms per iteration
            k[1] += 1
    busy = sum(t for t, _ in kernels.values())
    fams = defaultdict(float)
    for name, (t, _) in kernels.items():
        fams[family(name)] += t
    label = (f"{args.env} {args.envs} envs {'ppo' if args.ppo else 'a2c'} {' '.join(args.set)}"
             f"{' unfused' if args.unfused else ''}"
             f"{' separate-heads' if args.separate_heads else ''}"
             f"{' torch-relu-backward' if args.torch_relu_backward else ''}")
    print(f"\n== {label}: {wall * 1e3:.1f} ms an iteration "
          f"({trainer.steps_per_iteration / wall:,.0f} env steps/s), GPU busy "
          f"{busy:.1f} ms ({busy / (wall * 1e3):.0%}), graphed {trainer.graphed}")
    for fam, t in sorted(fams.items(), key=lambda kv: -kv[1]):
        print(f"  {fam:<26} {t:8.2f} ms  {t / busy:6.1%}")
    top = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:20]
    for name, (t, n) in top:
        print(f"  {t:8.3f} ms  x{n // args.iterations:<6} {name[:110]}")
    record = {"label": label, "wall_ms": wall * 1e3, "busy_ms": busy,
              "env_steps_per_second": trainer.steps_per_iteration / wall,
              "families": dict(fams),
              "kernels": {n: {"ms": t, "count": c // args.iterations}
                          for n, (t, c) in kernels.items()},
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    found = json.loads(args.out.read_text()) if args.out.exists() else []
    args.out.write_text(json.dumps([*found, record], indent=1) + "\n")


if __name__ == "__main__":
    main()
