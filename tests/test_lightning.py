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


class CountHooks:
    """A callback counting Lightning's per-step hooks."""

    def __init__(self):
        import lightning.pytorch as pl

        counts = self.counts = {"backward": 0, "optimizer_step": 0}

        class Hooks(pl.Callback):
            def on_after_backward(self, trainer, module):
                counts["backward"] += 1

            def on_before_optimizer_step(self, trainer, module, optimizer):
                counts["optimizer_step"] += 1

        self.callback = Hooks()


@pytest.mark.parametrize("step_hooks", [False, True])
def test_lightning_counts_every_optimiser_step_whoever_takes_it(step_hooks, tmp_path):
    """On one device the learners step their own optimisers (so a GPU update stays one
    recorded graph) and the module tells Lightning the count; with step_hooks Lightning's
    wrappers take the steps and its per-step hooks run. Either way global_step is the
    number of optimiser steps and the weights are the plain Trainer's."""
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    module = TrainingModule("cartpole", gpu=False, sets=SMALL, step_hooks=step_hooks)
    hooks = CountHooks()
    trainer = make_lightning_trainer(module, 3, out=tmp_path, progress=False,
                                     callbacks=[hooks.callback])
    trainer.fit(module)
    c = module.run.config.algorithm
    steps = 3 * c.epochs * c.num_minibatches
    assert module.handed_over is step_hooks
    assert trainer.global_step == steps
    assert hooks.counts == ({"backward": steps, "optimizer_step": steps} if step_hooks
                            else {"backward": 0, "optimizer_step": 0})
    plain = Trainer("cartpole", gpu=False, sets=SMALL)
    plain.train(3, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(weights(plain), weights(module.run),
                                                  strict=True))
    assert (tmp_path / "lightning.ckpt").is_file()


def test_a_replayed_update_counts_the_steps_of_its_recording():
    """A replay runs no Python, so no hook counts its steps: it took the recording's."""
    from wd_teach.train.lightning import StepCounter

    first, second = (torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
                     for _ in range(2))
    counter = StepCounter([first, second])
    for _ in range(3):
        first.step()
    second.step()
    assert counter.pull(replayed=False) == [3, 1]  # step by step: what the hooks saw
    first.step()
    assert counter.pull(replayed=True) == [1, 0]  # the recording's Python ran: counted
    assert counter.pull(replayed=True) == [1, 0]  # a replay: the recording's count again
    assert counter.pull(replayed=False) == [0, 0]  # no update ran at all
    second.step()
    counter.clear()
    assert counter.pull(replayed=False) == [0, 0]


IN_A_KERNEL_WITHOUT_WIDGETS = """
import sys, types, warnings
warnings.simplefilter("always")
# What nbval's kernel looks like to tqdm: IPython's kernel app, and an ipywidgets that is
# installed (found) but cannot draw (its FloatProgress does not import).
class ZMQInteractiveShell:
    config = {"IPKernelApp": {}}
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
sys.modules["IPython"] = types.SimpleNamespace(get_ipython=ZMQInteractiveShell)
import {module}
"""


@pytest.mark.parametrize("module, warns", [("tqdm.auto", True),
                                           ("wd_teach.train.lightning", False)])
def test_lightning_brings_no_iprogress_warning_into_a_lesson(tmp_path, module, warns):
    """Lesson 08 once showed tqdm's "IProgress not found" on red under its first cell. tqdm.auto
    itself still warns in such a kernel (so this test can tell); importing the lesson's
    Lightning module does not."""
    import subprocess
    import sys

    (tmp_path / "ipywidgets").mkdir()
    (tmp_path / "ipywidgets" / "__init__.py").write_text("")
    import os

    # The fake ipywidgets first; then whatever this Python was given (a kit's packages).
    paths = [str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run([sys.executable, "-c", IN_A_KERNEL_WITHOUT_WIDGETS.replace(
        "{module}", module)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert ("IProgress not found" in done.stderr) == warns, done.stderr
