"""A catalogue of bad input: each row is one thing a learner may get wrong, the error class
it must raise and the words its message must hold. None may fail inside numpy, torch or
numba, crash with a bare traceback, or be accepted silently.

Below the catalogue: a failed call leaves the store as it was, two threads may launch
simulated kernels at once, and `wd-teach doctor` runs without Numba.
"""

import math
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from numba import cuda

from wd_teach import (
    ConfigError,
    DataStore,
    KernelLauncher,
    LaunchError,
    MissingPieceError,
    ProbabilityError,
    ResetError,
    Resetter,
    Sampler,
    SamplerError,
    StoreError,
    default_device,
    discover,
    gpu_available,
    launch_geometry,
)
from wd_teach.cli import main
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError, TrainError
from wd_teach.lessons.demo import move
from wd_teach.numba_index import agent_id, env_id
from wd_teach.train.config import load_config
from wd_teach.train.trainer import Trainer
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.pendulum import Pendulum
from wd_teach_envs.tag_continuous import TagContinuous
from wd_teach_envs.tag_grid import TagGrid

ROOT = Path(__file__).resolve().parents[1]


# -- small things to break --------------------------------------------------------------------


def store(num_envs=2, num_agents=3) -> DataStore:
    return DataStore(num_envs, num_agents)


def moving_store() -> DataStore:
    """What the demo kernel `move` reads: pos, vel, dt, num_agents."""
    s = store()
    s.push("pos", np.zeros((2, 3), np.float32), reset=True)
    s.push("vel", np.ones((2, 3), np.float32))
    s.set_constant("dt", 0.1)
    return s


def launcher(s=None) -> KernelLauncher:
    found = KernelLauncher(s or moving_store(), "numba")
    found.load(move)
    return found


@cuda.jit
def move_by_dt0(pos, vel, dt, num_agents):
    """`move`, reading the constant dt as if it were an array."""
    env = env_id()
    agent = agent_id()
    if agent < num_agents:
        pos[env, agent] += vel[env, agent] * dt[0]


def indexing_launcher() -> KernelLauncher:
    found = KernelLauncher(moving_store(), "numba")
    found.load(move_by_dt0)
    return found


def with_one(value) -> np.ndarray:
    """[2 envs, 3 agents] of zeros, with `value` at env 1, agent 2."""
    array = np.zeros((2, 3), np.float32)
    array[1, 2] = value
    return array


def sampler(num_actions=3) -> Sampler:
    return Sampler(store(), num_actions, backend="numba")


def probs(rows=None, actions=3) -> torch.Tensor:
    """[2 envs, 3 agents, actions] uniform, with `rows` laid over env 0, agent 0."""
    p = torch.full((2, 3, actions), 1.0 / actions, device=default_device())  # the store's
    if rows is not None:
        p[0, 0] = torch.tensor(rows, dtype=torch.float32)
    return p


def wrapper(env) -> EnvWrapper:
    return EnvWrapper(env, 2, "numpy")


def cartpole_actions(values, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype).reshape(2, 1)


def config(*sets, env="cartpole"):
    return load_config(env, sets=list(sets), gpu=False)


def trainer(*sets, env="cartpole"):
    return Trainer(env, sets=list(sets), gpu=False)


def cli(capsys, *argv):
    """Run the command; return its exit code and what it printed to stderr."""
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


# -- the catalogue ----------------------------------------------------------------------------
# (id, call, error class, regex of its message)

NAN, INF = math.nan, math.inf

