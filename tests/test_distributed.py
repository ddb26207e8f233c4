"""Data-parallel training on the CPU: two processes joined by gloo, the NumPy CartPole.

The ranks end with the same weights, which are not those of one process alone (the
gradients really were averaged over different experience); an averaged gradient is the
mean of the ranks' own; the metrics add up; bad world sizes are refused before any process
starts."""

import json
import re

import numpy as np
import pytest
import torch

from wd_teach.cli import main
from wd_teach.errors import MissingPieceError, TrainError
from wd_teach.scale import distributed
from wd_teach.scale.distributed import (
    average_gradients,
    check_world_size,
    scaling_efficiency,
    spawn_ranks,
    train_data_parallel,
    train_rank,
)
from wd_teach.train.algorithms.common import gradient_step
from wd_teach.train.config import load_config
from wd_teach.train.trainer import Trainer

TINY = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2", "trainer.seed=3"]
ITERATIONS = 3
TIMING = ("seconds", "steps_per_second")


def tiny_config():
    return load_config("cartpole", sets=TINY, gpu=False)


@pytest.fixture(scope="module")
def two_ranks():
    """Two CPU processes train the tiny CartPole together; what each hands back."""
    return spawn_ranks(2, train_rank, tiny_config().to_dict(), ITERATIONS, None, False,
                       gpu=False)


def weights_of(trainer):
    return {name: {k: v.detach().clone() for k, v in policy.state_dict().items()}
            for name, policy in trainer.policies.items()}


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for name in a:
        for key in a[name]:
            assert torch.equal(a[name][key], b[name][key]), f"{name}.{key}"


def test_the_ranks_end_with_identical_weights(two_ranks):
    first, second = two_ranks
    assert (first.rank, second.rank) == (0, 1)
    assert first.device == second.device == "cpu"
    assert_same_weights(first.weights, second.weights)


def test_the_weights_differ_from_one_process_with_the_same_seed(two_ranks):
    """Rank 0 has the single run's seed, so the same start and the same own experience:
    only the averaging with rank 1's gradients can make it end elsewhere."""
    alone = Trainer(tiny_config())
    start = weights_of(alone)
    alone.train(ITERATIONS, progress=False)
    ranked = two_ranks[0].weights["cart"]
    assert any(not torch.equal(start["cart"][k], ranked[k]) for k in ranked), "never trained"
    apart = max((alone.policies["cart"].state_dict()[k] - ranked[k]).abs().max().item()
                for k in ranked)
    # Without the averaging rank 0 would be this run, up to rounding (sums in another
    # order, threads per process): about 1e-7. With it, some 1e-2.
    assert apart > 1e-4, "two ranks trained like one process: nothing was averaged"


def test_the_history_is_averaged_and_the_env_steps_summed(two_ranks):
    first, second = two_ranks
    per_rank = 4 * 8  # envs x steps
    assert [row["env_steps"] for row in first.history] == [
        2 * per_rank * (i + 1) for i in range(ITERATIONS)]
    assert [row["iteration"] for row in first.history] == list(range(1, ITERATIONS + 1))
    for mine, theirs in zip(first.history, second.history, strict=True):
        assert mine.keys() == theirs.keys()  # one all-reduce: every rank has the same row
        np.testing.assert_array_equal(list(mine.values()), list(theirs.values()))
    assert all(np.isfinite(row["cart/loss"]) for row in first.history)


def hand_made_step(rank, world_size):
    """One gradient step of a small linear model on this rank's own data, through
    gradient_step with the averaging hook; its own gradient (caught between backward and
    reduce) and how far each weight moved under SGD with lr=1."""
    torch.manual_seed(0)  # the same start on every rank
    model = torch.nn.Linear(3, 2)
    before = [p.detach().clone() for p in model.parameters()]
    data = torch.randn(5, 3, generator=torch.Generator().manual_seed(100 + rank))
    loss = (model(data) ** 2).mean()
    own = []

    def backward(loss):
        loss.backward()
        own.extend(p.grad.clone() for p in model.parameters())

    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    gradient_step(optimizer, loss, model.parameters(), None, backward, average_gradients)
    moved = [b - p.detach() for b, p in zip(before, model.parameters(), strict=True)]
    return own, moved


