"""Checker for 08_lightning: a Lightning callback that stops training at a target return.

The learner writes `StopAtReturn(key, target)`, a Lightning Callback whose
`on_train_batch_end` sets `trainer.should_stop = True` once the logged metric `key` (in
`trainer.callback_metrics`) reaches `target`. The checker runs it with a small stand-in
module whose training steps log a scripted series of returns (NaN where no episode ended,
as in a real run) and works out by itself at which step the run should stop: the first one
whose return is at least the target. Lightning runs on the CPU here; no env is needed.
"""

from __future__ import annotations

import math
import warnings

import torch

from wd_teach.exercises.verdict import verdict_of
from wd_teach.train.lightning import pl

#: (what the case tries, the returns logged step by step, the target).
CASES = [
    ("a return that climbs past the target", [10, 40, 80, 130, 200, 260, 300, 320], 250),
    ("NaN where no episode ended, then exactly the target",
     [float("nan"), 50, float("nan"), 120, 150, 150, 90], 150),
    ("a target never reached: the run goes to its end", [1, 2, 3, 4], 100),
]


class ScriptedReturns(pl.LightningModule):
    """Logs `returns[step]` under `key` at each training step; learns nothing."""

    def __init__(self, key: str, returns: list[float]):
        super().__init__()
        self.key, self.returns = key, returns
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.steps = 0
        self.automatic_optimization = False

    def train_dataloader(self):
        return torch.utils.data.DataLoader(list(range(len(self.returns))), batch_size=None)

    def training_step(self, batch, batch_idx):
        self.log(self.key, float(self.returns[batch_idx]), on_step=True, batch_size=1)
        self.steps += 1

    def configure_optimizers(self):
        return torch.optim.SGD([self.weight], lr=0.1)


def expected_steps(returns, target) -> int:
    for step, value in enumerate(returns, start=1):
        if not math.isnan(value) and value >= target:
            return step
    return len(returns)


@verdict_of("StopAtReturn")
def check_stop_at_return(callback_class) -> bool:
    if callback_class is None or not isinstance(callback_class, type):
        print("Not yet: write class StopAtReturn(pl.Callback) and pass the class.")
        return False
    key = "cart/return"
    for what, returns, target in CASES:
        module = ScriptedReturns(key, returns)
        try:
            callback = callback_class(key, target)
        except Exception as err:
            print(f"StopAtReturn({key!r}, {target}) raised {type(err).__name__}: {err}")
            return False
        if not isinstance(callback, pl.Callback):
            print("Not yet: StopAtReturn must be a subclass of pl.Callback.")
            return False
        trainer = pl.Trainer(accelerator="cpu", max_epochs=1, callbacks=[callback],
                             logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                trainer.fit(module)
            except Exception as err:
                print(f"Case '{what}': training raised {type(err).__name__}: {err}")
                return False
        want = expected_steps(returns, target)
        if module.steps != want:
            print(f"Case '{what}' (returns {returns}, target {target}): the run took "
                  f"{module.steps} step(s), it should stop after step {want}.")
            print(f"Hint: {_hint(module.steps, want)}")
            return False
    print("All right: your callback stops the run at the first return that reaches the target.")
    return True


def _hint(got: int, want: int) -> str:
    if got > want:
        return ("in on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx), "
                "read trainer.callback_metrics.get(self.key) and set trainer.should_stop = "
                "True when it is >= self.target (a NaN compares False, as it should).")
    return "stop only when the value is at least the target: value >= target, not before."