CASES = [
    # the store
    ("store: num_envs 0", lambda: DataStore(0, 3), StoreError,
     r"num_envs must be a positive whole number, got 0"),
    ("store: num_agents float", lambda: DataStore(2, 1.5), StoreError,
     r"num_agents must be a positive whole number, got 1.5"),
    ("store: num_envs beyond int32", lambda: DataStore(2**31, 1), StoreError,
     r"num_envs=2147483648 does not fit the int32"),
    ("store: float64 array", lambda: store().push("x", np.zeros((2, 3))), StoreError,
     r"'x' has dtype float64.*astype\(np.float32\)"),
    ("store: int64 array", lambda: store().push("x", np.zeros((2, 3), np.int64)), StoreError,
     r"'x' has dtype int64.*astype\(np.int32\)"),
    ("store: wrong leading shape", lambda: store().push("x", np.zeros((3, 2), np.float32)),
     StoreError, r"'x' has shape \(3, 2\), but per='agent' arrays start with"),
    ("store: unknown layout", lambda: store().push("x", np.zeros(2, np.float32), per="world"),
     StoreError, r"per='world' for 'x': choose one of env, agent, shared"),
    ("store: bad name", lambda: store().push("my-x", np.zeros((2, 3), np.float32)),
     StoreError, r"'my-x' is not a valid name"),
    ("store: keyword name", lambda: store().push("class", np.zeros((2, 3), np.float32)),
     StoreError, r"'class' is not a valid name"),
    ("store: name twice", lambda: moving_store().push("pos", np.zeros((2, 3), np.float32)),
     StoreError, r"'pos' is already in the store"),
    ("store: a list, not an array", lambda: store().push("x", [[0.0] * 3] * 2), StoreError,
     r"'x' must be a numpy array or a torch tensor, got list"),
    ("store: a scalar array", lambda: store().push("x", np.float32(1)), StoreError,
     r"'x' is a single number"),
    ("store: empty array", lambda: store().push("x", np.zeros(0, np.float32), per="shared"),
     StoreError, r"'x' has shape \(0,\): arrays need at least one element"),
    ("store: strided array",
     lambda: store().push("x", np.zeros((2, 6), np.float32)[:, ::2]), StoreError,
     r"'x' is not C-contiguous"),
    ("store: float64 tensor", lambda: store().push("x", torch.zeros(2, 3, dtype=torch.float64)),
     StoreError, r"'x' has dtype torch.float64"),
    ("store: NaN constant", lambda: store().set_constant("k", NAN), StoreError,
     r"constant 'k' is nan: constants must be finite"),
    ("store: constant beyond int32", lambda: store().set_constant("k", 2**40), StoreError,
     r"constant 'k'=1099511627776 does not fit in int32"),
    ("store: bool constant", lambda: store().set_constant("k", True), StoreError,
     r"constant 'k' must be an int or a float, got True"),
    ("store: NaN in an array", lambda: store().push("x", with_one(NAN)), StoreError,
     r"'x' holds 1 NaN or infinite values \(the first, nan, at index \(1, 2\)\).*"
     r"np.isfinite shows where.*allow_nonfinite=True if they are meant"),
    ("store: infinity in a tensor", lambda: store().push("x", torch.from_numpy(with_one(INF))),
     StoreError, r"'x' holds 1 NaN or infinite values \(the first, inf"),
    ("store: NaN in an array kept for resets",
     lambda: store().push("x", with_one(-INF), reset=True), StoreError,
     r"'x' holds 1 NaN or infinite values \(the first, -inf"),
    ("store: unknown array", lambda: store()["nope"], StoreError,
     r"no array named 'nope' in the store"),
    ("store: a constant read as an array", lambda: moving_store()["dt"], StoreError,
     r"no array named 'dt'.*It is a constant"),
    ("store: pristine without reset", lambda: moving_store().pristine("vel"), StoreError,
     r"'vel' was pushed without reset=True"),
    # the launcher
    ("launcher: not a store", lambda: KernelLauncher({}, "numba"), LaunchError,
     r"KernelLauncher needs a DataStore, got dict"),
    ("launcher: unknown backend", lambda: KernelLauncher(store(), "cupy"), MissingPieceError,
     r"unknown backend 'cupy'"),
    ("launcher: pycuda without a GPU", lambda: KernelLauncher(store(), "pycuda"),
     MissingPieceError, r"the pycuda backend runs CUDA C on an NVIDIA GPU"),
    ("launcher: 0 threads per block", lambda: KernelLauncher(store(), "numba", max_threads=0),
     LaunchError, r"threads per block must be between 1 and 1024, got 0"),
    ("launcher: too many agents for a grid", lambda: launch_geometry(1, 2**27),
     LaunchError, r"134,217,728 agents per environment need .* Use fewer agents"),
    ("launcher: CUDA C to numba", lambda: KernelLauncher(store(), "numba").load("k.cu"),
     LaunchError, r"the numba backend loads @cuda.jit kernels"),
    ("launcher: a plain function", lambda: KernelLauncher(store(), "numba").load(print),
     LaunchError, r"is not a Numba kernel: decorate it with @cuda.jit"),
    ("launcher: nothing to load", lambda: KernelLauncher(store(), "numba").load({}),
     LaunchError, r"no kernels found to load"),
    ("launcher: no such .py", lambda: KernelLauncher(store(), "numba").load("missing.py"),
     LaunchError, r"no Python file at missing.py"),
    ("launcher: unknown kernel", lambda: launcher().launch("jump"), LaunchError,
     r"no kernel named 'jump' is loaded. Loaded: move"),
    ("launcher: argument missing from the store",
     lambda: launcher(store()).launch("move"), LaunchError,
     r"kernel 'move' needs 'pos', but the store has no array or constant"),
    ("launcher: wrong number of names", lambda: launcher().launch("move", "pos"), LaunchError,
     r"kernel 'move' takes 4 arguments, 1 were named"),
    ("launcher: a constant indexed in the kernel",
     lambda: indexing_launcher().launch("move_by_dt0"), LaunchError,
     r"kernel 'move_by_dt0' indexes its parameter 'dt' \(dt\[...\]\), but 'dt' is a "
     r"constant in the store, a single number \(0.1\).*Read it as plain `dt`"),
    # the sampler
    ("sampler: not a store", lambda: Sampler([], 3, backend="numba"), SamplerError,
     r"Sampler needs a DataStore, got list"),
    ("sampler: 0 actions", lambda: Sampler(store(), 0, backend="numba"), SamplerError,
     r"each head needs a whole number of actions, at least 1"),
    ("sampler: no heads", lambda: Sampler(store(), [], backend="numba"), SamplerError,
     r"num_actions is empty"),
    ("sampler: negative seed", lambda: Sampler(store(), 3, backend="numba", seed=-1),
     SamplerError, r"a seed must lie in \[0, 2\*\*64\), got -1"),
    ("sampler: float seed", lambda: Sampler(store(), 3, backend="numba", seed=1.5),
     SamplerError, r"a seed must be a whole number, got 1.5"),
    ("sampler: NaN tolerance", lambda: Sampler(store(), 3, backend="numba", tolerance=NAN),
     SamplerError, r"tolerance must be a positive number, got nan"),
    ("sampler: a second sampler", lambda: Sampler(sampler().store, 3, backend="numba"),
     SamplerError, r"the store already has 'probs'"),
    ("sampler: numpy probabilities", lambda: sampler().sample(probs().cpu().numpy()), SamplerError,
     r"probabilities must be a torch tensor"),
    ("sampler: float64 probabilities", lambda: sampler().sample(probs().double()),
     SamplerError, r"probabilities are torch.float64; the kernel reads float32"),
    ("sampler: wrong shape", lambda: sampler().sample(probs(actions=4)), SamplerError,
     r"probabilities have shape \(2, 3, 4\); want .* = \(2, 3, 3\)"),
    ("sampler: negative probability", lambda: sampler().sample(probs([1.5, -0.5, 0.0])),
     ProbabilityError, r"env 0, agent 0, head 0 hold a negative value \(-0.5\)"),
    ("sampler: NaN probability", lambda: sampler().sample(probs([NAN, 0.5, 0.5])),
     ProbabilityError, r"env 0, agent 0, head 0 hold NaN or infinity"),
    ("sampler: row not summing to 1", lambda: sampler().sample(probs([0.5, 0.4, 0.3])),
     ProbabilityError, r"env 0, agent 0, head 0 sum to 1.2, not 1"),
    ("sampler: all zeros", lambda: sampler().sample(probs([0.0, 0.0, 0.0])),
     ProbabilityError, r"env 0, agent 0, head 0 sum to 0, not 1"),
    ("sampler: one tensor for two heads", lambda: sampler([2, 3]).sample(probs()),
     SamplerError, r"this sampler has 2 heads: pass a list of 2 tensors"),
    # reset
    ("reset: not a store", lambda: Resetter(None), ResetError,
     r"Resetter needs a DataStore, got NoneType"),
    ("reset: unknown array", lambda: Resetter(moving_store(), ["speed"], backend="numba"),
     ResetError, r"no array named 'speed' to reset"),
    ("reset: array without pristine copy",
     lambda: Resetter(moving_store(), ["vel"], backend="numba"), ResetError,
     r"'vel' was pushed without reset=True"),
    ("reset: done is a constant", lambda: Resetter(moving_store(), done="dt", backend="numba"),
     ResetError, r"'dt' is a constant in the store"),
    ("reset: done flags of the wrong dtype",
     lambda: Resetter(moving_store(), done="vel", backend="numba"), ResetError,
     r"the done flags 'vel' are float32 \(2, 3\) per='agent'"),
    # envs
    ("env: cartpole tau 0", lambda: CartPole(tau=0.0), EnvError, r"tau must be positive"),
    ("env: cartpole NaN mass", lambda: CartPole(mass_cart=NAN), EnvError,
     r"mass_cart must be positive, got nan"),
    ("env: pendulum episode_length 0", lambda: Pendulum(episode_length=0), EnvError,
     r"episode_length must be at least 1"),
    ("env: tag_continuous no runners", lambda: TagContinuous(num_runners=0), EnvError,
     r"Tag needs at least one runner"),
    ("env: tag_continuous negative distance", lambda: TagContinuous(tagging_distance=-1.0),
     EnvError, r"tagging_distance must be >= 0"),
    ("env: tag_grid grid of 1", lambda: TagGrid(grid_size=1), EnvError, r"grid_size"),
    ("env: cartpole actions of the wrong shape",
     lambda: wrapper(CartPole()).step(torch.zeros(2, 2, dtype=torch.int32)), EnvError,
     r"actions have shape \(2, 2\), but 2 envs of 1 agents"),
    ("env: cartpole float actions",
     lambda: wrapper(CartPole()).step(cartpole_actions([0, 1], torch.float32)), EnvError,
     r"actions are torch.float32, but the kernels read integers"),
    ("env: cartpole action out of range",
     lambda: wrapper(CartPole()).step(cartpole_actions([0, 2])), EnvError,
     r"action 2 of env 1, agent 0 is out of range: has 2 actions, 0 to 1"),
    ("env: pendulum NaN action",
     lambda: wrapper(Pendulum()).step(torch.full((2, 1, 1), NAN)), EnvError,
     r"action nan of env 0, agent 0 is outside"),
    ("env: wrapper num_envs a string", lambda: EnvWrapper(CartPole(), "4", "numpy"), EnvError,
     r"EnvWrapper: num_envs must be a whole number in \[1, 2\*\*31\), got '4'"),
    ("env: wrapper num_envs 0", lambda: EnvWrapper(CartPole(), 0, "numpy"), EnvError,
     r"EnvWrapper: num_envs must be a whole number in \[1, 2\*\*31\), got 0"),
    ("env: wrapper num_envs a float", lambda: EnvWrapper(CartPole(), 2.0, "numpy"), EnvError,
     r"EnvWrapper: num_envs must be a whole number in \[1, 2\*\*31\), got 2.0"),
    ("env: wrapper seed -1", lambda: EnvWrapper(CartPole(), 2, "numpy", seed=-1), EnvError,
     r"EnvWrapper: seed must be a whole number in \[0, 2\*\*64\), got -1"),
    ("env: wrapper seed a string", lambda: EnvWrapper(CartPole(), 2, "numpy", seed="1"),
     EnvError, r"EnvWrapper: seed must be a whole number in \[0, 2\*\*64\), got '1'"),
    ("env: wrapper max_threads 2000",
     lambda: EnvWrapper(CartPole(), 2, "numpy", max_threads=2000), EnvError,
     r"EnvWrapper: max_threads must be a whole number in \[1, 1025\), got 2000"),
    ("env: actions as a list", lambda: wrapper(CartPole()).step([[0], [1]]), EnvError,
     r"actions must be a torch tensor or a numpy array, got list"),
    # config and the trainer
    ("config: lr inf", lambda: config("trainer.lr=.inf"), ConfigError,
     r"trainer.lr must be a finite number in \(0, inf\), got inf"),
    ("config: lr NaN", lambda: config("trainer.lr=.nan"), ConfigError,
     r"trainer.lr must be a finite number in \(0, inf\), got nan"),
    ("config: lr 0", lambda: config("trainer.lr=0"), ConfigError,
     r"trainer.lr must be a finite number in \(0, inf\), got 0.0"),
    ("config: policy lr negative", lambda: config("policies.cart.lr=-1e-3"), ConfigError,
     r"policies.cart.lr must be a finite number in \(0, inf\), got -0.001"),
    ("config: gamma 5", lambda: config("algorithm.gamma=5"), ConfigError,
     r"algorithm.gamma must be a finite number in \(0, 1\], got 5.0"),
    ("config: gamma 0", lambda: config("algorithm.gamma=0"), ConfigError,
     r"algorithm.gamma must be a finite number in \(0, 1\], got 0.0"),
    ("config: gae_lambda 1.5", lambda: config("algorithm.gae_lambda=1.5"), ConfigError,
     r"algorithm.gae_lambda must be a finite number in \[0, 1\], got 1.5"),
    ("config: clip_coef -1", lambda: config("algorithm.clip_coef=-1"), ConfigError,
     r"algorithm.clip_coef must be a finite number in \(0, inf\), got -1.0"),
    ("config: epochs 0", lambda: config("algorithm.epochs=0"), ConfigError,
     r"algorithm.epochs must be a whole number in \[1, inf\), got 0"),
    ("config: num_minibatches 0", lambda: config("algorithm.num_minibatches=0"), ConfigError,
     r"algorithm.num_minibatches must be a whole number in \[1, inf\), got 0"),
    ("config: entropy_coef NaN", lambda: config("algorithm.entropy_coef=.nan"), ConfigError,
     r"algorithm.entropy_coef must be a finite number in \[0, inf\), got nan"),
    ("config: value_coef -1", lambda: config("algorithm.value_coef=-1"), ConfigError,
     r"algorithm.value_coef must be a finite number in \[0, inf\), got -1.0"),
    ("config: a2c gamma NaN", lambda: config("algorithm.name=a2c", "algorithm.gamma=.nan"),
     ConfigError, r"algorithm.gamma must be a finite number in \(0, 1\], got nan"),
    ("config: ddpg tau 0", lambda: config("algorithm.tau=0", env="pendulum"), ConfigError,
     r"algorithm.tau must be a finite number in \(0, 1\], got 0.0"),
    ("config: ddpg negative noise", lambda: config("algorithm.noise_sigma=-0.1",
                                                   env="pendulum"), ConfigError,
     r"algorithm.noise_sigma must be a finite number in \[0, inf\), got -0.1"),
    ("config: ddpg batch_size 0", lambda: config("algorithm.batch_size=0", env="pendulum"),
     ConfigError, r"algorithm.batch_size must be a whole number in \[1, inf\), got 0"),
    ("config: ddpg replay_size 0", lambda: config("algorithm.replay_size=0", env="pendulum"),
     ConfigError, r"algorithm.replay_size must be a whole number in \[1, inf\), got 0"),
    ("config: seed -1", lambda: config("trainer.seed=-1"), ConfigError,
     r"trainer.seed must be a whole number in \[0, 2\*\*32\), got -1"),
    ("config: seed 2**70", lambda: config(f"trainer.seed={2**70}"), ConfigError,
     r"trainer.seed must be a whole number in \[0, 2\*\*32\), got 1180591620717411303424"),
    ("config: steps 0", lambda: config("trainer.steps=0"), ConfigError,
     r"trainer.steps must be a whole number in \[1, 2\*\*31\), got 0"),
    ("config: num_envs 0", lambda: config("env.num_envs=0"), ConfigError,
     r"env.num_envs must be a whole number in \[1, 2\*\*31\), got 0"),
    ("config: num_envs beyond int32", lambda: config(f"env.num_envs={2**31}"), ConfigError,
     r"env.num_envs must be a whole number in \[1, 2\*\*31\), got 2147483648"),
    ("config: unknown key", lambda: config("trainer.lrr=1"), ConfigError,
     r"unknown key 'trainer.lrr'.*Did you mean 'trainer.lr'"),
    ("config: wrong type", lambda: config("trainer.steps=many"), ConfigError,
     r"trainer.steps must be a whole number, got 'many'"),
    ("config: logger foo", lambda: config("trainer.logger=foo"), ConfigError,
     r"trainer.logger must be one of csv, tensorboard, got 'foo'"),
    ("config: logger not a string", lambda: config("trainer.logger=1"), ConfigError,
     r"trainer.logger must be a string, got 1"),
    ("config: not a mapping", lambda: load_config(42), ConfigError,
     r"a config is an env name, a YAML path, a dict or a TrainConfig; got int"),
    ("config: unknown env", lambda: load_config("snake"), ConfigError,
     r"no config file at snake"),
    ("trainer: more minibatches than samples",
     lambda: trainer("algorithm.num_minibatches=100000"), ConfigError,
     r"algorithm.num_minibatches=100000 is more than the 1,024 samples"),
    ("trainer: too many agents for the device",
     lambda: trainer("env.params.num_runners=70000000", "env.num_envs=1",
                     env="tag_continuous"), ConfigError,
     r"env.num_envs=1 with 70,000,002 agents each does not fit the device"),
    ("trainer: env param out of range", lambda: trainer("env.params.tau=.nan"), ConfigError,
     r"env.params: tau must be positive, got nan"),
    ("trainer: logger foo", lambda: Trainer("cartpole", gpu=False, logger="foo"), ConfigError,
     r"trainer.logger must be one of csv, tensorboard, got 'foo'"),
    ("trainer: evaluate no envs", lambda: trainer().evaluate(num_envs=0), TrainError,
     r"evaluate: num_envs must be a whole number in \[1, 2\*\*31\), got 0"),
    ("trainer: evaluate no steps", lambda: trainer().evaluate(steps=0), TrainError,
     r"evaluate: steps must be a whole number in \[1, 2\*\*31\), got 0"),
    ("trainer: evaluate num_envs a string", lambda: trainer().evaluate(num_envs="8"),
     TrainError, r"evaluate: num_envs must be a whole number in \[1, 2\*\*31\), got '8'"),
    ("trainer: evaluate seed -1", lambda: trainer().evaluate(seed=-1), TrainError,
     r"evaluate: seed must be a whole number in \[0, 2\*\*64\), got -1"),
    ("trainer: tensorboard without a run folder",
     lambda: trainer("trainer.logger=tensorboard").train(1, progress=False), TrainError,
     r"logger='tensorboard' writes its event files into the run's folder: give one"),
]


