"""WarpDrive's own trainer beside ours, in one process on one GPU: the end-to-end table.

    python bench/versus_warpdrive.py results/versus_warpdrive.json \
        --anchor .device/anchor --envs 100,500,10000 --settings a2c-bf16,a2c-fp32,ppo-bf16

Tag continuous, 10 taggers + 100 runners, [256, 256] policies, episode length 500, as
WarpDrive 2.7.1's Tag runs in its own A2C trainer (`run_warpdrive.sh` in the anchor folder
times that). Ours runs the same game through `wd-teach bench train` (whole iterations,
rollout and update, CUDA graphs where the learner has them) in each setting below, on each
backend. WarpDrive runs at 100 and 500 envs only: at 1,000 envs of 110 agents it runs out
of its device heap. Absolute rates drift between machines and runs, so a ratio is only
quoted between rows of one call.

| setting | what changes from envs/tag_continuous/config.yaml |
| --- | --- |
| a2c-bf16 | nothing but the episode length (the config's default: A2C, 100 steps, bf16) |
| a2c-fp32 | trainer.precision=fp32 (exact: replay equals the step-by-step run) |
| a2c-tf32 | trainer.precision=tf32 (tensor cores on fp32 data; exact against step by step too) |
| ppo-bf16 | PPO, 4 epochs x 4 minibatches, 128 steps an iteration |
| ppo-fp32 | the same PPO in fp32 |
| ppo-tf32 | the same PPO in tf32 |
| ppo-*-traj | the same PPO, minibatches of whole trajectories (as JaxMARL's IPPO) |
| *-shared | the same, each policy's actor and critic sharing one ReLU body (the config's own) |
| *-two | the same, each policy two tanh networks, an actor and a critic (lesson 07's first) |
| *-compiled | the same, the loss compiled (trainer.compile: a few fused Triton kernels) |
| plain-* | the same on the plain floor (as WD_TEACH_FAST=0: no wd_teach/fast/ piece) |

The `plain-` settings (plain-a2c-bf16, plain-a2c-bf16-shared, ...) measure the floor the
lessons show beside the fast floor's rows, in the same call.

Tag's config gives each policy WarpDrive's FullyConnected model's shape (one ReLU body, two
output layers), so the `-shared` settings equal the plain ones; they stay so that tables made
when the default was two networks per policy (up to aac5aa7) keep their names. The `-two`
settings run those two networks: twice the hidden-layer work.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from wd_teach.floors import set_fast
from wd_teach.scale.bench import machine, parse_counts, run_bench, versions, write_results
from wd_teach.scale.versus import FORMAT, WARPDRIVE_MAX_ENVS, versus_table

GAME = ["env.params.episode_length=500"]
PPO = ["algorithm.name=ppo", "algorithm.epochs=4", "algorithm.num_minibatches=4",
       "algorithm.clip_coef=0.2", "trainer.steps=128"]
SETTINGS = {
    "a2c-bf16": [],
    "a2c-fp32": ["trainer.precision=fp32"],
    "a2c-tf32": ["trainer.precision=tf32"],
    "ppo-bf16": PPO,
    "ppo-fp32": [*PPO, "trainer.precision=fp32"],
    "ppo-tf32": [*PPO, "trainer.precision=tf32"],
}
SETTINGS.update({f"{name}-traj": [*sets, "algorithm.shuffle=trajectories"]
                 for name, sets in list(SETTINGS.items()) if name.startswith("ppo")})
#: WarpDrive's model shape: one ReLU body per policy, actor and critic output layers on it.
SHARED = [f"policies.{name}.{key}" for name in ("taggers", "runners")
          for key in ("shared=true", "activation=relu")]
#: Two networks a policy, each its own tanh layers: the default up to aac5aa7.
TWO = [f"policies.{name}.{key}" for name in ("taggers", "runners")
       for key in ("shared=false", "activation=tanh")]
BASE = list(SETTINGS.items())
SETTINGS.update({f"{name}-shared": [*sets, *SHARED] for name, sets in BASE})
SETTINGS.update({f"{name}-two": [*sets, *TWO] for name, sets in BASE})
SETTINGS.update({f"{name}-compiled": [*sets, "trainer.compile=true"]
                 for name, sets in list(SETTINGS.items())})
#: The plain floor (wd_teach.floors), which the settings named so run on: compiled losses
#: are the fast floor's alone.
PLAIN = "plain-"
SETTINGS.update({f"{PLAIN}{name}": sets for name, sets in list(SETTINGS.items())
                 if not name.endswith("-compiled")})


def warpdrive(anchor: Path, num_envs: int) -> dict:
    """One row of WarpDrive's own trainer, from the anchor's script."""
    done = subprocess.run(["bash", str(anchor / "run_warpdrive.sh"), str(num_envs)],
                          capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    return {"envs": num_envs, "error": (done.stdout + done.stderr).strip()[-500:]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--anchor", type=Path, default=Path(".device/anchor"),
                        help="the folder with run_warpdrive.sh (none: ours only)")
    parser.add_argument("--envs", default="100,500")
    parser.add_argument("--settings", default="a2c-bf16,a2c-fp32")
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--iterations", type=int, default=None,
                        help="timed iterations per row (default: the bench's)")
    args = parser.parse_args(argv)
    envs = parse_counts(args.envs)
    settings = args.settings.split(",")
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        parser.error(f"unknown settings {unknown}; known: {', '.join(SETTINGS)}")

    found = {"format": FORMAT, "device": machine(),
             "versions": versions(), "warpdrive": [], "rows": []}

    def save() -> None:
        write_results(found, args.out)

    if (args.anchor / "run_warpdrive.sh").exists():
        for n in envs:
            if n <= WARPDRIVE_MAX_ENVS:
                found["warpdrive"].append(warpdrive(args.anchor, n))
                print("warpdrive", json.dumps(found["warpdrive"][-1]), flush=True)
                save()
    for setting in settings:
        for n in envs:
            set_fast(False if setting.startswith(PLAIN) else "reset")
            ours = run_bench("train", envs=[n], backends=args.backends.split(","),
                             iterations=args.iterations if n < 10_000 else 3,
                             sets=[*GAME, *SETTINGS[setting]])
            set_fast("reset")
            for row in ours["rows"]:
                found["rows"].append({"setting": setting, **row})
                rate = row["env_steps_per_second"]
                print(f"{setting} {row['backend']} {n:,} envs: "
                      f"{'-' if rate is None else f'{rate:,.0f}'} env steps/s "
                      f"{row['error']}", flush=True)
                save()
    print()
    print(versus_table(found))


if __name__ == "__main__":
    sys.exit(main())
