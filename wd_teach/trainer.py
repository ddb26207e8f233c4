"""Trainer: end-to-end training on the device, one iteration at a time.

An iteration is a rollout (wd_teach/rollout.py: policy -> sampler -> env step -> reset of
done envs, every step on the device) and then one update per policy group (the algorithm's
Learner). After the update the iteration's metrics, which were added up on the device,
come to the host in one copy: the only synchronisation of a normal iteration. With
`profile=True` the phases are timed as well (CUDA events on a GPU), read in a second one.

    trainer = Trainer("cartpole")                  # the defaults in envs/cartpole/config.yaml
    trainer = Trainer("path/to/my_env")            # any env folder, with its config.yaml
    trainer = Trainer(CartPole(episode_length=200))  # an env object, its folder's defaults
    trainer.train(50)                              # a progress bar; trainer.history grows
    trainer.save("run/checkpoint.pt")              # model, optimiser, RNGs, env, history
    trainer = Trainer.from_checkpoint("run/checkpoint.pt")   # ... and on, bit for bit
    result = trainer.evaluate(record=True)         # argmax actions; frames of one env

A run is seeded: weights, the envs' initial states, the sampler's and torch's random numbers
all follow from `trainer.seed`, and a checkpoint holds every one of their states, so a run
resumed from a checkpoint goes on exactly as the uninterrupted run would have.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from wd_teach.acting import make_acting, random_actions
from wd_teach.algorithms import ALGORITHMS
from wd_teach.config import TrainConfig, load_config, make_env, resolve_agents
from wd_teach.device import gpu_available
from wd_teach.env import Env
from wd_teach.errors import TrainError
from wd_teach.metrics import EpisodeStats
from wd_teach.policy import agent_groups, make_policy
from wd_teach.rollout import Rollout
from wd_teach.speed import maybe_graphed, precision_context
from wd_teach.wrapper import EnvWrapper

CHECKPOINT_FORMAT = 1
#: Store arrays that a Tag game keeps, from which the rollout counts runners caught.
RUNNERS_LEFT = "runners_left"


def default_backend() -> str:
    """The backend a run uses when its config names none: PyCUDA or Numba on a GPU; on a
    CPU the NumPy reference (the kernels would run on the simulator, thread by thread)."""
    if not gpu_available():
        return "numpy"
    from wd_teach.device import choose_backend

    return choose_backend()


class Trainer:
    """Everything one training run needs, built from a config (see wd_teach.config): an
    env name or folder, a YAML path, a dict, a TrainConfig, or an env object or class, whose
    folder's config.yaml gives the defaults. An env object is trained as it is, so a subclass
    made in a notebook trains too (a checkpoint of it resumes as the env its config names)."""

    def __init__(self, config=None, *, overrides: dict | None = None, sets=(),
                 gpu: bool | None = None):
        self.config: TrainConfig = load_config(config, overrides=overrides, sets=sets, gpu=gpu)
        c = self.config
        self.seed = c.trainer.seed
        self.algorithm = ALGORITHMS[c.algorithm_name]

        # Checks first, on the host: nothing is on the device until they pass.
        self.env = config if isinstance(config, Env) else make_env(c.env)
        mapping = {name: resolve_agents(p.agents, self.env, name) for name, p in c.policies.items()}
        self.groups = agent_groups(mapping, self.env.num_agents)
        for group in self.groups:
            self.algorithm.check(c.algorithm, c.trainer.steps * c.env.num_envs * group.size,
                                 group.name)

        torch.manual_seed(self.seed)
        self.backend = c.env.backend or default_backend()
        self.wrapper = EnvWrapper(self.env, c.env.num_envs, self.backend, seed=self.seed,
                                  auto_reset=False, check_actions=False)
        self.device = self.wrapper.device
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        graphs = c.trainer.cuda_graphs and self.device.type == "cuda"
        graph_update = graphs and getattr(self.algorithm, "GRAPH_UPDATE", False)
        self.policies = {}
        self.learners = {}
        for group in self.groups:
            spec = c.policies[group.name]
            policy = make_policy(self.algorithm.POLICY, self.env.obs_size, self.env.action_space,
                                 spec.hidden).to(self.device)
            self.policies[group.name] = policy
            options = {"capturable": True} if graph_update else {}
            learner = self.algorithm.Learner(policy, c.algorithm, spec.lr or c.trainer.lr,
                                             self.generator, **options)
            learner.chunk = c.trainer.chunk_samples
            self.learners[group.name] = learner
        noise = (getattr(c.algorithm, "noise_theta", 0.15),  # DDPG's exploration
                 getattr(c.algorithm, "noise_sigma", 0.2))
        self.acting = make_acting(self.wrapper, self.groups, list(self.policies.values()),
                                  self.seed, self.generator, noise)
        tags = RUNNERS_LEFT in self.wrapper.store.names
        self.rollout = Rollout(self.wrapper, self.acting, c.trainer.steps,
                               next_obs=self.algorithm.NEEDS_NEXT_OBS,
                               tags=self.wrapper.store[RUNNERS_LEFT] if tags else None,
                               num_runners=getattr(self.env.config, "num_runners", 0),
                               graph=graphs, precision=c.trainer.precision,
                               log_probs=getattr(self.algorithm, "NEEDS_LOG_PROBS", True))
        self._graph_update = graph_update
        self._graphed_update = maybe_graphed(graph_update, self._update, self.backend,
                                             watch=self._training_memory)
        self.has_tags = tags
        self.iteration = 0
        self.env_steps = 0
        self.history: list[dict] = []
        self.wrapper.reset()

    # -- training ---------------------------------------------------------------------------

    @property
    def steps_per_iteration(self) -> int:
        """Environment steps per iteration: every env, `trainer.steps` times."""
        return self.config.trainer.steps * self.wrapper.num_envs

    def iterate(self, profile: bool = False) -> dict:
        """One rollout and one update per policy; returns the iteration's metrics row."""
        timer = self.rollout.timer
        timer.enabled = profile
        start = time.perf_counter()
        buffer = self.rollout.collect()
        device_values = self.rollout.stats.device_values(self.groups, self.wrapper.num_envs,
                                                         self.has_tags)
        with timer("training"):
            device_values.update(self._update_step(buffer))
        # The one trip to the host of this iteration: every metric in one copy.
        names = list(device_values)
        values = torch.stack([v.detach().float().reshape(()) for v in device_values.values()])
        pulled = values.cpu().tolist()
        seconds = time.perf_counter() - start
        self.rollout.stats.clear()
        self.iteration += 1
        self.env_steps += self.steps_per_iteration
        row = {"iteration": self.iteration, "env_steps": self.env_steps,
               "seconds": seconds, "steps_per_second": self.steps_per_iteration / seconds}
        row.update(zip(names, pulled, strict=True))
        if profile:
            row.update({f"time/{k}": v for k, v in timer.pull().items()})
        self.history.append(row)
        return row

    def _update(self, buffer=None) -> dict:
        """Each group's update from the rollout buffer; their losses, on the device."""
        buffer = buffer or self.rollout.buffer
        values = {}
        with precision_context(self.config.trainer.precision, self.device):
            for group in self.groups:
                losses = self.learners[group.name].update(buffer.group(group))
                values.update({f"{group.name}/{k}": v for k, v in losses.items()})
        return values

    def _update_step(self, buffer) -> dict:
        """The update, replayed as a CUDA graph where it can be: not while a framework
        drives the backward pass (Lightning) or gradients are averaged over GPUs."""
        plain = all(lr.backward is None and lr.reduce is None
                    for lr in self.learners.values())
        if plain and self._graph_update:
            return self._graphed_update()
        return self._update(buffer)

    def _training_memory(self) -> list[torch.Tensor]:
        """What a recorded update reads and writes in place: weights, optimiser state."""
        tensors = []
        for learner in self.learners.values():
            tensors += list(learner.policy.parameters())
            for name in learner.optimizer_names:
                for state in getattr(learner, name).state.values():
                    tensors += [v for v in state.values() if isinstance(v, torch.Tensor)]
        return tensors

    @property
    def graphed(self) -> dict[str, bool]:
        """Which phases replay as CUDA graphs: the rollout, the update."""
        return {"rollout": self.rollout.graphed, "update": self._graph_update}

    def train(self, iterations: int | None = None, *, progress: bool = True,
              profile: bool = False, out: str | Path | None = None, callback=None) -> list[dict]:
        """Run `iterations` (default: trainer.iterations) with a progress bar. `out`: a
        folder for checkpoints, every trainer.checkpoint_every iterations and at the end.
        `callback(trainer, row)` after each iteration; returning True stops early."""
        from tqdm.auto import tqdm

        iterations = self.config.trainer.iterations if iterations is None else int(iterations)
        every = self.config.trainer.checkpoint_every
        bar = tqdm(range(iterations), disable=not progress, unit="it",
                   desc=f"{self.config.env.name} {self.config.algorithm_name}")
        for _ in bar:
            row = self.iterate(profile)
            # First the callback: it may change the row (data-parallel runs average it
            # over the GPUs) before the bar shows it and a checkpoint keeps it.
            if callback is not None and callback(self, row):
                break
            bar.set_postfix(self.summary(row), refresh=False)
            if out is not None and every and self.iteration % every == 0:
                self.save(Path(out) / f"checkpoint_{self.iteration:05d}.pt")
        if out is not None:
            self.save(Path(out) / "checkpoint.pt")
        return self.history

    def summary(self, row: dict) -> dict[str, str]:
        """The few numbers a progress bar shows: each group's latest return, steps/s."""
        shown = {}
        for group in self.groups:
            value = self.latest(f"{group.name}/return")
            shown[group.name] = "-" if value is None else f"{value:.3g}"
        if self.has_tags and self.latest("tags_per_episode") is not None:
            shown["tags"] = f"{self.latest('tags_per_episode'):.3g}"
        shown["steps/s"] = f"{row['steps_per_second']:,.0f}"
        return shown

    def latest(self, key: str) -> float | None:
        """The last finite value of `key` in the history (returns are NaN in iterations
        where no episode ended)."""
        for row in reversed(self.history):
            value = row.get(key)
            if value is not None and math.isfinite(value):
                return value
        return None

    # -- evaluation -------------------------------------------------------------------------

    @torch.no_grad()
    def evaluate(self, num_envs: int | None = None, steps: int | None = None, *,
                 greedy: bool = True, random: tuple[str, ...] = (), record: bool = False,
                 seed: int | None = None, backend: str | None = None) -> Evaluation:
        """Play the first episode of `num_envs` fresh envs (default: as many as training)
        with the trained policies: the most probable action (`greedy`) or a draw.
        Groups named in `random` act uniformly at random instead: the baseline.

        `record`: keep env 0's state arrays at every step, the start included, up to the
        end of its episode: the frames of an animation. The training envs are not touched.
        """
        num_envs = num_envs or self.wrapper.num_envs
        steps = steps or self.env.episode_length
        seed = self.seed + 1 if seed is None else seed
        unknown = sorted(set(random) - {g.name for g in self.groups})
        if unknown:
            raise TrainError(f"random={unknown}: no such policy. Policies: "
                             f"{', '.join(g.name for g in self.groups)}.")
        wrapper = EnvWrapper(self.env, num_envs, backend or self.backend, seed=seed,
                             auto_reset=False, check_actions=False)
        generator = torch.Generator(device=wrapper.device).manual_seed(seed)
        policies = [self.policies[g.name] for g in self.groups]
        acting = make_acting(wrapper, self.groups, policies, seed, generator)
        for policy in policies:
            policy.to(wrapper.device)
        stats = EpisodeStats(num_envs, wrapper.num_agents, wrapper.device)
        playing = torch.ones(num_envs, dtype=torch.bool, device=wrapper.device)
        names = [n for n in self._frame_names() if n in wrapper.store.names] if record else []
        frames = {n: [wrapper.store[n][0].clone()] for n in names}
        ended = []
        scratch_actions = torch.zeros((num_envs, wrapper.num_agents, acting.action_width()),
                                      dtype=acting.action_dtype(), device=wrapper.device)
        scratch_log_probs = torch.zeros((num_envs, wrapper.num_agents), device=wrapper.device)
        wrapper.reset()
        for _ in range(steps):
            acting.forward(wrapper.obs)
            if greedy:
                acting.greedy()
            else:
                acting.draw(scratch_actions, scratch_log_probs)
            for group in self.groups:
                if group.name in random:
                    random_actions(wrapper, group, generator)
            _, rewards, done, _ = wrapper.step()
            tags = (getattr(self.env.config, "num_runners", 0) - wrapper.store[RUNNERS_LEFT]
                    if RUNNERS_LEFT in wrapper.store.names else None)
            stats.update(rewards * playing[:, None], done & playing, tags)
            for n in names:
                frames[n].append(wrapper.store[n][0].clone())
            ended.append(done[0].clone())
            playing &= ~done
            wrapper.reset_done()
        for policy in policies:
            policy.to(self.device)
        values = stats.device_values(self.groups, num_envs, RUNNERS_LEFT in wrapper.store.names)
        pulled = dict(zip(values, torch.stack(list(values.values())).cpu().tolist(),
                          strict=True))
        kept = {}
        if names:
            end = torch.stack(ended).cpu().numpy()
            last = int(np.argmax(end)) + 1 if end.any() else len(end)
            kept = {n: torch.stack(frames[n][:last + 1]).cpu().numpy() for n in names}
        return Evaluation(metrics=pulled, frames=kept, num_envs=num_envs, greedy=greedy,
                          random=tuple(random))

    def _frame_names(self) -> list[str]:
        """What an animation of this env needs: Tag's positions, or the whole state."""
        if self.has_tags:
            return ["loc_x", "loc_y", "in_game"]
        state = self.env.initial_state(1, np.random.default_rng(0))
        return [n for n in state if n != "obs"]

    # -- checkpoints ------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything a run needs to go on exactly where it is."""
        store = self.wrapper.store
        arrays = {n: store[n].detach().cpu().clone() for n in store.names
                  if not n.endswith("_pristine")}
        return {
            "format": CHECKPOINT_FORMAT,
            "env": self.config.env.name,
            "config": self.config.to_dict(),
            "groups": {g.name: list(g.agents) for g in self.groups},
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "history": [dict(row) for row in self.history],
            "learners": {name: learner.state_dict() for name, learner in self.learners.items()},
            "acting": self.acting.state_dict(),
            "store": arrays,
            "stats": self.rollout.stats.state_dict(),
            "generator": self.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), path)
        return path

    def load(self, path: str | Path) -> Trainer:
        """Go on from a checkpoint of this same run (same env, policies, sizes)."""
        return self.load_state_dict(read_checkpoint(path), where=str(path))

    def load_state_dict(self, state: dict, where: str = "the checkpoint") -> Trainer:
        self._check_compatible(state, where)
        for name, learner in self.learners.items():
            learner.load_state_dict(state["learners"][name])
        self.acting.load_state_dict(state["acting"])
        for name, array in state["store"].items():
            self.wrapper.store[name].copy_(array)
        self.rollout.stats.load_state_dict(state["stats"])
        self.generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        self.iteration, self.env_steps = state["iteration"], state["env_steps"]
        self.history = [dict(row) for row in state["history"]]
        return self

    @classmethod
    def from_checkpoint(cls, path: str | Path, gpu: bool | None = None) -> Trainer:
        """A trainer built from the config a checkpoint holds, and loaded from it."""
        state = read_checkpoint(path)
        return cls(state["config"], gpu=gpu).load(path)

    def _check_compatible(self, state: dict, path) -> None:
        mine, theirs = self.config.env.name, state["env"]
        if theirs != mine:
            raise TrainError(f"{path} is a checkpoint of {theirs!r}, but this trainer runs "
                             f"{mine!r}. Load it into a trainer of {theirs!r} "
                             "(Trainer.from_checkpoint builds one from the checkpoint).")
        groups = {g.name: list(g.agents) for g in self.groups}
        if state["groups"] != groups:
            raise TrainError(f"{path} holds policies {_describe(state['groups'])}, this trainer "
                             f"has {_describe(groups)}: the same policies over the same "
                             "agents are needed to go on.")
        algorithm = state["config"]["algorithm"]["name"]
        if algorithm != self.config.algorithm_name:
            raise TrainError(f"{path} was trained with {algorithm}, this trainer runs "
                             f"{self.config.algorithm_name}.")
        store = self.wrapper.store
        for name, array in state["store"].items():
            if name not in store.names or tuple(store[name].shape) != tuple(array.shape):
                have = tuple(store[name].shape) if name in store.names else "nothing"
                raise TrainError(f"{path} holds {name!r} of shape {tuple(array.shape)}, this "
                                 f"trainer {have}: the env's sizes differ (env.num_envs or "
                                 "env.params).")

    def __repr__(self) -> str:
        groups = ", ".join(f"{g.name} ({g.size} agents)" for g in self.groups)
        return (f"Trainer({self.config.env.name}, {self.config.algorithm_name}, "
                f"{self.wrapper.num_envs} envs on {self.backend}, policies: {groups}, "
                f"iteration {self.iteration})")


@dataclass
class Evaluation:
    """What `Trainer.evaluate` found: per-group mean returns over each env's first
    episode (`metrics`, keys as in the history), and the recorded frames of env 0."""

    metrics: dict[str, float]
    frames: dict[str, np.ndarray] = field(default_factory=dict)
    num_envs: int = 0
    greedy: bool = True
    random: tuple[str, ...] = ()


def read_checkpoint(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise TrainError(f"no checkpoint at {path}.")
    state = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise TrainError(f"{path} is not a wd-teach training checkpoint (format "
                         f"{CHECKPOINT_FORMAT}). Make one with Trainer.save().")
    return state


def _describe(groups: dict) -> str:
    return ", ".join(f"{name} ({len(agents)} agents)" for name, agents in groups.items())
