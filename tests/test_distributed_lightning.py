"""The Lightning module on several devices, what can be checked in this process: a bad
number of devices is refused before Lightning starts anything, and several devices take
Lightning's DDP strategy with every rank running all the iterations. (Two processes
training under Lightning's DDP, on the CPU with gloo, are in tests/test_distributed_bench.py:
Lightning starts them by running a script again, which a test process cannot be.)"""

import pytest
import torch

from wd_teach.errors import MissingPieceError, TrainError
from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

SMALL = ["env.num_envs=4", "trainer.steps=8"]


@pytest.fixture(scope="module")
def module():
    return TrainingModule("cartpole", gpu=False, sets=SMALL)


@pytest.mark.parametrize("devices", [0, -2, 1.5, "2"])
def test_a_bad_number_of_devices_is_refused(module, devices):
    with pytest.raises(TrainError, match="at least 1"):
        make_lightning_trainer(module, 2, progress=False, devices=devices)


def test_more_devices_than_gpus_is_refused(module, monkeypatch):
    monkeypatch.setattr(module.run, "device", torch.device("cuda"))  # as if on a GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(MissingPieceError, match="asked for 2 GPUs, this machine has 1"):
        make_lightning_trainer(module, 2, progress=False, devices=2)


def test_several_devices_take_ddp_and_every_rank_runs_every_iteration(module):
    from lightning.pytorch.strategies import DDPStrategy

    trainer = make_lightning_trainer(module, 3, progress=False, devices=2)
    assert isinstance(trainer.strategy, DDPStrategy)
    assert trainer.num_devices == 2 and module.iterations == 3
    # A distributed sampler would give each rank half of the iteration tokens.
    assert trainer._accelerator_connector.use_distributed_sampler is False
    one = make_lightning_trainer(module, 3, progress=False)
    assert not isinstance(one.strategy, DDPStrategy)
