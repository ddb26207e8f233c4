"""How many runners does a hand-written chaser tag in Tag continuous, against random taggers?

    python bench/tag_chaser.py                   # 100 games a seed, seeds 0 1 2
    python bench/tag_chaser.py --envs 20 --seeds 0

Tag continuous at its full GPU size (10 taggers, 100 runners, each seeing its 10 nearest,
100 steps), on the CPU with the NumPy backend. The taggers play a scripted policy, the
runners act uniformly at random; runners tagged per game over what uniformly random taggers
tag against the same random runners (the same fresh games: same seed). Trained taggers
reach about 2.5x: a chaser far above that says learning is the limit, one about level with
it says the game caps the ratio. `ceiling` is the ratio if every runner were tagged (runners
over random taggers' tags), `steps` the mean game length (a game ends when no runner is left).

The chaser is a CategoricalActorCritic whose logits put a large value on the heuristic's
action, so `Trainer.evaluate` (greedy) plays it. It reads each observation row as
envs/_tag/game.py lays it out: the own block (x, y, is runner, in game, speed, cos heading,
sin heading), then the nearest others, nearest first (present, dx, dy, is runner, speed,
cos, sin), positions over field_size. It turns toward its target by the turn level nearest
to the angle to it (compass points of num_directions). Variants:

    runner      the nearest runner it sees, full acceleration
    agent       the nearest agent it sees (tagger or runner), full acceleration
    turn-first  the nearest runner; full acceleration only if after this turn it faces the
                runner within `AIM` compass points, else full braking

With no runner in sight (or no one), a chaser heads for the middle of the field.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from wd_teach.train.policy import CategoricalActorCritic
from wd_teach.train.trainer import Trainer

FULL_SIZE = ["env.backend=numpy", "env.params.num_taggers=10", "env.params.num_runners=100",
             "env.params.num_nearest=10", "env.params.episode_length=100",
             "policies.taggers.hidden=[32, 32]", "policies.runners.hidden=[32, 32]"]
VARIANTS = ("runner", "agent", "turn-first")
SURE = 30.0  # the chosen action's logit; the others are 0
AIM = 6  # turn-first: compass points of error (30 degrees) still worth full speed


class Chaser(CategoricalActorCritic):
    """Greedy play of a scripted tagger (tiny unused networks keep the interface)."""

    def __init__(self, env, variant: str = "runner"):
        c = env.config
        super().__init__(env.obs_size, [len(c.accelerations), len(c.turns)], [4])
        self.variant, self.own_size = variant, env.own_size
        self.num_directions = c.num_directions
        self.register_buffer("turns", torch.tensor(c.turns, dtype=torch.float32))
        self.fastest = max(range(len(c.accelerations)), key=lambda i: c.accelerations[i])
        self.slowest = min(range(len(c.accelerations)), key=lambda i: c.accelerations[i])

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        rows = obs.unflatten(-1, (-1, self.own_size))  # [.., 1 + slots, features]
        own, slots = rows[..., 0, :], rows[..., 1:, :]
        seen = slots[..., 0] > 0.5
        if self.variant != "agent":
            seen = seen & (slots[..., 3] > 0.5)  # runners only
        first = seen.int().argmax(-1, keepdim=True)  # nearest first: the first one seen
        dx = slots[..., 1].gather(-1, first).squeeze(-1)
        dy = slots[..., 2].gather(-1, first).squeeze(-1)
        anyone = seen.any(-1)
        dx = torch.where(anyone, dx, 0.5 - own[..., 0])  # else: toward the middle
        dy = torch.where(anyone, dy, 0.5 - own[..., 1])
        angle = torch.atan2(dy, dx) - torch.atan2(own[..., 6], own[..., 5])
        n = self.num_directions
        points = torch.remainder(angle * n / (2 * math.pi) + n / 2, n) - n / 2
        miss = (points[..., None] - self.turns).abs()
        turn = miss.argmin(-1)
        accel = torch.full_like(turn, self.fastest)
        if self.variant == "turn-first":
            aimed = miss.min(-1).values <= AIM
            accel = torch.where(aimed, accel, torch.full_like(turn, self.slowest))
        logits = obs.new_zeros(*obs.shape[:-1], sum(self.num_actions))
        logits.scatter_(-1, accel[..., None], SURE)
        logits.scatter_(-1, self.num_actions[0] + turn[..., None], SURE)
        return logits

    def actor_and_value(self, obs):
        return self.logits(obs), obs.new_zeros(obs.shape[:-1])


def tags(trainer: Trainer, envs: int, seed: int, **options) -> tuple[float, float]:
    """Runners tagged per game, and the mean game length (shorter: every runner caught)."""
    metrics = trainer.evaluate(num_envs=envs, seed=seed, **options).metrics
    return metrics["tags_per_episode"], metrics["episode_length"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=100, help="fresh games a seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args()
    start = time.perf_counter()
    trainer = Trainer("tag_continuous", sets=FULL_SIZE, gpu=False)
    c = trainer.env.config
    print(f"Tag continuous: {c.num_taggers} taggers, {c.num_runners} runners, "
          f"{c.num_nearest} nearest, {c.episode_length} steps; {args.envs} games a seed, "
          f"{trainer.backend} backend")
    print(f"{'variant':<11} {'seed':>4} {'random':>7} {'chaser':>7} {'ratio':>6} "
          f"{'ceiling':>7} {'steps':>5} {'s':>5}")
    for seed in args.seeds:
        t = time.perf_counter()
        baseline, steps = tags(trainer, args.envs, seed, random=("taggers", "runners"))
        ceiling = c.num_runners / baseline  # every runner tagged
        print(f"{'random':<11} {seed:>4} {baseline:>7.1f} {'':>7} {'':>6} {ceiling:>7.2f} "
              f"{steps:>5.1f} {time.perf_counter() - t:>5.1f}")
        for variant in args.variants:
            t = time.perf_counter()
            trainer.policies["taggers"] = Chaser(trainer.env, variant)
            chased, steps = tags(trainer, args.envs, seed, random=("runners",))
            print(f"{variant:<11} {seed:>4} {baseline:>7.1f} {chased:>7.1f} "
                  f"{chased / baseline:>6.2f} {ceiling:>7.2f} {steps:>5.1f} "
                  f"{time.perf_counter() - t:>5.1f}")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