#: Cases whose message is what a machine without a GPU says (a GPU machine runs PyCUDA).
WITHOUT_A_GPU = {"launcher: pycuda without a GPU", "cli: demo on pycuda"}


def as_params(cases):
    """pytest params named by each case's first item; the no-GPU ones skip on a GPU."""
    no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the message on a machine "
                                "without a GPU; here PyCUDA runs")
    return [pytest.param(*case[1:], id=case[0],
                         marks=[no_gpu] if case[0] in WITHOUT_A_GPU else [])
            for case in cases]


@pytest.mark.parametrize("call, error, message", as_params(CASES))
def test_bad_input_is_refused_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


CLI_CASES = [
    ("cli: train lr NaN", ["train", "cartpole", "--set", "trainer.lr=.nan"],
     r"wd-teach: trainer.lr must be a finite number in \(0, inf\), got nan"),
    ("cli: train unknown env", ["train", "snake"], r"wd-teach: no config file at snake"),
    ("cli: train --set without =", ["train", "cartpole", "--set", "trainer.lr"],
     r"wd-teach: --set takes key=value"),
    ("cli: train --seed -1", ["train", "cartpole", "--seed", "-1"],
     r"wd-teach: trainer.seed must be a whole number in \[0, 2\*\*32\), got -1"),
    ("cli: train logger foo by --set", ["train", "cartpole", "--set", "trainer.logger=foo"],
     r"wd-teach: trainer.logger must be one of csv, tensorboard, got 'foo'"),
    ("cli: demo on pycuda", ["demo", "--backend", "pycuda"],
     r"wd-teach: the pycuda backend runs CUDA C on an NVIDIA GPU"),
]


