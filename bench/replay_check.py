"""Does a CUDA-graph run do what the step-by-step run does? Where do they part, and why?

Two trainers from the same seed, one replaying its rollout and update as CUDA graphs, one
step by step, run side by side. For every iteration this prints whether the actions agree
bit for bit, how many differ, the first step where one does, and how far the weights are
apart after the update. Run it per precision: the two runs launch the same kernels on the
same memory, so in fp32, tf32 and bf16 alike they should agree bit for bit (on an H100, Tag
at 500 envs with shared bodies agreed in tf32, A2C and PPO). Where they part, a kernel
differed (cuBLAS can pick another one for another shape or alignment), and after one draw
near a boundary flips, the two runs are different runs.

    python bench/replay_check.py --backend pycuda --precision fp32 --repeats 20
    python bench/replay_check.py --shared       # shared ReLU bodies: the fused products
    python bench/replay_check.py --envs 500     # Tag as configured, at a benchmark's size
    python bench/replay_check.py --algorithm ppo --set algorithm.shuffle=trajectories
    python bench/replay_check.py --floor plain  # the plain floor (as WD_TEACH_FAST=0)

Both runs take the floor --floor names (wd_teach.floors): "fast" (the default on a GPU:
wd_teach/fast/'s fused products, stacked heads, fixed weights) or "plain".
"""

from __future__ import annotations

import argparse
import json

import torch

from wd_teach.floors import set_fast
from wd_teach.train.trainer import Trainer

SMALL_TAG = ["env.num_envs=16", "env.params.num_taggers=3", "env.params.num_runners=20",
             "env.params.num_nearest=5", "env.params.episode_length=20", "trainer.steps=20",
             "policies.taggers.hidden=[64, 64]", "policies.runners.hidden=[64, 64]"]


#: Tag's own learner (A2C), or PPO with epochs of shuffled minibatches.
ALGORITHMS = {"a2c": [], "ppo": ["algorithm.name=ppo", "algorithm.epochs=2",
                                 "algorithm.num_minibatches=4"]}


#: Each policy's actor and critic on one ReLU body (WarpDrive's model shape).
SHARED = [f"policies.{name}.{key}" for name in ("taggers", "runners")
          for key in ("shared=true", "activation=relu")]


def compare(backend: str, precision: str, iterations: int, seed: int,
            algorithm: str = "a2c", shared: bool = False, envs: int | None = None,
            more: tuple[str, ...] = ()) -> list[dict]:
    size = SMALL_TAG if envs is None else [f"env.num_envs={envs}"]
    sets = [f"env.backend={backend}", f"trainer.precision={precision}",
            f"trainer.seed={seed}", *size, *ALGORITHMS[algorithm],
            *(SHARED if shared else []), *more]
    graphed = Trainer("tag_continuous", gpu=True, sets=sets)
    eager = Trainer("tag_continuous", gpu=True, sets=[*sets, "trainer.cuda_graphs=false"])
    rows = []
    for i in range(iterations):
        graphed.iterate()
        eager.iterate()
        a, b = graphed.rollout.buffer.actions, eager.rollout.buffer.actions
        differ = (a != b).reshape(a.shape[0], -1).any(dim=1)
        weights = max(float((p.detach() - q.detach()).abs().max())
                      for name in eager.policies
                      for p, q in zip(graphed.policies[name].parameters(),
                                      eager.policies[name].parameters(), strict=True))
        rows.append({"iteration": i + 1, "actions_equal": bool(torch.equal(a, b)),
                     "actions_differing": int((a != b).sum()),
                     "first_step": int(differ.nonzero()[0]) if differ.any() else None,
                     "max_weight_diff": weights})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="pycuda")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--algorithm", default="a2c", choices=sorted(ALGORITHMS))
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--shared", action="store_true",
                        help="shared ReLU bodies, so the fused products run")
    parser.add_argument("--envs", type=int, default=None,
                        help="Tag as configured (10 + 100 agents, [256, 256]) at this many "
                             "envs, instead of the small Tag")
    parser.add_argument("--set", action="append", default=[],
                        help="one more config change, key=value (repeatable)")
    parser.add_argument("--floor", choices=("fast", "plain"), default="fast",
                        help="the floor both runs take (wd_teach.floors)")
    args = parser.parse_args()
    set_fast(args.floor == "fast")
    exact = 0
    for r in range(args.repeats):
        rows = compare(args.backend, args.precision, args.iterations, seed=r,
                       algorithm=args.algorithm, shared=args.shared, envs=args.envs,
                       more=tuple(args.set))
        exact += all(row["actions_equal"] for row in rows)
        print(json.dumps({"backend": args.backend, "precision": args.precision, "seed": r,
                          "rows": rows}))
    shape = ((" plain" if args.floor == "plain" else "") + (" shared" if args.shared else "")
             + (f" {args.envs} envs" if args.envs else "")
             + "".join(f" {change}" for change in args.set))
    print(f"SUMMARY {args.algorithm}{shape} {args.backend} {args.precision}: "
          f"{exact}/{args.repeats} "
          f"runs with every action equal over {args.iterations} iterations")


if __name__ == "__main__":
    main()