def test_the_averaged_gradient_is_the_mean_of_the_ranks_gradients():
    (own0, moved0), (own1, moved1) = spawn_ranks(2, hand_made_step, gpu=False)
    assert not torch.allclose(own0[0], own1[0]), "the ranks' data should differ"
    for g0, g1, m0, m1 in zip(own0, own1, moved0, moved1, strict=True):
        mean = (g0 + g1) / 2
        torch.testing.assert_close(m0, mean, rtol=1e-6, atol=1e-7)
        assert torch.equal(m0, m1)  # both ranks took the very same step


def test_one_process_is_the_plain_trainer():
    history = train_data_parallel(tiny_config(), 1, 2, gpu=False, progress=False)
    alone = Trainer(tiny_config())
    alone.train(2, progress=False)
    for mine, theirs in zip(history, alone.history, strict=True):
        keys = [k for k in mine if k not in TIMING]
        assert [mine[k] for k in keys] == pytest.approx([theirs[k] for k in keys],
                                                        nan_ok=True)


def test_scaling_efficiency_writes_its_measurement(tmp_path):
    out = tmp_path / "scaling.json"
    result = scaling_efficiency(tiny_config(), gpus=(1, 2), iterations=3, warmup=1,
                                gpu=False, out=out)
    assert json.loads(out.read_text()) == result
    one, two = result["runs"]
    assert (one["gpus"], two["gpus"]) == (1, 2)
    assert two["env_steps"] == 2 * one["env_steps"] == 2 * 3 * 4 * 8
    assert one["speedup"] == 1.0 and two["target_speedup"] == 1.8
    assert two["speedup"] == pytest.approx(two["env_steps_per_second"]
                                           / one["env_steps_per_second"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)
    assert "speed-up" in distributed.format_scaling(result)


@pytest.mark.parametrize("world_size", [0, -1, 1.5, True, "2"])
def test_a_world_size_below_one_is_refused(world_size):
    with pytest.raises(TrainError, match="at least 1"):
        check_world_size(world_size, gpu=False)


def test_more_gpus_than_the_machine_has_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(MissingPieceError, match="asked for 2 GPUs, this machine has 1.*--gpus 1"):
        check_world_size(2, gpu=True)
    with pytest.raises(MissingPieceError, match="asked for 2 GPUs"):  # before any process
        train_data_parallel(tiny_config(), 2, gpu=True)
    assert check_world_size(1, gpu=True) == 1


def test_the_command_line_refuses_too_many_gpus(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main(["train", "cartpole", "--gpus", "2", "--out", str(tmp_path)]) == 2
    assert "asked for 2 GPUs, this machine has 1" in capsys.readouterr().err
    assert main(["train", "cartpole", "--gpus", "0", "--out", str(tmp_path)]) == 2
    assert "at least 1" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before anything was written


# -- what a rank hands back is read without pickle --------------------------------------------


def test_a_rank_hands_back_plain_data_read_with_weights_only(tmp_path):
    """A RankResult goes to disk as tensors, numbers and strings, and comes back whole from
    torch.load(weights_only=True), which runs no code from the file."""
    result = distributed.RankResult(1, 4, [{"loss": 0.5, "env_steps": 64}],
                                    {"cart": {"w": torch.arange(3.0)}}, "cpu")
    path = tmp_path / "rank1.pt"
    torch.save(distributed.to_plain([result, (np.float32(2.5), None)]), path)
    back, (number, nothing) = distributed.from_plain(torch.load(path, weights_only=True))
    assert (back.rank, back.seed, back.history, back.device) == (1, 4, result.history, "cpu")
    assert torch.equal(back.weights["cart"]["w"], torch.arange(3.0))
    assert (number, nothing) == (2.5, None) and type(number) is float


def test_a_rank_result_that_needs_pickle_is_refused():
    def made_here(rank, world_size):
        return object()

    with pytest.raises(TrainError, match=r"made_here returned a value of type object, which a "
                                         r"rank cannot hand back: results travel as"):
        distributed.to_plain(made_here(0, 1), made_here)


def test_no_pickle_is_loaded_anywhere_in_the_package():
    """A pickle runs code when it is read: the package reads checkpoints and ranks' results
    as safetensors, JSON or torch.load(weights_only=True), and hands a kernel to a fresh
    Python as JSON (exercises/gpu_types.py), never as a pickle."""
    import pathlib

    import wd_teach

    root = pathlib.Path(wd_teach.__file__).parent
    found = [f"{p.relative_to(root)}:{n}" for p in sorted(root.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"weights_only=False|pickle\.loads?\(", line)]
    assert found == []