@pytest.mark.parametrize("argv, message", as_params(CLI_CASES))
def test_bad_command_lines_exit_2_with_a_message(capsys, argv, message):
    code, err = cli(capsys, *argv)
    assert code == 2
    assert re.search(message, err), err


@pytest.mark.parametrize("argv, message", [
    (["train", "cartpole", "--envs", "0"], r"takes a positive whole number or 'auto'"),
    (["demo", "--backend", "cupy"], r"invalid choice: 'cupy'"),
    (["demo", "--steps", "-1"], r"--steps: takes a positive whole number of steps to time, "
                                r"got '-1'; leave it out for 20"),
    (["demo", "--steps", "0"], r"--steps: takes a positive whole number of steps"),
    (["train", "cartpole", "--logger", "foo"],
     r"--logger: invalid choice: 'foo' \(choose from '?csv'?, '?tensorboard'?\)"),
])
def test_argparse_refuses_with_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)


# -- an --out that cannot hold a run ---------------------------------------------------------


def a_file(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    return tmp_path / "notes.txt"


def under_a_file(tmp_path):
    return a_file(tmp_path) / "run"


def a_broken_link(tmp_path):
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    return tmp_path / "gone" / "run"


def a_read_only_folder(tmp_path):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o500)
    return tmp_path / "locked" / "run"


