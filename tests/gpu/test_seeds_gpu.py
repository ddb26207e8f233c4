"""Seeds side by side on a GPU (wd_teach/train/seeds.py's default there), on each backend:
every seed's process trains exactly the run it trains alone in this process, and a score
plays the trained run (made again here from its process's checkpoint) exactly as it plays
the run trained here."""

import numpy as np
import pytest

from wd_teach.device import BACKENDS
from wd_teach.train.seeds import train_seeds

SMALL = {"env": {"num_envs": 64}, "trainer": {"steps": 16},
         "algorithm": {"num_minibatches": 2, "epochs": 1}}


def played(trainer):
    return {"greedy": trainer.evaluate(num_envs=8).metrics["cart/return"],
            "on_gpu": trainer.device.type == "cuda"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_seeds_side_by_side_on_the_gpu_are_the_runs_made_alone(backend):
    small = {**SMALL, "env": {**SMALL["env"], "backend": backend}}
    alone = train_seeds("cartpole", [0, 1, 2], 3, metric="cart/loss", overrides=small,
                        at_once=False, score=played)
    apart = train_seeds("cartpole", [0, 1, 2], 3, metric="cart/loss", overrides=small,
                        at_once=True, score=played)
    assert apart.at_once and not alone.at_once
    assert apart.score("on_gpu") == {0: 1.0, 1: 1.0, 2: 1.0}
    np.testing.assert_array_equal(apart.curves, alone.curves)
    assert apart.score("greedy") == alone.score("greedy")
    assert not np.array_equal(apart.curve(0), apart.curve(1))
