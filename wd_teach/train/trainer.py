"""Trainer: end-to-end training on the device, one iteration at a time.

An iteration is a rollout (wd_teach/train/rollout.py: policy -> sampler -> env step -> reset of
done envs, every step on the device) and then one update per policy group (the algorithm's
Learner). After the update the iteration's metrics, which were added up on the device,
come to the host in one copy: the only synchronisation of a normal iteration. With
`profile=True` the phases are timed as well (CUDA events on a GPU), read in a second one.

    trainer = Trainer("NAME")                      # a shipped env, its folder's config.yaml
    trainer = Trainer("path/to/my_env")            # any env folder, with its config.yaml
    trainer = Trainer(MyEnv(episode_length=200))   # an env object, its folder's defaults
    trainer.train(50)                              # a progress bar; trainer.history grows
    Trainer("NAME", sets=["trainer.critic=centralized",   # critics read the global state,
                          "policies.P.shared=false"])     # so no policy P shares a body
    Trainer("NAME", logger="tensorboard").train(out="runs/NAME")   # + TensorBoard, live
    trainer.save("run/checkpoint.safetensors")     # model, optimiser, RNGs, env, history
    trainer = Trainer.from_checkpoint("run/checkpoint.safetensors")   # ... and on, bit for bit
    result = trainer.evaluate(record=True)         # argmax actions; frames of one env

A run is seeded: weights, the envs' initial states, the sampler's and torch's random numbers
all follow from `trainer.seed`, and a checkpoint holds every one of their states, so a run
resumed from a checkpoint goes on exactly as the uninterrupted run would have. Checkpoints
are safetensors files that load without running code (wd_teach/train/checkpoint.py), and a load
is all or nothing: a checkpoint that does not fit is refused before the trainer changes.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from wd_teach import seat_memory
from wd_teach.device import gpu_available
from wd_teach.env import Env
from wd_teach.env.wrapper import EnvWrapper, state_bytes
from wd_teach.errors import ConfigError, EnvError, LaunchError, TooLargeError, TrainError
from wd_teach.floors import fast_floor
from wd_teach.launch import launch_geometry
from wd_teach.train.acting import make_acting
from wd_teach.train.algorithms import ALGORITHMS
from wd_teach.train.algorithms.base import LearnerOptions, together
from wd_teach.train.checkpoint import (
    FORMAT_VERSION,
    SUFFIX,
    check_compatible,
    read_checkpoint,
    write_checkpoint,
)
from wd_teach.train.config import (
    TrainConfig,
    load_config,
    make_env,
    merge,
    resolve_agents,
    saved_run,
)
from wd_teach.train.evaluation import Evaluation, play_first_episodes
from wd_teach.train.logger import open_log
from wd_teach.train.metrics import per_episode
from wd_teach.train.policy import CLASSES, agent_groups, make_policy
from wd_teach.train.rollout import Rollout
from wd_teach.train.selfplay import SnapshotPool, load_group_weights
from wd_teach.train.speed import maybe_graphed, precision_context


def default_backend():
    """The backend a run uses when its config names none: PyCUDA or Numba on a GPU; on a
    CPU the NumPy reference (the kernels would run on the simulator, thread by thread)."""
    from wd_teach import backends

    return backends.get() if gpu_available() else backends.NUMPY


def check_fits(num_envs: int, num_agents: int) -> None:
    """Refuse, on the host, more envs or agents than one kernel launch can cover: the
    grid has at most 2**31 - 1 blocks along x (one per env) and 65,535 along y (an env's
    agents, 1,024 per block)."""
    try:
        launch_geometry(num_envs, num_agents)
    except LaunchError as err:
        raise ConfigError(f"env.num_envs={num_envs:,} with {num_agents:,} agents each does "
                          f"not fit the device: {err}") from err



def same_device(a: torch.device, b: torch.device) -> bool:
    """"cuda" and "cuda:0" are one card when 0 is the current one."""
    def numbered(d):
        d = torch.device(d)
        if d.type == "cuda" and d.index is None:
            return torch.device("cuda", torch.cuda.current_device())
        return d
    return numbered(a) == numbered(b)


def check_global_state(env: Env, wrapper: EnvWrapper) -> None:
    """An env's global state as it declares it: float32 [num_envs, global_state_size] on
    the store's device. Refused here, before training, with what it gave: inside the
    rollout a wrong one would fail as a bare shape error of torch's."""
    state = env.global_state(wrapper.store)
    want = (wrapper.num_envs, env.global_state_size)
    got = (f"{tuple(state.shape)} {state.dtype} on {state.device}"
           if isinstance(state, torch.Tensor) else type(state).__name__)
    if not (isinstance(state, torch.Tensor) and tuple(state.shape) == want
            and state.dtype == torch.float32 and same_device(state.device, wrapper.device)):
        raise ConfigError(f"trainer.critic=centralized: {type(env).__name__}.global_state(store) "
                          f"gave {got}; its global_state_size says float32 {want} on "
                          f"{wrapper.device}. Make the two agree.")