@pytest.mark.parametrize("make_out, message", [
    (a_file, r"--out .*notes.txt is a file, not a folder: a run writes several files into a "
             r"folder"),
    (under_a_file, r"--out .*notes.txt/run lies under .*notes.txt, which is a file, not a "
                   r"folder.*Give a path whose parents are folders"),
    (a_broken_link, r"--out .*gone/run lies under .*gone, which is a broken link"),
    (a_read_only_folder, r"--out .*locked/run: .*locked, where it would be made, cannot be "
                         r"written by this user. Give a folder you may write to"),
])
def test_train_refuses_an_out_that_cannot_hold_a_run(capsys, monkeypatch, tmp_path, make_out,
                                                     message):
    """Refused with exit 2 and a sentence, before anything is written (before: a traceback
    from pathlib, FileExistsError or NotADirectoryError, after the config was written)."""
    out = make_out(tmp_path)
    if os.geteuid() == 0:  # root may write anywhere: answer as the folder's mode says
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode: real_access(path, mode) and (
            os.stat(path).st_mode & 0o200 != 0 or not mode & os.W_OK))
    before = sorted(tmp_path.rglob("*"))
    code, err = cli(capsys, "train", "cartpole", "--iterations", "1", "--quiet",
                    "--out", str(out))
    assert code == 2
    assert re.search(message, err), err
    assert sorted(tmp_path.rglob("*")) == before


