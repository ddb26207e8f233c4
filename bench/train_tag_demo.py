"""Train the Tag game that notebook 07 plays back, and ship it in the package.

    python bench/train_tag_demo.py                       # on a GPU: the checkpoint that ships
    python bench/train_tag_demo.py --tiny --out /tmp/tag_demo.safetensors   # the path, on a CPU

A small game (2 taggers, 8 runners on an 8 x 8 field) so that the checkpoint is small and an
animation shows every agent; every agent sees all the others (full observation, in index
order), so a runner always knows where the taggers are. Both sides train at once with A2C
(envs/tag_continuous/config.yaml, changed by DEMO below) for long enough that taggers chase
and runners flee. The Trainer is the one `wd-teach train` uses; the checkpoint is
Trainer.save's, and its config is written beside it as YAML (with how it was made, and what
it learnt, in the header), so that
`wd-teach train tag_continuous --config wd_teach/train/pretrained/tag_demo.yaml` trains it
again.

What it learnt is measured as bench/learning.py measures Tag, on fresh games with the most
probable actions: runners tagged per episode by the trained taggers against what random
taggers tag (both chasing random runners): chasing; and what the trained taggers tag of
trained runners against random ones: fleeing. The table reports; nothing here fails on a
number. `--tiny` runs the same path at toy size on a CPU (it must be given --out: a
toy run is not the trained checkpoint).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

import wd_teach
from wd_teach.train.config import merge
from wd_teach.train.playback import PRETRAINED
from wd_teach.train.trainer import Trainer

NAME = "tag_demo"
#: The demo run, on top of envs/tag_continuous/config.yaml (its GPU settings).
DEMO = {
    "env": {"backend": None, "num_envs": 256,
            "params": {"num_taggers": 2, "num_runners": 8, "num_nearest": None,
                       "field_size": 8.0, "tagging_distance": 0.8, "episode_length": 100}},
    # two tanh networks a policy, as the shipped file was trained (Tag's config has since
    # given each policy one shared ReLU body)
    "policies": {name: {"hidden": [64, 64], "shared": False, "activation": "tanh"}
                 for name in ("taggers", "runners")},
    "trainer": {"iterations": 4000, "steps": 100, "lr": 2e-3, "seed": 0,
                "precision": "fp32", "checkpoint_every": 0},
}
#: --tiny: the same run at toy size, to try the whole path on a CPU in seconds.
TINY = {"env": {"num_envs": 4}, "trainer": {"iterations": 3, "steps": 20}}
EVAL_ENVS = {"full": 200, "tiny": 4}
#: The file that ships: the trained policies in a trainer of this many envs (the training
#: envs' state is a megabyte that playing does not need), and at most this many history rows.
SHIPPED_ENVS = 8
HISTORY_ROWS = 500


def make_trainer(tiny: bool = False, sets=()) -> Trainer:
    """The demo's Trainer (toy-sized with `tiny`); `sets`: 'key=value' changes on top."""
    overrides = merge(DEMO, TINY) if tiny else DEMO
    return Trainer("tag_continuous", overrides=overrides, sets=sets, gpu=True)


def measure(trainer: Trainer, num_envs: int) -> dict[str, float]:
    """Runners tagged per episode on fresh games, most probable actions, with each side
    trained or random: what chasing and fleeing bought."""
    def tags(*random: str) -> float:
        return trainer.evaluate(num_envs=num_envs, random=random).metrics["tags_per_episode"]

    return {"random taggers, random runners": tags("taggers", "runners"),
            "trained taggers, random runners": tags("runners"),
            "trained taggers, trained runners": tags()}


def compact(trainer: Trainer) -> Trainer:
    """The trained run in a trainer of SHIPPED_ENVS fresh envs: the same config, weights and
    optimiser state (so it loads with Trainer.from_checkpoint and can train on), and the
    history thinned to at most HISTORY_ROWS rows, the last one kept."""
    small = Trainer(trainer.config, overrides={"env": {"num_envs": SHIPPED_ENVS}})
    for name, learner in small.learners.items():
        learner.load_state_dict(trainer.learners[name].state_dict())
    every = max(1, -(-len(trainer.history) // HISTORY_ROWS))
    small.history = [row for i, row in enumerate(trainer.history, 1)
                     if i % every == 0 or i == len(trainer.history)]
    small.iteration, small.env_steps = trainer.iteration, trainer.env_steps
    return small


def header(trainer: Trainer, found: dict[str, float], seconds: float, device: str) -> str:
    """The YAML file's header: how the checkpoint was made and what it learnt."""
    lines = [f"The run of wd_teach/train/pretrained/{NAME}.safetensors, made by "
             "bench/train_tag_demo.py:",
             f"{trainer.iteration} iterations, {trainer.env_steps:,} env steps, "
             f"{seconds:.0f} s on {device} ({trainer.backend}).",
             f"The checkpoint holds its policies in a trainer of {SHIPPED_ENVS} envs, and "
             f"at most {HISTORY_ROWS} rows of its history.",
             "Runners tagged per episode, fresh games, most probable actions:"]
    lines += [f"  {what}: {value:.2f}" for what, value in found.items()]
    return "".join(f"# {line}\n" for line in lines)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PRETRAINED / f"{NAME}.safetensors",
                        help="the checkpoint to write (default: the one the package ships)")
    parser.add_argument("--tiny", action="store_true", help="toy size, for a CPU")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change the run's config, e.g. trainer.iterations=4000")
    parser.add_argument("--every", type=int, default=500,
                        help="measure chasing and fleeing every N iterations as well")
    args = parser.parse_args(argv)
    shipped = args.out.resolve() == (PRETRAINED / f"{NAME}.safetensors").resolve()
    if args.tiny and shipped:
        parser.error("--tiny makes a toy run, not the checkpoint that ships: give --out.")
    gpu = wd_teach.gpu_available()
    if not gpu and not args.tiny:
        print("No GPU here: the full run takes hours on a CPU. Use --tiny to try the path.")
    device = torch.cuda.get_device_name(0) if gpu else platform.processor() or "a CPU"

    trainer = make_trainer(args.tiny, args.set)
    print(trainer, flush=True)
    eval_envs = EVAL_ENVS["tiny" if args.tiny else "full"]
    iterations = trainer.config.trainer.iterations
    start = time.perf_counter()
    while trainer.iteration < iterations:
        trainer.train(min(args.every, iterations - trainer.iteration), progress=False)
        print(f"iteration {trainer.iteration}: " + ", ".join(
            f"{k} {v:.2f}" for k, v in measure(trainer, eval_envs).items()), flush=True)
    seconds = time.perf_counter() - start  # measurements included: they are quick

    found = measure(trainer, eval_envs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    compact(trainer).save(args.out)
    config = args.out.with_suffix(".yaml")
    config.write_text(header(trainer, found, seconds, device) + trainer.config.to_yaml())
    print(f"\nwrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) and {config.name}, "
          f"{seconds:.0f} s:")
    for what, value in found.items():
        print(f"  {what:<34}{value:6.2f} runners tagged per episode")
    return args.out


if __name__ == "__main__":
    main()
