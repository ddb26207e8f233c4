"""A room's per-seat GPU memory limit (wd_teach.seat_memory) on a pretend GPU: the setting
read and refused when it is not a size, what is left of it, torch's allocator capped once,
`--envs auto` fitting inside it, and a run over it refused before any GPU work, in words
that name the limit and what to do. tests/gpu/test_seat_memory_gpu.py checks it on a card."""

import math
from types import SimpleNamespace

import pytest
import torch

import wd_teach.device
from wd_teach import seat_memory
from wd_teach.errors import ConfigError, TooLargeError
from wd_teach.scale import autoscale
from wd_teach.scale.autoscale import fit_num_envs
from wd_teach.seat_memory import ENV_VAR, GIB, free_bytes, limit_bytes, require_room
from wd_teach.train.trainer import Trainer

CARD = (80 * GIB, 80 * GIB)  # (free, total) of a pretend idle 80 GiB card


@pytest.fixture(autouse=True)
def no_limit_yet(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(seat_memory, "_applied", set())
    yield
    # A limit applied to a real GPU holds for the whole process: on a GPU machine the tests
    # that run after these in the same process get the whole card back.
    if torch.cuda.is_available() and seat_memory._applied:
        for device in seat_memory._applied:
            torch.cuda.set_per_process_memory_fraction(1.0, device)


@pytest.fixture
def pretend_gpu(monkeypatch):
    """torch's CUDA calls that the limit uses, answering for an idle 80 GiB card; the
    fractions torch's allocator was given are recorded."""
    fractions = []
    cuda = torch.cuda
    monkeypatch.setattr(cuda, "mem_get_info", lambda device=None: CARD)
    monkeypatch.setattr(cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "get_device_properties",
                        lambda device: SimpleNamespace(total_memory=CARD[1]))
    monkeypatch.setattr(cuda, "set_per_process_memory_fraction",
                        lambda fraction, device=None: fractions.append((fraction, device)))
    return fractions


@pytest.mark.parametrize(("text", "gib"), [("4", 4), (" 2.5 ", 2.5), ("0.5", 0.5)])
def test_the_limit_is_read_in_gib(text, gib):
    assert limit_bytes({ENV_VAR: text}) == int(gib * GIB)


def test_no_setting_is_no_limit():
    assert limit_bytes({}) is None and limit_bytes({ENV_VAR: " "}) is None


@pytest.mark.parametrize("text", ["0", "-1", "four", "4GB", "inf", "nan"])
def test_a_limit_that_is_not_a_size_is_refused_saying_what_it_takes(text):
    with pytest.raises(ConfigError, match=f"{ENV_VAR}='{text}': a seat's GPU memory limit is "
                                          "a number of GiB above 0, e.g. 4"):
        limit_bytes({ENV_VAR: text})


def test_what_is_left_of_the_limit(monkeypatch):
    assert free_bytes("cuda", card=CARD, reserved=GIB) == CARD  # no limit: the card's
    monkeypatch.setenv(ENV_VAR, "4")
    assert free_bytes("cuda", card=CARD, reserved=GIB) == (3 * GIB, 4 * GIB)
    assert free_bytes("cuda", card=(2 * GIB, CARD[1]), reserved=0) == (2 * GIB, 4 * GIB)
    assert free_bytes("cuda", card=CARD, reserved=5 * GIB) == (0, 4 * GIB)


def test_torchs_allocator_is_capped_once_per_device(monkeypatch, pretend_gpu):
    seat_memory.apply("cpu")
    seat_memory.apply("cuda:0")  # no limit: nothing to cap
    assert pretend_gpu == []
    monkeypatch.setattr(seat_memory, "_applied", set())
    monkeypatch.setenv(ENV_VAR, "8")
    seat_memory.apply("cuda:0")
    seat_memory.apply("cuda:0")
    assert pretend_gpu == [(8 / 80, torch.device("cuda:0"))]


def test_envs_auto_fits_inside_the_limit(monkeypatch, pretend_gpu):
    def linear(n):
        return 300 * 2**20 + 2 * 2**20 * n

    monkeypatch.setenv(ENV_VAR, "4")
    fit = fit_num_envs("tag_continuous", measure=linear, gpu=False,
                       free_memory=autoscale.free_gpu_memory)
    assert fit.free_bytes == 4 * GIB and fit.budget_bytes == int(0.8 * 4 * GIB)
    assert fit.num_envs == math.floor((0.8 * 4 * GIB - 300 * 2**20) / (2 * 2**20))
    assert linear(fit.num_envs) <= fit.budget_bytes
    assert pretend_gpu == [(4 / 80, torch.device("cuda:0"))]  # and the allocator is capped


def test_more_than_the_limit_is_refused_naming_it_and_what_to_do(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "2")
    require_room(GIB, "a small run", "cuda", fewer="", card=CARD, reserved=0)
    require_room(100 * GIB, "anything", "cpu", fewer="")  # the limit is the GPU's only
    with pytest.raises(TooLargeError) as refused:
        require_room(3 * GIB, "10,000 envs", "cuda", fewer="Use fewer envs.", card=CARD,
                     reserved=0)
    said = str(refused.value)
    assert "10,000 envs need 3.00 GiB on the GPU, more than the 2.00 GiB left of this seat's " \
           f"GPU memory limit, 2.00 GiB ({ENV_VAR}, set by the room)" in said
    assert "Use fewer envs." in said and "--envs auto" in said


def test_a_trainer_over_the_limit_is_refused_before_any_gpu_work(monkeypatch, pretend_gpu):
    """A cell that asks for 10,000 envs on a seat of 1 GiB: the refusal comes from the size
    checks on the host, before the wrapper makes a store (nothing is pushed)."""
    monkeypatch.setenv(ENV_VAR, "1")
    monkeypatch.setattr(wd_teach.device, "default_device", lambda: torch.device("cuda"))
    pushed = []
    monkeypatch.setattr("wd_teach.data.DataStore.push", lambda *args, **kw: pushed.append(1))
    with pytest.raises(TooLargeError, match=rf"10,000 envs x \d+ agents x \d+ steps .* need "
                                            rf".* GiB left of this seat's GPU memory limit, "
                                            rf"1.00 GiB \({ENV_VAR}"):
        Trainer("tag_continuous", overrides={"env": {"num_envs": 10_000, "backend": "numba"}},
                gpu=True)  # the GPU's config: 110 agents, 100 steps
    assert pushed == [] and pretend_gpu == []


def test_a_run_that_outgrows_the_limit_mid_iteration_is_told_so_and_goes_on(monkeypatch):
    """The host's size checks count the stores, not every tensor of an update: a run they let
    through can still run out of the seat's memory in its first iteration (Tag at its GPU
    config's size on a 3.95 GiB seat, bench/room.py on an H200). Then the learner reads the
    limit and what to ask for, not torch's allocator report, and the run is as it was."""
    monkeypatch.setenv(ENV_VAR, "4")
    trainer = Trainer("cartpole", sets=["env.num_envs=4", "trainer.steps=8"])
    collect = trainer.rollout.collect

    def out_of_memory():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 490.00 MiB. "
                                          "GPU 0 has a total capacity of 139.80 GiB")

    monkeypatch.setattr(trainer.rollout, "collect", out_of_memory)
    with pytest.raises(TooLargeError) as refused:
        trainer.iterate()
    said = str(refused.value)
    assert said.startswith("iteration 1 of cartpole (4 envs, trainer.steps=8) ran out of GPU "
                           "memory: it needs more than this seat's GPU memory limit, 4.00 GiB "
                           f"({ENV_VAR}, set by the room) (CUDA out of memory)")
    assert "fewer envs" in said and "trainer.steps" in said and "--envs auto" in said
    assert "Tried to allocate" not in said  # the allocator's report is torch's, not the fix
    assert trainer.iteration == 0 and trainer.history == []
    monkeypatch.setattr(trainer.rollout, "collect", collect)
    assert trainer.iterate()["iteration"] == 1  # nothing was lost: the run goes on


def test_without_a_limit_running_out_names_the_gpus_free_memory(monkeypatch):
    trainer = Trainer("cartpole", sets=["env.num_envs=4", "trainer.steps=8"])

    def out_of_memory():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(trainer.rollout, "collect", out_of_memory)
    with pytest.raises(TooLargeError, match=r"needs more than the GPU's free memory"):
        trainer.iterate()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path (it stops after "
                    "saying what it would do); tests/gpu/test_seat_memory_gpu.py fits on a GPU")
def test_envs_auto_says_it_measures_within_the_limit(monkeypatch, capsys, tmp_path):
    from wd_teach.cli import main as cli

    monkeypatch.setenv(ENV_VAR, "3")
    assert cli(["train", "tag_continuous", "--envs", "auto", "--out", str(tmp_path)]) == 2
    printed = capsys.readouterr().out  # no GPU here: it stops after saying what it would do
    assert "fit on this GPU within this seat's GPU memory limit, 3.00 GiB" in printed
