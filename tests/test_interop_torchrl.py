"""Every env, shipped or a learner's folder, as a TorchRL env: TorchRL's own spec check
passes, a rollout holds what the EnvWrapper computes (the last observation of an episode,
then the restart), agents are grouped by role, a PPO loss steps on it, and bad input is
refused at the door. Small sizes on the NumPy reference; a few on every backend here (the
Numba simulator on a CPU, both kernel backends on a GPU)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.tag_grid import TagGrid

HAVE_TORCHRL = importlib.util.find_spec("torchrl") is not None
#: Most tests here need TorchRL, an extra (the dev extra brings it).
needs_torchrl = pytest.mark.skipif(not HAVE_TORCHRL, reason='TorchRL is an extra: pip install '
                                   '-e ".[torchrl]" (the dev extra, which CI installs, has it)')
if HAVE_TORCHRL:
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.envs.utils import check_env_specs
    from torchrl.modules import ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss

    from wd_teach.interop.torchrl import TorchRLEnv, _action_spec, agent_groups

REPO = Path(__file__).resolve().parents[1]
#: A learner's env folders: one beside the tests, one that a lesson builds.
LEARNER_FOLDERS = {"huddle": REPO / "tests" / "data" / "huddle",
                   "gather": REPO / "wd_teach" / "exercises" / "gather"}
NUM_ENVS = 3


def small(name):
    """Every env the registry finds, small, with episodes of 2 steps so that the spec
    check's 3-step rollouts cross a restart."""
    env_class = find_env(LEARNER_FOLDERS.get(name, name)).env_class
    if name.startswith("tag"):
        return env_class(num_taggers=2, num_runners=3, num_nearest=2, episode_length=2)
    if name in LEARNER_FOLDERS:
        return env_class(num_agents=3, episode_length=2)
    return env_class(episode_length=2)


ALL_ENVS = [*shipped_envs(), *LEARNER_FOLDERS]


def test_every_shipped_env_and_the_learner_folders_are_checked():
    assert {"cartpole", "pendulum", "tag_grid", "tag_continuous", "huddle"} <= set(ALL_ENVS)


@needs_torchrl
@pytest.mark.parametrize("name", ALL_ENVS)
def test_torchrl_check_env_specs_passes(name):
    env = TorchRLEnv(small(name), NUM_ENVS, "numpy")
    check_env_specs(env, seed=1, break_when_any_done="both")


@needs_torchrl
@pytest.mark.parametrize("name", ["cartpole", "tag_grid", "huddle"])
def test_torchrl_check_env_specs_passes_on_every_backend(name, backend):
    env = TorchRLEnv(small(name), NUM_ENVS, backend)
    assert env.device == env.wrapper.obs.device
    check_env_specs(env, seed=1, break_when_any_done="both")


@needs_torchrl
@pytest.mark.parametrize("name", ["cartpole", "tag_grid", "mountain_car_continuous"])
def test_a_rollout_holds_what_the_wrapper_computes(name, backend):
    """The same actions through TorchRL and through a plain EnvWrapper (which restarts ended
    episodes itself): the same observations, rewards and ends; at an episode's end TorchRL
    sees its last observation, and the next step starts from the restart's."""
    env = TorchRLEnv(small(name), NUM_ENVS, backend, seed=5)
    data = env.rollout(7, break_when_any_done=False)
    plain = EnvWrapper(small(name), NUM_ENVS, backend, seed=5)
    first = plain.obs.clone()
    groups = env.group_map
    gather = lambda td, key: torch.cat([td[g, key] for g in groups], dim=-2)  # noqa: E731
    assert torch.equal(gather(data[:, 0], "observation"), first)
    ends = 0
    for t in range(7):
        actions = torch.cat([data[:, t][g, "action"] for g in groups], dim=1)
        obs, rewards, done, info = plain.step(actions.to(plain.store["actions"].dtype))
        step = data[:, t]["next"]
        assert torch.equal(step["done"][:, 0], done)
        assert torch.equal(step["truncated"][:, 0], info["truncated"])
        assert torch.equal(step["terminated"][:, 0], done & ~info["truncated"])
        assert torch.equal(gather(step, "reward")[..., 0], rewards)
        for g in groups:
            assert torch.equal(step[g, "done"][..., 0], done[:, None].expand(-1, len(groups[g])))
        if t + 1 < 7:  # where it ended, the next step starts from the restart
            assert torch.equal(gather(data[:, t + 1], "observation"), obs)
        ended = done.clone()
        ends += int(ended.sum())
        kept = ~ended
        assert torch.equal(gather(step, "observation")[kept], obs[kept])
        if ended.any():  # the wrapper has restarted them: their start again
            assert torch.equal(obs[ended], first[ended])
    assert ends >= NUM_ENVS  # episodes of 2 steps: every env restarted