def test_resume_refuses_an_out_under_a_file(capsys, tmp_path):
    run = tmp_path / "run"
    assert main(["train", "cartpole", "--iterations", "1", "--quiet", "--set",
                 "trainer.steps=4", "--envs", "2", "--set", "algorithm.num_minibatches=1",
                 "--out", str(run)]) == 0
    capsys.readouterr()
    code, err = cli(capsys, "train", "cartpole", "--resume", str(run), "--out",
                    str(under_a_file(tmp_path)))
    assert code == 2
    assert re.search(r"--out .*notes.txt/run lies under .*notes.txt, which is a file", err), err


# -- NaN and infinity in the store, when they are meant ------------------------------------------


def test_nonfinite_values_go_in_when_the_caller_says_so():
    s = store()
    s.push("nearest", with_one(INF), allow_nonfinite=True)
    s.push("unknown", torch.from_numpy(with_one(NAN)), allow_nonfinite=True)
    assert math.isinf(s.pull("nearest")[1, 2]) and math.isnan(s.pull("unknown")[1, 2])


class CartPoleWithADistance(CartPole):
    """CartPole and one array that starts at infinity on purpose: no distance seen yet."""

    def initial_state(self, num_envs, rng):
        from wd_teach.env import StateArray

        state = super().initial_state(num_envs, rng)
        state["nearest"] = StateArray(np.full((num_envs, 1), np.inf, np.float32),
                                      allow_nonfinite=True)
        return state


