"""Learned taggers against a scripted one: after a minute of training, do trained taggers tag
more runners per game than bench/tag_chaser.py's chaser, against the same runners?

    python bench/learned_vs_chaser.py out.json                       # 60 s, 5 seeds, the GPU game
    python bench/learned_vs_chaser.py out.json --game fast-runners   # a game where one can't
    python bench/learned_vs_chaser.py out.json --seconds 2 --seeds 2 --eval-envs 4   # small
    python bench/learned_vs_chaser.py out.json --seeds 10 --workers 4   # a seed a GPU at once
    python bench/learned_vs_chaser.py a.json --seeds 5                  # on one GPU, ten seeds
    python bench/learned_vs_chaser.py b.json --seeds 5 --first-seed 5   #   in two calls,
    python bench/learned_vs_chaser.py out.json --merge a.json b.json    #   scored as one

Each seed trains taggers and runners together (Tag continuous as its config plays it, A2C)
for `--seconds` of training (the clock counts training only). Then four scores, each the
runners tagged per game over `--eval-envs` fresh games (the same games for every score of a
seed), most probable actions:

    learned taggers against the trained runners    chaser against the same trained runners
    learned taggers against random runners         chaser against random runners

Over the seeds, each gets its IQM and 95% bootstrap interval (rliable), and so do the per-seed
differences learned - chaser, with what that interval supports. Each seed's run also keeps a
learning curve (about 40 points over its training: tags per episode, the taggers' reward,
both sides' policy entropy), so a seed that learns nothing shows when it stopped. A table to
read and a JSON; nothing here fails on a number.

`--workers N` trains the seeds in N processes at once, worker k taking the seeds' k-th,
(k + N)-th, ...
and, on a machine with N GPUs or more, GPU k alone (CUDA_VISIBLE_DEVICES), so each seed
still has a whole GPU for its minute and ten seeds take three minutes on four GPUs, not ten.
Fewer GPUs than workers is refused: seeds sharing a GPU would each train less in their
minute. The scores and intervals are then over every worker's seeds.

`--first-seed K` trains seeds K to K + seeds - 1, so that runs too long for one sitting (ten
seeds of a minute on one GPU, where a device call lasts ten) can be split; `--merge` then
scores the runs of several such results as one, refusing results of different settings (game,
changes, seconds, games scored, chaser) or with a seed twice. It trains nothing.

Games (`--game`):

    default        the config's game: taggers and runners equally fast. A chaser tags about
                   98 of 100 random runners there (bench/tag_chaser.py), so against random
                   runners nothing can beat it by much.
    fast-runners   runners 20% faster than taggers (0.6 against 0.5 a step): a lone tagger
                   that runs straight at a runner never closes the gap unless the runner
                   stops at the field's edge, so catching a runner that flees well takes
                   taggers that cut it off together. The chaser plays the same game.
    pairs          a runner is caught only with two taggers within reach at once, and both
                   are paid (env.params.taggers_needed=2): a lone chaser catches no one, so
                   the chaser's taggers, each running at its own nearest runner, meet only by
                   chance. On the CPU it tagged 10.3 of 100 random runners a game against
                   random taggers' 0.9 (seed 0, 50 games; 97.8 in the config's game), so
                   taggers that learn to hunt together have room to beat it.

Both run on the plain floor: the chaser takes the place of the taggers' policy object, which
the fast floor's fused policies are not made for.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import wd_teach
from wd_teach.floors import set_fast
from wd_teach.train.intervals import iqm_interval
from wd_teach.train.trainer import Trainer

GAMES = {"default": [],
         "fast-runners": ["env.params.tagger_max_speed=0.5",
                          "env.params.runner_max_speed=0.6"],
         "pairs": ["env.params.taggers_needed=2"]}
SCORES = ("learned/trained", "chaser/trained", "learned/random", "chaser/random")


def chaser_class():
    """bench/tag_chaser.py's Chaser (bench/ is a folder of scripts, not a package)."""
    path = Path(__file__).with_name("tag_chaser.py")
    spec = importlib.util.spec_from_file_location("bench_tag_chaser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Chaser


#: What a seed's learning curve keeps of an iteration's metrics row: whether the taggers
#: catch, what they are paid, and how far each side's policy has narrowed (its entropy).
CURVE = ("tags_per_episode", "taggers/reward", "taggers/entropy", "runners/entropy")


def train_for(trainer: Trainer, seconds: float, points: int = 40
              ) -> tuple[int, float, list[dict]]:
    """Iterate until `seconds` of training have passed: (iterations, seconds taken, the
    learning curve). The curve is the CURVE metrics of the first iteration after each
    `seconds / points` of training, and of the last: when a seed stops catching, and
    whether its taggers' entropy fell first."""
    trained, curve, next_point, every = 0.0, [], 0.0, seconds / points
    while trained < seconds:
        start = time.perf_counter()
        row = trainer.iterate()  # ends with its metrics copied to the host: the GPU is done
        trained += time.perf_counter() - start
        if trained >= next_point or trained >= seconds:
            # None where the iteration had no value (no game ended in it: no tags counted)
            curve.append({"iteration": trainer.iteration, "seconds": trained,
                          **{name: row[name] if math.isfinite(row[name]) else None
                             for name in CURVE if name in row}})
            next_point = (trained // every + 1) * every  # past a slow iteration, not behind it
    return trainer.iteration, trained, curve


def scores(trainer: Trainer, chaser: torch.nn.Module, envs: int, seed: int) -> dict:
    """The four scores of one trained run, on the same fresh games."""
    learned = trainer.policies["taggers"]

    def tags(random=()):
        return trainer.evaluate(num_envs=envs, seed=seed, random=random
                                ).metrics["tags_per_episode"]

    found = {"learned/trained": tags(), "learned/random": tags(("runners",))}
    trainer.policies["taggers"] = chaser
    try:
        found["chaser/trained"] = tags()
        found["chaser/random"] = tags(("runners",))
    finally:
        trainer.policies["taggers"] = learned
    return found


def verdict(interval) -> str:
    return interval.verdict("learned taggers tag more, on these seeds",
                            "the chaser tags more, on these seeds")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the first seed: seeds first-seed to first-seed + seeds - 1")
    parser.add_argument("--merge", nargs="+", type=Path, default=None, metavar="RESULT",
                        help="score the runs of these results as one, training nothing")
    parser.add_argument("--eval-envs", type=int, default=100)
    parser.add_argument("--game", choices=sorted(GAMES), default="default")
    parser.add_argument("--variant", default="runner",
                        help="the chaser's variant (bench/tag_chaser.py)")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="KEY=VALUE changes to the config, as `wd-teach train --set`")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes training seeds at once, a GPU each (see above)")
    parser.add_argument("--only-seeds", default=None, help=argparse.SUPPRESS)  # a worker's
    args = parser.parse_args(argv)
    if args.merge:
        return summarize(*merged(parser, args))
    if args.first_seed < 0:
        parser.error(f"--first-seed must be 0 or more, got {args.first_seed}.")
    if args.seeds < 1 or not 1 <= args.workers <= args.seeds:
        parser.error(f"--seeds must be at least 1 and --workers from 1 to --seeds; got "
                     f"--seeds {args.seeds} --workers {args.workers}.")
    gpus = torch.cuda.device_count()
    if args.workers > 1 and 0 < gpus < args.workers:
        parser.error(f"--workers {args.workers} on a machine with {gpus} GPU(s): each worker "
                     f"trains on a GPU of its own (seeds sharing one would each train less in "
                     f"their {args.seconds:g} s). Give --workers {gpus} or fewer.")
    if args.workers > 1:
        return summarize(args, in_workers(args))
    set_fast(False)  # the plain floor: see the docstring
    try:
        if args.only_seeds:  # a worker: its runs only; the process that started it sums up
            runs = train_seeds(args, [int(s) for s in args.only_seeds.split(",")])
            args.out.write_text(json.dumps({"runs": runs}) + "\n")
            return {"runs": runs}
        return summarize(args, train_seeds(args, seeds_of(args)))
    finally:
        set_fast("reset")


def seeds_of(args) -> list[int]:
    """The seeds asked for: args.seeds of them from args.first_seed."""
    return list(range(args.first_seed, args.first_seed + args.seeds))


#: What results must share to be scored together (--merge): the game and how it was played.
SETTINGS = ("benchmark", "game", "sets", "seconds", "eval_envs", "variant", "num_envs", "params")


def merged(parser, args) -> tuple[argparse.Namespace, list[dict]]:
    """The runs of the results args.merge names, by seed, and their shared settings as the
    arguments summarize reads; an error (parser.error) where they differ or share a seed."""
    results = []
    for path in args.merge:
        try:
            results.append(json.loads(path.read_text()))
        except (OSError, ValueError) as err:
            parser.error(f"--merge: cannot read {path} as a learned_vs_chaser result ({err}).")
        if results[-1].get("benchmark") != "learned_vs_chaser" or "runs" not in results[-1]:
            parser.error(f"--merge: {path} is not a learned_vs_chaser result.")
    first = results[0]
    for path, result in zip(args.merge[1:], results[1:], strict=True):
        differ = [key for key in SETTINGS if result.get(key) != first.get(key)]
        if differ:
            parser.error(f"--merge: {path} was played with other settings than "
                         f"{args.merge[0]} ({', '.join(differ)}); only runs of one game and "
                         f"one way of playing it are scored together.")
    runs = sorted((run for result in results for run in result["runs"]),
                  key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    twice = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if twice:
        parser.error(f"--merge: seed(s) {twice} appear in more than one result; each seed is "
                     f"scored once.")
    extra = [change for change in first["sets"] if change not in GAMES[first["game"]]]
    return argparse.Namespace(
        out=args.out, game=first["game"], sets=extra, seconds=first["seconds"],
        eval_envs=first["eval_envs"], variant=first["variant"],
        workers=[result.get("workers", 1) for result in results],
        merged_from=[str(path) for path in args.merge]), runs


def train_seeds(args, seeds: list[int]) -> list[dict]:
    """Train each seed for args.seconds and score it: a run (its scores and curve) a seed."""
    gpu = torch.cuda.is_available()
    Chaser = chaser_class()
    runs = []
    print(f"{'seed':>4} {'iterations':>10} {'seconds':>8} "
          + " ".join(f"{name:>16}" for name in SCORES))
    for seed in seeds:
        trainer = Trainer("tag_continuous", gpu=gpu,
                          sets=[*GAMES[args.game], *args.sets, f"trainer.seed={seed}"])
        iterations, seconds, curve = train_for(trainer, args.seconds)
        chaser = Chaser(trainer.env, args.variant).to(trainer.device)
        found = scores(trainer, chaser, args.eval_envs, seed)
        runs.append({"seed": seed, "iterations": iterations, "seconds": seconds,
                     "env_steps": trainer.env_steps, **found, "curve": curve,
                     "device": (torch.cuda.get_device_name(0) if gpu
                                else f"CPU ({platform.processor() or 'cpu'})"),
                     "num_envs": trainer.config.env.num_envs,
                     "params": trainer.config.env.params})
        print(f"{seed:>4} {iterations:>10} {seconds:>8.1f} "
              + " ".join(f"{found[name]:>16.2f}" for name in SCORES), flush=True)
    return runs


def in_workers(args) -> list[dict]:
    """train_seeds in args.workers processes of this script, worker k on seeds k, k +
    workers, ... and, where there are GPUs, on GPU k alone: their runs, by seed."""
    script = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as folder:
        workers = []
        for k in range(args.workers):
            seeds = ",".join(str(s) for s in seeds_of(args)[k::args.workers])
            env = dict(os.environ)
            if torch.cuda.device_count():
                env["CUDA_VISIBLE_DEVICES"] = str(k)
            part = Path(folder) / f"worker{k}.json"
            # the worker: the same settings, its own seeds and output, one process
            settings = ["--seconds", str(args.seconds), "--seeds", str(args.seeds),
                        "--eval-envs", str(args.eval_envs), "--game", args.game,
                        "--variant", args.variant, *(f"--set={s}" for s in args.sets)]
            workers.append((k, part, subprocess.Popen(
                [sys.executable, script, str(part), *settings, "--only-seeds", seeds],
                env=env)))
        failed = [k for k, _, process in workers if process.wait() != 0]
        if failed:
            raise RuntimeError(f"learned_vs_chaser: worker(s) {failed} failed (their output "
                               f"is above); no result is written.")
        runs = [run for _, part, _ in workers for run in json.loads(part.read_text())["runs"]]
    return sorted(runs, key=lambda run: run["seed"])


def summarize(args, runs: list[dict]) -> dict:
    """The scores over the seeds, each with its IQM and interval, and the differences
    learned - chaser; printed, written to args.out and returned."""
    seeds = [run["seed"] for run in runs]
    per_seed = {name: {run["seed"]: run[name] for run in runs} for name in SCORES}
    for run in runs:  # each seed's curve at its start, middle and end
        points = [run["curve"][k] for k in (0, len(run["curve"]) // 2, -1)]
        print(f"seed {run['seed']} curve: " + ", ".join(
            f"{name} " + " -> ".join("-" if p.get(name) is None else f"{p[name]:.2f}"
                                     for p in points)
            for name in ("tags_per_episode", "taggers/entropy")))
    rows = []
    for name in SCORES:
        found = iqm_interval(per_seed[name])
        rows.append({"score": name, "iqm": found.iqm, "low": found.low, "high": found.high})
        print(f"{name:<24} {found}")
    for runners in ("trained", "random"):
        differences = {s: per_seed[f"learned/{runners}"][s] - per_seed[f"chaser/{runners}"][s]
                       for s in seeds}
        found = iqm_interval(differences)
        rows.append({"score": f"learned - chaser, {runners} runners", "iqm": found.iqm,
                     "low": found.low, "high": found.high, "per_seed": differences,
                     "verdict": verdict(found)})
        print(f"learned - chaser, {runners:<7} runners: {found}: {verdict(found)}")

    devices = sorted({run["device"] for run in runs})
    result = {"benchmark": "learned_vs_chaser", "device": ", ".join(devices),
              "torch": torch.__version__, "wd_teach": wd_teach.__version__, "game": args.game,
              "sets": [*GAMES[args.game], *args.sets], "seconds": args.seconds,
              "seeds": seeds, "eval_envs": args.eval_envs, "variant": args.variant,
              "workers": args.workers, "num_envs": runs[0]["num_envs"],
              **({"merged_from": args.merged_from} if getattr(args, "merged_from", None)
                 else {}),
              "params": runs[0]["params"], "runs": runs, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
