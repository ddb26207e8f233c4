"""The checkers of lessons 07 (GAE) and 08 (a Lightning callback) say yes to a right answer
and no, with a hint, to wrong ones; and the package's GAE agrees with 07's definition."""


import torch

from wd_teach.exercises import lesson_07
from wd_teach.train.algorithms.common import gae


def good_advantages(rewards, values, dones, last_values, gamma, lam):
    return gae(rewards, values, dones, last_values, gamma, lam)[0]


def no_done_mask(rewards, values, dones, last_values, gamma, lam):
    return gae(rewards, values, torch.zeros_like(dones), last_values, gamma, lam)[0]


def forward_in_time(rewards, values, dones, last_values, gamma, lam):
    return gae(rewards.flip(0), values.flip(0), dones.flip(0), last_values, gamma, lam)[0]


def test_packaged_gae_is_the_definition():
    for _, rewards, values, dones, last, gamma, lam in lesson_07.cases():
        want = lesson_07.reference_advantages(rewards, values, dones, last, gamma, lam)
        torch.testing.assert_close(good_advantages(rewards, values, dones, last, gamma, lam),
                                   want.float(), rtol=1e-5, atol=1e-5)


def test_lesson_07_checker(capsys):
    assert lesson_07.check_advantages(good_advantages)
    assert not lesson_07.check_advantages(None)
    assert not lesson_07.check_advantages(lambda *a: None)
    assert not lesson_07.check_advantages(no_done_mask)
    assert "end mid-rollout" in capsys.readouterr().out
    assert not lesson_07.check_advantages(forward_in_time)
    assert not lesson_07.check_advantages(lambda *a: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_lesson_08_checker(capsys):
    from wd_teach.exercises import lesson_08
    from wd_teach.train.lightning import pl

    class StopAtReturn(pl.Callback):
        def __init__(self, key, target):
            self.key, self.target = key, target

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            value = trainer.callback_metrics.get(self.key)
            if value is not None and float(value) >= self.target:
                trainer.should_stop = True

    class StopAbove(StopAtReturn):  # > instead of >=: misses "exactly the target"
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            value = trainer.callback_metrics.get(self.key)
            if value is not None and float(value) > self.target:
                trainer.should_stop = True

    class NeverStops(pl.Callback):
        def __init__(self, key, target):
            pass

    assert lesson_08.check_stop_at_return(StopAtReturn)
    assert not lesson_08.check_stop_at_return(StopAbove)
    assert "exactly the target" in capsys.readouterr().out
    assert not lesson_08.check_stop_at_return(NeverStops)
    assert "should stop after step 6" in capsys.readouterr().out
    assert not lesson_08.check_stop_at_return(None)
