"""The Lightning module trains exactly as the plain Trainer does, logs, checkpoints and
resumes. (Lightning is one of wd-teach's requirements: these always run.)"""

import pytest
import torch

from wd_teach.train.trainer import Trainer

SMALL = ["env.num_envs=4", "trainer.steps=16", "algorithm.num_minibatches=2"]


def weights(trainer):
    return [p.detach().clone() for p in trainer.policies["cart"].parameters()]


def test_lightning_learns_the_same_weights_as_the_plain_trainer(tmp_path):
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    module = TrainingModule("cartpole", gpu=False, sets=SMALL)
    make_lightning_trainer(module, 3, out=tmp_path, progress=False).fit(module)
    plain = Trainer("cartpole", gpu=False, sets=SMALL)
    plain.train(3, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights(plain), weights(module.run),
                                                  strict=True))
    assert [r["cart/policy_loss"] for r in plain.history] == \
        [r["cart/policy_loss"] for r in module.history]
    # the learners have their plain optimisers back, and Lightning's files are there
    assert type(module.run.learners["cart"].optimizer) is torch.optim.Adam
    assert (tmp_path / "lightning.ckpt").is_file()
    assert list(tmp_path.glob("logs/*/metrics.csv"))


def test_a_lightning_checkpoint_resumes_exactly(tmp_path):
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    first = TrainingModule("cartpole", gpu=False, sets=SMALL)
    make_lightning_trainer(first, 2, out=tmp_path, progress=False).fit(first)
    resumed = TrainingModule("cartpole", gpu=False, sets=SMALL)
    resumed.load_lightning_checkpoint(tmp_path / "lightning.ckpt")
    assert resumed.run.iteration == 2
    make_lightning_trainer(resumed, 2, progress=False).fit(resumed)
    plain = Trainer("cartpole", gpu=False, sets=SMALL)
    plain.train(4, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights(plain), weights(resumed.run),
                                                  strict=True))


def test_measure_overhead_reports_both_rates():
    from wd_teach.train.lightning import measure_overhead

    result = measure_overhead("cartpole", iterations=2, warmup=1, gpu=False, sets=SMALL)
    assert result["plain_steps_per_second"] > 0 and result["lightning_steps_per_second"] > 0
    assert result["overhead"] == pytest.approx(
        1 - result["lightning_steps_per_second"] / result["plain_steps_per_second"])