@needs_torchrl
@pytest.mark.parametrize("key", ["_reset", ("runners", "_reset")])
def test_a_partial_reset_restarts_only_the_environments_it_names(key, backend):
    """TorchRL marks the environments to restart (at the root, or in a group: the agents of
    one environment restart together); the others go on where they were."""
    torch.manual_seed(0)  # the rollout's random actions: the same moves whatever ran before
    env = TorchRLEnv(TagGrid(num_taggers=2, num_runners=3, num_nearest=2, episode_length=50),
                     3, backend)
    start = env.reset()
    moved = env.rollout(3, auto_reset=False, tensordict=start)[:, -1]["next"]
    mask = torch.tensor([False, True, False], device=env.device)
    shape = (3, 1) if key == "_reset" else (3, 3, 1)
    marks = moved.clone()  # as TorchRL hands it over: the current data, and the marks
    marks.set(key, mask.view(3, *[1] * (len(shape) - 1)).expand(shape))
    after = env.reset(marks)
    for group, index in [("taggers", [0, 1]), ("runners", [2, 3, 4])]:
        obs = after[group, "observation"]
        assert torch.equal(obs[1], start[group, "observation"][1])
        assert torch.equal(obs[[0, 2]], moved[group, "observation"][[0, 2]])
        assert torch.equal(env.wrapper.obs[:, index], obs)  # the envs themselves, too
    assert not torch.equal(moved["taggers", "observation"][1], start["taggers", "observation"][1])
    assert env.wrapper.store["timestep"].tolist() == [3, 0, 3]


@needs_torchrl
def test_agents_are_grouped_by_their_roles():
    env = TorchRLEnv(small("tag_grid"), 2, "numpy")
    assert env.group_map == {"taggers": [0, 1], "runners": [2, 3, 4]}
    assert env.full_action_spec["taggers", "action"].shape == (2, 2)
    assert env.full_observation_spec["runners", "observation"].shape == (2, 3, 12)
    assert env.full_reward_spec["runners", "reward"].shape == (2, 3, 1)
    assert env.full_done_spec["done"].shape == (2, 1)
    single = TorchRLEnv(CartPole(), 2, "numpy")
    assert single.group_map == {"agents": [0]}


@needs_torchrl
def test_a_group_of_agents_out_of_order_reads_and_writes_the_right_agents():
    env = TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"odd": [3, 1], "even": [0, 2, 4]})
    td = env.reset()
    obs = env.wrapper.obs
    assert torch.equal(td["odd", "observation"], obs[:, [3, 1]])
    assert torch.equal(td["even", "observation"], obs[:, [0, 2, 4]])
    td["odd", "action"] = torch.tensor([[1, 2], [3, 4]])
    td["even", "action"] = torch.tensor([[0, 0, 0], [0, 0, 0]])
    env.step(td)
    assert env.wrapper.store["actions"].tolist() == [[0, 2, 0, 1, 0], [0, 4, 0, 3, 0]]


@needs_torchrl
def test_several_action_heads_become_one_multi_categorical_spec():
    """No shipped env has several heads yet; the spec a MultiDiscrete space makes takes every
    in-range action and refuses one out of its head's range."""
    spec = _action_spec(spaces.MultiDiscrete([3, 5]), (4, 2), "cpu")
    assert spec.shape == (4, 2, 2) and spec.dtype == torch.int64
    assert spec.is_in(spec.rand()) and spec.is_in(torch.tensor([2, 4]).expand(4, 2, 2))
    assert not spec.is_in(torch.tensor([3, 4]).expand(4, 2, 2))


@needs_torchrl
def test_set_seed_makes_new_start_states_and_the_same_ones_again():
    env = TorchRLEnv(CartPole(), 4, "numpy")
    first = env.reset()["agents", "observation"].clone()
    env.set_seed(7)
    seven = env.reset()["agents", "observation"].clone()
    env.set_seed(7)
    assert not torch.equal(first, seven)
    assert torch.equal(env.reset()["agents", "observation"], seven)
    want = CartPole().full_state(4, 7)["obs"].data
    np.testing.assert_array_equal(seven.numpy(), want)


def ppo_for(env, group):
    """A small actor and critic for one group, and ClipPPOLoss reading that group's keys."""
    size = env.observation_spec[group, "observation"].shape[-1]
    count = env.action_spec[group, "action"].space.n
    mlp = lambda out: torch.nn.Sequential(  # noqa: E731
        torch.nn.Linear(size, 16), torch.nn.Tanh(), torch.nn.Linear(16, out))
    actor = ProbabilisticActor(
        TensorDictModule(mlp(count), [(group, "observation")], [(group, "logits")]),
        in_keys={"logits": (group, "logits")}, out_keys=[(group, "action")],
        distribution_class=torch.distributions.Categorical, return_log_prob=True)
    critic = ValueOperator(mlp(1), in_keys=[(group, "observation")],
                           out_keys=[(group, "state_value")])
    loss = ClipPPOLoss(actor, critic)
    loss.set_keys(reward=(group, "reward"), action=(group, "action"),
                  value=(group, "state_value"), done=(group, "done"),
                  terminated=(group, "terminated"), advantage=(group, "advantage"),
                  value_target=(group, "value_target"))
    return actor, loss


