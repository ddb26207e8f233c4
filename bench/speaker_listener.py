"""Benchmark: does the speaker and listener game learn a language, and which critic does it?

    python bench/speaker_listener.py bench/results/speaker_listener_cpu.json
    python bench/speaker_listener.py out.json --seeds 3 --iterations 100 --envs 64

envs/speaker_listener's config (both roles on PPO), trained over several seeds with each
kind of critic:

    independent   each critic reads its own agent's observation
    centralized   each critic reads the game's global state, both views (MAPPO)

A language shows as a gap: the trained pair against the trained listener with a speaker
that says random words (the speaker's policy replaced by uniform draws). Each run is scored
both ways on `--eval-envs` fresh games, most probable actions; the table gives, per kind of
critic, the IQM over seeds of the return with the trained speaker, with the random one, and
of the gap, each with its 95% bootstrap interval (rliable). Nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

import wd_teach
from wd_teach.train.intervals import iqm_interval
from wd_teach.train.trainer import Trainer

CRITICS = ("independent", "centralized")


def verdicts(rows: list[dict], scores: dict, seeds: list[int]) -> list[dict]:
    """Each critic's verdict on its gap, and a row for the per-seed difference of the gaps,
    centralized - independent, with its interval: does the critic change the language?"""
    for row in (r for r in rows if r["measure"] == "gap"):
        row["verdict"] = ("a language: the trained speaker helps on these seeds" if row["low"] > 0
                          else "no language shown: the interval of the gap reaches 0 or below")
        print(f"  {row['critic']}: {row['verdict']}")
    difference = {s: scores["centralized"]["gap"][s] - scores["independent"]["gap"][s]
                  for s in seeds}
    found = iqm_interval(difference)
    verdict = found.verdict("the centralized critic's gap is larger on these seeds",
                            "the independent critics' gap is larger on these seeds",
                            "the two critics")
    print(f"  gap, centralized - independent: {found}: {verdict}")
    return [{"critic": "centralized - independent", "measure": "gap", "iqm": found.iqm,
             "low": found.low, "high": found.high, "per_seed": difference, "verdict": verdict}]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--eval-envs", type=int, default=400)
    args = parser.parse_args(argv)
    gpu = torch.cuda.is_available()
    seeds = list(range(args.seeds))

    scores = {critic: {"trained": {}, "random speaker": {}, "gap": {}} for critic in CRITICS}
    seconds = {}
    for critic in CRITICS:
        for seed in seeds:
            start = time.perf_counter()
            run = Trainer("speaker_listener", gpu=gpu, sets=[
                f"env.num_envs={args.envs}", f"trainer.iterations={args.iterations}",
                f"trainer.seed={seed}", f"trainer.critic={critic}"])
            run.train(progress=False)
            seconds[f"{critic}/{seed}"] = time.perf_counter() - start
            trained = run.evaluate(num_envs=args.eval_envs).metrics["listener/return"]
            babble = run.evaluate(num_envs=args.eval_envs,
                                  random=("speaker",)).metrics["listener/return"]
            scores[critic]["trained"][seed] = trained
            scores[critic]["random speaker"][seed] = babble
            scores[critic]["gap"][seed] = trained - babble
            print(f"{critic:11s} seed {seed}: return {trained:.3f}, with a random speaker "
                  f"{babble:.3f} ({seconds[f'{critic}/{seed}']:.0f} s)", flush=True)

    rows = []
    print(f"\nthe pair's return per episode (higher is better), seeds {seeds}, "
          f"{args.eval_envs} games each")
    for critic in CRITICS:
        for measure, values in scores[critic].items():
            found = iqm_interval(values)
            rows.append({"critic": critic, "measure": measure, "iqm": found.iqm,
                         "low": found.low, "high": found.high, "per_seed": values})
            print(f"  {critic:11s} {measure:15s} {found}")
    rows += verdicts(rows, scores, seeds)

    device = torch.cuda.get_device_name(0) if gpu else f"CPU ({platform.processor() or 'cpu'})"
    probe = Trainer("speaker_listener", gpu=gpu, sets=[f"env.num_envs={args.envs}"])
    result = {"benchmark": "speaker_listener", "device": device, "torch": torch.__version__,
              "wd_teach": wd_teach.__version__, "backend": probe.backend, "seeds": seeds,
              "iterations": args.iterations, "envs": args.envs, "eval_envs": args.eval_envs,
              "game": probe.config.env.params, "algorithm": probe.config.algorithm_name,
              "train_seconds": seconds, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