def test_an_env_declares_the_arrays_that_mean_infinity():
    wrapper = EnvWrapper(CartPoleWithADistance(), 2, "numpy")
    assert torch.isinf(wrapper.store["nearest"]).all()
    wrapper.step(cartpole_actions([0, 1]))  # the rest of the env is untouched


# -- a failed call leaves the store as it was ------------------------------------------------


def test_a_failed_bind_does_not_freeze_the_store():
    s = store()
    s.push("pos", np.zeros((2, 3), np.float32))
    s.push("vel", np.ones((2, 3), np.float32))
    kernels = launcher(s)
    with pytest.raises(LaunchError, match="kernel 'move' needs 'dt'"):
        kernels.launch("move")
    assert not s.frozen
    s.set_constant("dt", 0.5)  # the missing constant can still be added ...
    kernels.launch("move")  # ... and then the launch works
    np.testing.assert_allclose(s.pull("pos"), 0.5)
    assert s.frozen


def test_a_failed_resetter_leaves_nothing_in_the_store():
    s = moving_store()
    s.set_constant("pos_row_length", 7)  # clashes with the Resetter's own constant
    before = (s.names, s.constants)
    with pytest.raises(ResetError, match="'pos_row_length' is 7, but a row of 'pos' holds 3"):
        Resetter(s, backend="numba")
    assert (s.names, s.constants) == before  # no 'done', no 'pos_pristine'