@needs_torchrl
def test_a_ppo_loss_step_on_every_group(backend):
    """A rollout by a policy per group, then one ClipPPOLoss step per group: finite losses,
    gradients that reach every actor and critic, and parameters that move."""
    torch.manual_seed(0)
    env = TorchRLEnv(TagGrid(num_taggers=2, num_runners=3, num_nearest=2, grid_size=3,
                             episode_length=4), 4, backend)
    parts = {group: ppo_for(env, group) for group in env.group_map}
    policy = TensorDictSequential(*(actor for actor, _ in parts.values())).to(env.device)
    for _, loss in parts.values():
        loss.to(env.device)
    with torch.no_grad():
        data = env.rollout(8, policy, break_when_any_done=False)
    assert data.batch_size == (4, 8) and bool(data["next", "done"].any())
    for group, (_, loss) in parts.items():
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        assert data[group, "advantage"].shape == (4, 8, len(env.group_map[group]), 1)
        before = [p.detach().clone() for p in loss.parameters()]
        optimiser = torch.optim.Adam(loss.parameters(), lr=1e-2)
        out = loss(data)
        total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
        assert torch.isfinite(total)
        total.backward()
        assert all(p.grad is not None and bool(p.grad.abs().sum() > 0)
                   for p in loss.parameters())
        optimiser.step()
        assert any(not torch.equal(b, p) for b, p in zip(before, loss.parameters(), strict=True))


@needs_torchrl
def test_the_readme_example_runs():
    """README's section on TorchRL and gymnasium: its code block runs as written."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Using the envs from TorchRL and gymnasium", 1)[1].split("\n## ")[0]
    blocks = section.split("```python\n")[1:]
    assert blocks, "the README section has no python block"
    namespace: dict = {}
    if any("pettingzoo" in block.split("```", 1)[0] for block in blocks):
        pytest.importorskip("pettingzoo", reason="README's example uses PettingZoo too")
    for block in blocks:
        exec(compile(block.split("```", 1)[0], "README.md", "exec"), namespace)  # noqa: S102
    assert "loss" in namespace and "data" in namespace


# -- bad input, refused before any work ---------------------------------------------------------


class NoAgents(CartPole):
    @property
    def num_agents(self):
        return 0


@needs_torchrl
@pytest.mark.parametrize("make, message", [
    (lambda: TorchRLEnv(NoAgents(), 2, "numpy"), "needs at least one"),
    (lambda: TorchRLEnv(42, 2, "numpy"), "expected a wd_teach Env"),
    (lambda: TorchRLEnv("no_such_env", 2, "numpy"), "no environment named"),
    (lambda: TorchRLEnv(CartPole(), 2, "numpy", device="cuda"), "keeps its envs on 'cpu'"),
    (lambda: TorchRLEnv(CartPole(), 2, "numpy", device="tpu:x"), "is not a torch device"),
    (lambda: TorchRLEnv(CartPole(), 0, "numpy"), "num_envs"),
    (lambda: TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"a": [0, 1]}),
     "are in no group"),
    (lambda: TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"a": [0, 1, 2], "b": [2, 3, 4]}),
     "in both 'a' and 'b'"),
    (lambda: TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"a": [0, 1, 2, 3, 9]}),
     "agents are 0 to 4"),
    (lambda: TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"done": [0, 1, 2, 3, 4]}),
     "cannot be used"),
    (lambda: TorchRLEnv(small("tag_grid"), 2, "numpy", group_map={"a": [], "b": [0, 1, 2, 3, 4]}),
     "has no agents"),
])
def test_bad_input_gets_a_clear_error(make, message):
    with pytest.raises(EnvError, match=message):
        make()


@needs_torchrl
def test_roles_that_do_not_cover_every_agent_are_refused():
    class HalfRoles(CartPole):
        def agent_roles(self):
            return {"left": []}

    with pytest.raises(EnvError, match="HalfRoles.agent_roles"):
        agent_groups(HalfRoles())


@needs_torchrl
def test_out_of_range_actions_are_refused_by_the_wrapper():
    env = TorchRLEnv(CartPole(), 2, "numpy")
    td = env.reset()
    td["agents", "action"] = torch.tensor([[0], [5]])
    with pytest.raises(EnvError, match="out of range"):
        env.step(td)


def test_torchrl_is_there_where_ci_runs():
    """CI installs the dev extra: there, a missing TorchRL is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        assert HAVE_TORCHRL, 'CI must install the dev extra, which brings wd-teach[torchrl]'


def test_without_torchrl_wd_teach_imports_and_the_adapter_says_what_to_install():
    code = ("import sys; sys.modules['torchrl'] = None; sys.modules['tensordict'] = None\n"
            "import wd_teach, wd_teach.env.wrapper, wd_teach.interop.gymnasium\n"
            "try:\n    import wd_teach.interop.torchrl\n"
            "except wd_teach.MissingPieceError as err:\n"
            "    assert isinstance(err, ModuleNotFoundError) and err.name, err.name\n"
            "    print(err)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 'pip install "wd-teach[torchrl]"' in done.stdout
