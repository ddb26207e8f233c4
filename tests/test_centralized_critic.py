"""The centralized critic (trainer.critic: centralized, MAPPO): the env's global state, the
critic that reads it and the actor that does not, one update of A2C and PPO, a checkpoint
that goes on bit for bit, the plain floor taken where the fast one cannot, and bad configs."""

import numba
import numpy as np
import pytest
import torch

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import ConfigError, TrainError
from wd_teach.floors import set_fast
from wd_teach.train.config import load_config
from wd_teach.train.policy import make_policy
from wd_teach.train.trainer import Trainer
from wd_teach_envs.tag_continuous import TagContinuous
from wd_teach_envs.tag_grid import TagGrid

#: The Tag config gives each policy one body for actor and critic; a centralized critic reads
#: the global state, which the actor never sees, so these runs take two networks a policy.
TWO_NETWORKS = [f"policies.{name}.shared=false" for name in ("taggers", "runners")]
SMALL = ["env.num_envs=2", "trainer.steps=8", "env.params.num_taggers=2",
         "env.params.num_runners=3", "env.params.num_nearest=2", *TWO_NETWORKS]


def tag(*more, algorithm="a2c", env="tag_continuous"):
    sets = [*SMALL, f"algorithm.name={algorithm}", "trainer.critic=centralized", *more]
    if algorithm == "ppo":
        sets.append("algorithm.num_minibatches=2")
    return Trainer(env, gpu=False, sets=sets)


@pytest.mark.parametrize("game", [TagContinuous, TagGrid])
def test_tag_global_state_is_every_agents_own_block(game):
    env = game(num_taggers=2, num_runners=3, num_nearest=2)
    wrapper = EnvWrapper(env, 3, "numpy", seed=1)
    for _ in range(3):
        wrapper.step(wrapper.random_actions(torch.Generator().manual_seed(0)))
    state = env.global_state(wrapper.store)
    assert env.global_state_size == env.num_agents * env.own_size
    assert state.shape == (3, env.global_state_size) and state.dtype == torch.float32
    own = wrapper.obs[..., :env.own_size]
    assert torch.equal(state.view(3, env.num_agents, env.own_size), own)
    names = env.feature_names()[:env.own_size]
    assert names[:4] == ["own x", "own y", "own is runner", "own in game"]


@pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                    reason="bit for bit on the simulator; on a GPU, tests/gpu holds it to the "
                    "env's tolerance")
def test_global_state_agrees_across_backends_bit_for_bit():
    """Sliced from `obs`, which the kernels write: the Numba step (on the simulator here)
    and the NumPy reference give the very same global state."""
    env = TagContinuous(num_taggers=1, num_runners=2, num_nearest=2)
    states = []
    for backend in ("numpy", "numba"):
        wrapper = EnvWrapper(env, 2, backend, seed=3)
        generator = torch.Generator().manual_seed(5)
        for _ in range(3):
            wrapper.step(wrapper.random_actions(generator).cpu())
        states.append(env.global_state(wrapper.store).cpu())
    assert torch.equal(*states)


def test_an_env_without_a_global_state_declares_none():
    from wd_teach_envs.cartpole import CartPole

    env = CartPole()
    assert env.global_state_size == 0 and env.global_state(None) is None


def test_the_critic_reads_the_global_state_and_the_actor_does_not():
    env = TagContinuous(num_taggers=2, num_runners=3, num_nearest=2)
    policy = make_policy("stochastic", env.obs_size, env.action_space, [16],
                         state_size=env.global_state_size)
    obs = torch.randn(4, env.obs_size)
    state = torch.randn(4, env.global_state_size)
    other = state.clone()
    other[:, -env.own_size:] += 1.0  # the last agent's part of the game moves
    logits, value = policy.actor_and_value(obs, state)
    logits_other, value_other = policy.actor_and_value(obs, other)
    assert value.shape == (4,) and logits.shape == (4, sum(policy.num_actions))
    assert torch.equal(logits, logits_other)
    assert not torch.allclose(value, value_other)
    assert policy.critic[0].in_features == env.global_state_size + env.obs_size
    with pytest.raises(ValueError, match="centralized"):
        policy.actor_and_value(obs)


def test_in_a_trainer_another_agents_state_moves_my_value_not_my_actions():
    trainer = tag()
    store, env = trainer.wrapper.store, trainer.env
    policy, group = trainer.policies["taggers"], trainer.groups[0]
    obs = group.take(store["obs"], 1)
    state = env.global_state(store)
    moved = state.clone()
    runner = env.num_agents - 1  # not a tagger: only the global state sees it
    moved[:, runner * env.own_size:(runner + 1) * env.own_size] += 0.5
    each = lambda s: s[:, None].expand(-1, group.size, -1)
    with torch.no_grad():
        logits, value = policy.actor_and_value(obs, each(state))
        logits_moved, value_moved = policy.actor_and_value(obs, each(moved))
    assert torch.equal(logits, logits_moved)
    assert not torch.allclose(value, value_moved)