def test_a_failed_sampler_leaves_nothing_in_the_store(monkeypatch):
    s = store()
    before = (s.names, s.constants)

    def broken_load(self, kernels):
        raise LaunchError("no kernels found to load (broken on purpose)")

    monkeypatch.setattr(KernelLauncher, "load", broken_load)
    with pytest.raises(LaunchError, match="broken on purpose"):
        Sampler(s, 3, backend="numba")
    assert (s.names, s.constants) == before
    monkeypatch.undo()
    Sampler(s, 3, backend="numba")  # the names are free: a new sampler fits


# -- two threads launching simulated kernels --------------------------------------------------


def test_two_threads_launch_simulated_kernels_at_once():
    errors = []

    def work(speed):
        try:
            s = store()
            s.push("pos", np.zeros((2, 3), np.float32))
            s.push("vel", np.full((2, 3), speed, np.float32))
            s.set_constant("dt", 1.0)
            kernels = launcher(s)
            for _ in range(10):
                kernels.launch("move")
            np.testing.assert_allclose(s.pull("pos"), 10 * speed)
        except Exception as err:  # noqa: BLE001 - collected, shown by the assert
            errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(speed,)) for speed in (1.0, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# -- wd-teach doctor without Numba, without CUDA ---------------------------------------------


def run_cli(*argv, pythonpath=None):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "wd_teach.cli", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_doctor_runs_without_numba(tmp_path):
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text(textwrap.dedent("""
        raise ImportError("No module named 'numba' (hidden by the test)")
    """))
    result = run_cli("doctor", pythonpath=tmp_path)
    left = [b for b in discover().backends if b != "numba"]  # PyCUDA, on a GPU machine
    # documented: 0 when some backend can run, 1 when none can
    assert result.returncode == (0 if left else 1), result.stderr
    assert "Traceback" not in result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("Numba CUDA"))
    assert " NO " in row and "hidden by the test" in row
    assert 'pip install "numba-cuda>=0.30,<0.31"' in row
    assert f"backends that can run here: {', '.join(left) or 'none'}" in result.stdout

    demo = run_cli("demo", "--backend", "numba", pythonpath=tmp_path)
    assert demo.returncode == 2
    assert 'wd-teach: the numba backend needs numba-cuda' in demo.stderr
    assert "Traceback" not in demo.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a torch without CUDA")
def test_doctor_runs_with_a_torch_without_cuda():
    result = run_cli("doctor")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("torch"))
    assert "CPU build" in row