def _check_seat_memory(env: Env, c: TrainConfig, next_obs: bool) -> None:
    """Under a room's per-seat GPU memory limit (wd_teach.seat_memory), refuse before anything
    is on the GPU a run whose env state and rollout buffer alone are more than the seat has
    left: a clear error at the cell that asked, not an out-of-memory error half way in."""
    from wd_teach import backends

    if seat_memory.limit_bytes() is None:
        return
    device = backends.get(c.env.backend or default_backend()).device()
    if device.type != "cuda":
        return
    samples = c.trainer.steps * c.env.num_envs * env.num_agents
    # obs (and next_obs), one action, log-prob, value and reward per sample, float32 each
    rollout = 4 * samples * (env.obs_size * (2 if next_obs else 1) + 4)
    seat_memory.require_room(
        state_bytes(env, c.env.num_envs) + rollout,
        f"{c.env.num_envs:,} envs x {env.num_agents:,} agents x {c.trainer.steps} steps "
        "(the envs' state and the rollout buffer, before the policies)", device,
        fewer="Use fewer envs (env.num_envs, --envs N) or steps (trainer.steps).")


def progress_stream(modules=sys.modules):
    """Where progress bars write: stdout in a Jupyter kernel, where stderr shows on a pink
    background that learners read as an error; stderr elsewhere, so that a script's stdout
    keeps only its results."""
    return sys.stdout if "ipykernel" in modules else sys.stderr