@pytest.mark.parametrize("algorithm", ["a2c", "ppo"])
def test_one_update_runs_and_the_rollout_keeps_the_global_state(algorithm):
    trainer = tag(algorithm=algorithm)
    before = [p.detach().clone() for p in trainer.policies["runners"].critic.parameters()]
    row = trainer.iterate()
    buffer = trainer.rollout.buffer
    assert buffer.states.shape == (8, 2, trainer.env.global_state_size)
    assert torch.equal(buffer.states[0].view(2, 5, -1), buffer.obs[0, ..., :trainer.env.own_size])
    batch = buffer.group(trainer.groups[1])
    assert batch.states.shape == (8, 2, 3, trainer.env.global_state_size)
    assert all(np.isfinite(row[f"{g}/loss"]) for g in ("taggers", "runners"))
    after = list(trainer.policies["runners"].critic.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_ppo_by_trajectories_takes_the_global_state_too():
    trainer = tag("algorithm.shuffle=trajectories", algorithm="ppo")
    row = trainer.iterate()
    assert np.isfinite(row["taggers/value_loss"])


def test_independent_critics_keep_no_global_state():
    trainer = Trainer("tag_continuous", gpu=False, sets=SMALL)
    assert trainer.config.trainer.critic == "independent"
    assert trainer.rollout.buffer.states is None
    assert trainer.policies["taggers"].critic[0].in_features == trainer.env.obs_size


def test_a_centralized_checkpoint_goes_on_bit_for_bit(tmp_path):
    straight = tag(algorithm="ppo")
    straight.train(3, progress=False)
    first = tag(algorithm="ppo")
    first.train(2, progress=False)
    path = first.save(tmp_path / "checkpoint.safetensors")
    resumed = Trainer.from_checkpoint(path, gpu=False)
    assert resumed.config.trainer.critic == "centralized"
    resumed.train(1, progress=False)
    for name, policy in straight.policies.items():
        for a, b in zip(policy.state_dict().values(),
                        resumed.policies[name].state_dict().values(), strict=True):
            assert torch.equal(a, b), name


def test_a_centralized_checkpoint_does_not_load_into_independent_critics(tmp_path):
    path = tag(algorithm="ppo").save(tmp_path / "checkpoint.safetensors")
    independent = Trainer("tag_continuous", gpu=False,
                          sets=[*SMALL, "algorithm.name=ppo", "algorithm.num_minibatches=2"])
    with pytest.raises(TrainError):
        independent.load(path)


def test_the_fast_floor_hands_a_centralized_critic_to_the_plain_one(capsys):
    set_fast(True)
    try:
        trainer = tag()
    finally:
        set_fast("reset")
    assert trainer.fast is False
    assert type(trainer.policies["taggers"]).__module__ == "wd_teach.train.policy"
    note = capsys.readouterr()
    assert "runs on the plain floor" in note.out + note.err
    trainer.iterate()


@pytest.mark.parametrize("sets, match", [
    (["trainer.critic=central"], "trainer.critic must be one of independent, centralized"),
    (["trainer.critic=centralized", "policies.taggers.shared=true"], "shared: false"),
    (["trainer.critic=centralized"], "policies taggers, runners set shared: true"),  # the default
])
def test_bad_critic_configs_are_refused(sets, match):
    with pytest.raises(ConfigError, match=match):
        load_config("tag_continuous", sets=sets, gpu=False)


def test_centralized_is_refused_for_ddpg():
    with pytest.raises(ConfigError, match="a2c or ppo"):
        load_config("pendulum", sets=["trainer.critic=centralized"], gpu=False)


def test_centralized_is_refused_for_an_env_without_a_global_state():
    with pytest.raises(ConfigError, match="declares no global state"):
        Trainer("cartpole", gpu=False, sets=["trainer.critic=centralized"])


def test_a_centralized_run_plays_from_the_observations_alone():
    trainer = tag()
    trainer.iterate()
    result = trainer.evaluate(num_envs=2, random=("runners",))
    assert np.isfinite(result.metrics["taggers/return"])


class WrongState(TagContinuous):
    """A global state that does not match its declared size."""

    @property
    def global_state_size(self):
        return 3


def test_a_global_state_that_disagrees_with_its_size_is_refused_before_training():
    env = WrongState(num_taggers=1, num_runners=2, num_nearest=2)
    with pytest.raises(ConfigError, match=r"gave \(2, 21\) torch.float32 .* says float32 \(2, 3\)"):
        Trainer(env, gpu=False,
                sets=["env.num_envs=2", "trainer.critic=centralized", *TWO_NETWORKS])