class Trainer:
    """Everything one training run needs, built from a config (see wd_teach.train.config): an
    env name or folder, a YAML path, a dict, a TrainConfig, or an env object or class, whose
    folder's config.yaml gives the defaults. An env object is trained as it is, so a subclass
    made in a notebook trains too (a checkpoint of it resumes as the env its config names).
    `logger`: trainer.logger, where the metrics go besides the history (wd_teach.train.logger):
    'csv' (the default) or 'tensorboard'."""

    def __init__(self, config=None, *, overrides: dict | None = None, sets=(),
                 gpu: bool | None = None, logger: str | None = None):
        if logger is not None:
            overrides = merge(overrides or {}, {"trainer": {"logger": logger}})
        self.config: TrainConfig = load_config(config, overrides=overrides, sets=sets, gpu=gpu)
        c = self.config
        self.seed = c.trainer.seed
        self.algorithm = ALGORITHMS[c.algorithm_name]

        # Checks first, on the host: nothing is on the device until they pass.
        self.env = config if isinstance(config, Env) else make_env(c.env)
        mapping = {name: resolve_agents(p.agents, self.env, name) for name, p in c.policies.items()}
        self.groups = [dataclasses.replace(g, obs_size=self._obs_size(g),
                                           action_space=self._action_space(g))
                       for g in agent_groups(mapping, self.env.num_agents)]
        check_fits(c.env.num_envs, self.env.num_agents)
        self.centralized = c.trainer.critic == "centralized"
        if self.centralized and not self.env.global_state_size:
            raise ConfigError(f"trainer.critic=centralized: {type(self.env).__name__} declares "
                              "no global state for the critic to read (Env.global_state_size "
                              "and global_state(store)). Use trainer.critic: independent, or "
                              "give the env a global state.")
        # Each group learns with its own algorithm (policies.NAME.algorithm) or the run's.
        self.algorithms = {g.name: c.algorithm_of(g.name) for g in self.groups}
        modules = {name: ALGORITHMS[algorithm] for name, (algorithm, _) in self.algorithms.items()}
        for group in self.groups:
            modules[group.name].check(self.algorithms[group.name][1],
                                      c.trainer.steps * c.env.num_envs * group.size,
                                      group.name, steps=c.trainer.steps)
        can = together(m.CAPABILITIES for m in modules.values())  # what the rollout must do

        _check_seat_memory(self.env, c, can.next_obs)

        torch.manual_seed(self.seed)
        self.wrapper = EnvWrapper(self.env, c.env.num_envs, c.env.backend or default_backend(),
                                  seed=self.seed, auto_reset=False, check_actions=False)
        self.backend = self.wrapper.backend  # chosen once, by the wrapper
        if self.centralized:
            check_global_state(self.env, self.wrapper)
        self.device = self.wrapper.device
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        graphs = c.trainer.cuda_graphs and self.device.type == "cuda"
        graph_update = graphs and can.graph_update
        # The same optimiser arithmetic with graphs on or off: a capturable optimiser keeps
        # its step count on the device and rounds its bias correction there, so a replayed
        # update and a step-by-step one agree bit for bit only if both use it.
        capturable = self.device.type == "cuda" and can.graph_update
        self.fast = fast_floor(self.device)  # the floor this run takes (wd_teach.floors)
        if self.fast and self.centralized:
            print("note: trainer.critic=centralized runs on the plain floor (the fast floor's "
                  "policies have independent critics only).", file=progress_stream())
            self.fast = False
        if self.fast and any(g.obs_size != self.env.obs_size for g in self.groups):
            print("note: roles that see different observation sizes run on the plain floor "
                  "(the fast floor's policies read whole observations).", file=progress_stream())
            self.fast = False
        if self.fast and any(g.action_space is not None for g in self.groups):
            print("note: roles that choose from different action spaces run on the plain floor "
                  "(the fast floor's policies choose from the env's whole action space).",
                  file=progress_stream())
            self.fast = False
        # trainer.compile is a fast floor's option, on a GPU: elsewhere it does nothing.
        compiled = c.trainer.compile and self.fast and self.device.type == "cuda"
        if compiled:
            from wd_teach.fast.triton_kernels import require_triton

            require_triton("trainer.compile")
        classes, learner_for, fixed_weights = self._floor(compiled)
        self.policies = {}
        self.learners = {}
        state_size = self.env.global_state_size if self.centralized else 0
        for group in self.groups:
            spec = c.policies[group.name]
            policy = make_policy(can.policy, group.obs_size,
                                 self.env.action_space if group.action_space is None
                                 else group.action_space,
                                 spec.hidden, shared=spec.shared, activation=spec.activation,
                                 classes=classes, state_size=state_size).to(self.device)
            if spec.load is not None:  # the group's weights from another run
                load_group_weights(policy, group.name, spec.load, c.env.name)
            self.policies[group.name] = policy
            options = LearnerOptions(lr=spec.lr or c.trainer.lr, generator=self.generator,
                                     capturable=capturable,
                                     chunk_samples=c.trainer.chunk_samples)
            learner = learner_for(modules[group.name])
            self.learners[group.name] = learner(policy, self.algorithms[group.name][1], options)
        # Who learns, and who plays some rollouts as an earlier self (wd_teach/train/selfplay.py)
        self.learning = [g for g in self.groups if not c.policies[g.name].frozen]
        self.pools = {g.name: SnapshotPool(self.policies[g.name], c.policies[g.name].pool,
                                           c.policies[g.name].pool_every,
                                           c.policies[g.name].pool_play, self.seed + 7919 * i)
                      for i, g in enumerate(self.groups, start=1) if c.policies[g.name].pool}
        self._loss_names: dict[str, list[str]] = {}
        noise = ((c.algorithm.noise_theta, c.algorithm.noise_sigma)
                 if can.exploration_noise else None)
        self.acting = make_acting(self.wrapper, self.groups, list(self.policies.values()),
                                  self.seed, self.generator, noise)
        self.rollout = Rollout(self.wrapper, self.acting, c.trainer.steps,
                               next_obs=can.next_obs, graph=graphs,
                               precision=c.trainer.precision, log_probs=can.log_probs,
                               fixed_weights=fixed_weights, centralized=self.centralized)
        self._graph_update = graph_update
        self._graphed_update = maybe_graphed(graph_update, self._update, self.backend,
                                             watch=self._training_memory)
        self.iteration = 0
        self.env_steps = 0
        self.history: list[dict] = []
        self.wrapper.reset()

    def _obs_size(self, group) -> int:
        """The observation size `group`'s policy reads: its agents' role's (wd_teach.env,
        Env.role_observation_spaces), or the whole observation."""
        try:
            return self.env.obs_size_of(group.agents)
        except EnvError as err:
            raise ConfigError(f"policies.{group.name}.agents: {err}") from err

    def _action_space(self, group):
        """What `group`'s policy chooses from: its agents' role's space where the role has
        its own (Env.role_action_spaces), else None (the env's)."""
        try:
            space = self.env.action_space_of_agents(group.agents)
        except EnvError as err:
            raise ConfigError(f"policies.{group.name}.agents: {err}") from err
        return None if space == self.env.action_space else space

    def _floor(self, compiled: bool):
        """(policy classes, what makes an algorithm module's learner, the rollout's
        fixed-weights context) of this run's floor, `self.fast`. The fast floor's are twins
        of the plain ones (wd_teach/fast/): the same functions and parameters, fewer kernels
        on a GPU, their losses compiled where `compiled` (trainer.compile). On the plain
        floor nothing of wd_teach.fast is imported."""
        if not self.fast:
            return CLASSES, lambda algorithm: algorithm.Learner, nullcontext
        from wd_teach.fast import learners, policy

        return (policy.CLASSES, lambda algorithm: learners.learner_class(algorithm, compiled),
                policy.fixed_weights)

    # -- training ---------------------------------------------------------------------------

    @property
    def steps_per_iteration(self) -> int:
        """Environment steps per iteration: every env, `trainer.steps` times."""
        return self.config.trainer.steps * self.wrapper.num_envs

    def iterate(self, profile: bool = False) -> dict:
        """One rollout and one update per policy; returns the iteration's metrics row.

        A run that does not fit the GPU's memory (or a room seat's share of it) gets a
        TooLargeError that names the limit and what to ask for instead, not torch's
        allocator report; the memory the failed iteration took is handed back first."""
        try:
            return self._iterate(profile)
        except torch.cuda.OutOfMemoryError as err:
            said = str(err).split(". ")[0]
        # Out of the except block the traceback, and with it the failed iteration's tensors,
        # is gone: the cache can go back to the card (and the room's other seats).
        self.rollout.stats.clear()
        torch.cuda.empty_cache()
        raise TooLargeError(self._out_of_memory(said))

    def _out_of_memory(self, said: str) -> str:
        """Why an iteration ran out of GPU memory, and what to ask for instead."""
        c = self.config
        limit = seat_memory.limit_bytes()
        within = seat_memory.describe(limit) if limit else "the GPU's free memory"
        return (f"iteration {self.iteration + 1} of {c.env.name} ({self.wrapper.num_envs:,} envs, "
                f"trainer.steps={c.trainer.steps}) ran out of GPU memory: it needs more than "
                f"{within} ({said}). Ask for less: fewer envs (env.num_envs, or --envs N), "
                "fewer steps an iteration (trainer.steps) or smaller policies; `--envs auto` "
                "finds how many envs fit. The iteration did not count.")

    def _iterate(self, profile: bool) -> dict:
        timer = self.rollout.timer
        timer.enabled = profile
        start = time.perf_counter()
        # Self-play: a pooled group may play this rollout as an earlier self, and then
        # does not learn from it (it was not its current policy's experience).
        as_snapshot = [name for name, pool in self.pools.items() if pool.play()]
        try:
            buffer = self.rollout.collect()
        finally:
            for name in as_snapshot:
                self.pools[name].restore()
        device_values = self.rollout.stats.device_values(self.groups, self.wrapper.num_envs)
        with timer("training"):
            device_values.update(self._update_step(buffer, skip=as_snapshot))
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
        for name, pool in self.pools.items():
            row[f"{name}/played_snapshot"] = float(name in as_snapshot)
            row.update({f"{name}/{k}": math.nan for k in self._loss_names.get(name, ())
                        if f"{name}/{k}" not in row})  # no update: no loss this iteration
            pool.after_iteration(self.iteration)
        if profile:
            row.update({f"time/{k}": v for k, v in timer.pull().items()})
        self.history.append(row)
        return row

    def _update(self, buffer=None, skip=()) -> dict:
        """Each learning group's update from the rollout buffer (not a frozen group's, nor
        one named in `skip`); their losses, on the device."""
        buffer = buffer or self.rollout.buffer
        values = {}
        with precision_context(self.config.trainer.precision, self.device):
            for group in self.learning:
                if group.name in skip:
                    continue
                losses = self.learners[group.name].update(buffer.group(group))
                self._loss_names.setdefault(group.name, list(losses))
                values.update({f"{group.name}/{k}": v for k, v in losses.items()})
        return values

    def _update_step(self, buffer, skip=()) -> dict:
        """The update, replayed as a CUDA graph where it can be: not while a framework
        drives the backward pass (Lightning) or gradients are averaged over GPUs, nor in an
        iteration in which a group skips its update (the graph holds every group's)."""
        plain = all(lr.backward is None and lr.reduce is None
                    for lr in self.learners.values())
        for group in self.learning:  # outside the graph: what must differ between replays
            if group.name not in skip:
                self.learners[group.name].prepare(buffer.group(group))
        if plain and self._graph_update and not skip:
            return self._graphed_update()
        return self._update(buffer, skip)

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
    def update_replays(self) -> int:
        """How many times the recorded update has been replayed (0 with graphs off)."""
        return getattr(self._graphed_update, "replays", 0)

    @property
    def graphed(self) -> dict[str, bool]:
        """Which phases replay as CUDA graphs: the rollout, the update."""
        return {"rollout": self.rollout.graphed, "update": self._graph_update}

    def train(self, iterations: int | None = None, *, progress: bool = True,
              profile: bool = False, out: str | Path | None = None, callback=None) -> list[dict]:
        """Run `iterations` (default: trainer.iterations) with a progress bar. `out`: a
        folder for checkpoints, every trainer.checkpoint_every iterations and at the end,
        and for TensorBoard's event files (out/tensorboard/) with trainer.logger tensorboard.
        `callback(trainer, row)` after each iteration; returning True stops early."""
        # Plain-text tqdm, not tqdm.auto: in Jupyter that one wants ipywidgets (left out, so
        # that the static book fetches no widget script) and warns "IProgress not found".
        # In a notebook it writes to stdout: Jupyter shows stderr on a pink background, which
        # reads as an error.
        from tqdm import tqdm

        iterations = self.config.trainer.iterations if iterations is None else int(iterations)
        if iterations < 0:
            raise TrainError(f"train({iterations}): iterations cannot be negative.")
        every = self.config.trainer.checkpoint_every
        log = open_log(self.config.trainer.logger, out)  # checked before the first iteration
        bar = tqdm(range(iterations), disable=not progress, unit="it", file=progress_stream(),
                   desc=f"{self.config.env.name} {self.config.algorithm_name}")
        try:
            for _ in bar:
                row = self.iterate(profile)
                # First the callback: it may change the row (data-parallel runs average it
                # over the GPUs) before the bar shows it, a log writes it and a checkpoint
                # keeps it.
                stop = callback is not None and callback(self, row)
                if log is not None:
                    log.write(row)
                if stop:
                    break
                bar.set_postfix(self.summary(row), refresh=False)
                if out is not None and every and self.iteration % every == 0:
                    self.save(Path(out) / f"checkpoint_{self.iteration:05d}{SUFFIX}")
        finally:
            if log is not None:
                log.close()
        if out is not None:
            self.save(Path(out) / f"checkpoint{SUFFIX}")
        return self.history

    def summary(self, row: dict) -> dict[str, str]:
        """The few numbers a progress bar shows: each group's latest return, steps/s."""
        shown = {}
        for group in self.groups:
            value = self.latest(f"{group.name}/return")
            shown[group.name] = "-" if value is None else f"{value:.3g}"
        for metric in self.env.episode_metrics():  # what the env itself reports
            value = self.latest(per_episode(metric))
            if value is not None:
                shown[metric] = f"{value:.3g}"
        shown["steps/s"] = f"{row['steps_per_second']:,.0f}"
        return shown

    @property
    def metric_labels(self) -> dict[str, str]:
        """The env's episode metrics as the history names them, with their labels."""
        return {per_episode(name): m.label for name, m in self.env.episode_metrics().items()}

    def latest(self, key: str) -> float | None:
        """The last finite value of `key` in the history (returns are NaN in iterations
        where no episode ended)."""
        for row in reversed(self.history):
            value = row.get(key)
            if value is not None and math.isfinite(value):
                return value
        return None

    # -- evaluation -------------------------------------------------------------------------

    def evaluate(self, num_envs: int | None = None, steps: int | None = None, *,
                 greedy: bool = True, random: tuple[str, ...] = (), record: bool = False,
                 seed: int | None = None, backend: str | None = None) -> Evaluation:
        """Play the first episode of `num_envs` fresh envs (default: as many as training)
        with the trained policies: the most probable action (`greedy`) or a draw.
        Groups named in `random` act uniformly at random instead: the baseline.

        `record`: keep env 0's state arrays at every step, the start included, up to the
        end of its episode: the frames of an animation. The training envs are not touched.
        """
        return play_first_episodes(self, num_envs, steps, greedy=greedy, random=random,
                                   record=record, seed=seed, backend=backend)

    # -- checkpoints ------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything a run needs to go on exactly where it is."""
        store = self.wrapper.store
        arrays = {n: store[n].detach().cpu().clone() for n in store.names
                  if not n.endswith("_pristine")}
        return {
            "format": FORMAT_VERSION,
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
            "pools": {name: pool.state_dict() for name, pool in self.pools.items()},
        }

    def save(self, path: str | Path) -> Path:
        """Write a checkpoint (name it *.safetensors): whole or not at all, so a crash while
        writing leaves the file that was there before."""
        return write_checkpoint(self.state_dict(), path)

    def load(self, path: str | Path) -> Trainer:
        """Go on from a checkpoint of this same run (same env, policies, sizes)."""
        return self.load_state_dict(read_checkpoint(path), where=str(path))

    def load_state_dict(self, state: dict, where: str = "the checkpoint") -> Trainer:
        """Go on from `state`, all or nothing. Everything is checked before anything
        changes; should setting it still fail half way, the trainer is put back exactly as
        it was, so a failed load never leaves a trainer half one run, half another."""
        check_compatible(self, state, where)
        before = self.state_dict()
        try:
            self._set_state(state)
        except Exception as err:
            self._set_state(before)
            raise TrainError(f"loading {where} failed half way ({type(err).__name__}: "
                             f"{err}); the trainer is back as it was before the load.") from err
        return self

    def _set_state(self, state: dict) -> None:
        """Copy a checked state into the trainer: in place where the rollout and CUDA
        graphs hold the tensors (store arrays, weights), set otherwise."""
        for name, learner in self.learners.items():
            learner.load_state_dict(state["learners"][name])
        self.acting.load_state_dict(state["acting"])
        for name, array in state["store"].items():
            self.wrapper.store[name].copy_(array)
        self.rollout.stats.load_state_dict(state["stats"])
        self.generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        for name, pool in self.pools.items():
            pool.load_state_dict(state.get("pools", {}).get(name))
        self.iteration, self.env_steps = state["iteration"], state["env_steps"]
        self.history = [dict(row) for row in state["history"]]

    @classmethod
    def from_checkpoint(cls, path: str | Path, gpu: bool | None = None,
                        logger: str | None = None) -> Trainer:
        """A trainer built from the config a checkpoint holds, and loaded from it. `logger`:
        where its metrics go from now on (None: as the checkpoint's run logged them);
        it changes nothing of the run itself."""
        return cls.from_state(read_checkpoint(path), str(path), gpu=gpu, logger=logger)

    @classmethod
    def from_state(cls, state: dict, where: str, gpu: bool | None = None,
                   logger: str | None = None) -> Trainer:
        """`from_checkpoint` of a checkpoint already read (`where` names it in errors)."""
        if not isinstance(state.get("config"), dict):
            raise TrainError(f"{where} holds no run config: it is not a whole wd-teach "
                             "training checkpoint.")
        return cls(saved_run(state["config"]), gpu=gpu, logger=logger
                   ).load_state_dict(state, where=where)

    def __repr__(self) -> str:
        groups = ", ".join(f"{g.name} ({g.size} agents)" for g in self.groups)
        return (f"Trainer({self.config.env.name}, {self.config.algorithm_name}, "
                f"{self.wrapper.num_envs} envs on {self.backend}, policies: {groups}, "
                f"iteration {self.iteration})")
