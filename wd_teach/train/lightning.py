"""The same training as a PyTorch Lightning module.

Lightning organises a training run (the loop, logging, checkpoints, callbacks, devices)
around a LightningModule and a DataLoader. End-to-end GPU RL has no dataset to load:
experience is made on the device, by the rollout. So the data source here is a stand-in,
`Iterations`, that yields one token per training iteration; `training_step` makes the
data itself (a rollout of every env on the device) and learns from it, with Lightning's
manual optimisation driving the very optimisers and the very update of wd_teach.train.trainer:

    module = TrainingModule("cartpole")          # builds a wd_teach Trainer inside
    trainer = make_lightning_trainer(module, iterations=20, out="runs/lightning")
    trainer.fit(module)

What Lightning adds: `self.log_dict` (its loggers: CSV, and TensorBoard with
`logger="tensorboard"`), callbacks (ModelCheckpoint,
and any of yours), its checkpoint files (the module's weights and optimisers, plus the
whole wd_teach state in `on_save_checkpoint`, so that `load_lightning_checkpoint` and a
new fit go on exactly), the device it runs on, and several GPUs: with
`make_lightning_trainer(module, devices=2)` Lightning's DDP strategy starts one process per
GPU (it runs the script again for each) and each process's module trains its own envs,
seeded `trainer.seed + rank`, the gradients averaged by wd_teach.scale.distributed (see
`setup` and `on_train_start`). What it costs: a little Python per iteration, which
`measure_overhead` measures against the plain Trainer on the same config.

Lightning is imported as `lightning.pytorch`, or under its older name `pytorch_lightning`
where only that is installed: the API used here is the same in both.
"""

from __future__ import annotations

import os
import time
import warnings
from contextlib import nullcontext
from functools import partial

import torch
from torch.utils.data import DataLoader, Dataset

with warnings.catch_warnings():
    # Lightning's progress bar takes tqdm.auto where ipywidgets is installed, and tqdm.auto
    # warns "IProgress not found" where that ipywidgets cannot draw (no widget front end, as
    # in a kernel run by nbval). wd-teach's bars are plain text (train/trainer.py): the
    # warning, printed on red in a notebook, would only look like an error.
    warnings.filterwarnings("ignore", message="IProgress not found")
    try:
        import lightning.pytorch as pl
    except ImportError:  # the older package name, same API
        import pytorch_lightning as pl

from wd_teach.device import gpu_available
from wd_teach.errors import TrainError
from wd_teach.train.logger import tensorboard_folder
from wd_teach.train.trainer import Trainer

#: The key under which a Lightning checkpoint holds the wd_teach state (env, RNGs, ...).
STATE_KEY = "wd_teach"


class Iterations(Dataset):
    """The data source: `count` tokens, one per training iteration. The experience itself
    is made by the rollout inside `training_step`, on the device."""

    def __init__(self, count: int):
        self.count = int(count)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> int:
        return index


class TrainingModule(pl.LightningModule):
    """A wd_teach Trainer as a LightningModule (`self.run`); same config arguments."""

    def __init__(self, config=None, *, overrides: dict | None = None, sets=(),
                 gpu: bool | None = None, profile: bool = False, logger: str | None = None,
                 step_hooks: bool = False):
        super().__init__()
        self._arguments = {"config": config, "overrides": overrides, "sets": list(sets),
                           "gpu": gpu, "logger": logger}
        _use_launched_gpu(gpu)
        self._build()
        self.profile = profile
        self.step_hooks = step_hooks
        self.iterations = self.run.config.trainer.iterations  # one epoch of this many steps
        self.automatic_optimization = False  # RL updates: the learners step themselves
        self._ranked = False  # set once this process's rank has its own run (setup)

    def _build(self, seed_offset: int = 0) -> None:
        """The wd_teach Trainer (`self.run`), its seed moved by `seed_offset` (a rank's)."""
        arguments = dict(self._arguments)
        if seed_offset:
            seed = self.run.seed + seed_offset
            arguments["sets"] = [*arguments["sets"], f"trainer.seed={seed}"]
        self.run = Trainer(**arguments)
        self.policies = torch.nn.ModuleDict(self.run.policies)  # Lightning sees the weights
        self._slots = [(learner, name) for learner in self.run.learners.values()
                       for name in learner.optimizer_names]
        self._counter = StepCounter([getattr(learner, name) for learner, name in self._slots])

    def setup(self, stage: str) -> None:
        """Under Lightning's DDP (several processes, the process group joined, this
        process's device set): a rank other than 0 builds its own run again, seeded
        `trainer.seed + rank`, so that the ranks see different experience. (The script
        that built the module cannot know its rank: Lightning gives it only now.)"""
        if self.trainer.world_size == 1 or self._ranked:
            return
        if self.run.iteration:
            raise TrainError(f"this module has trained {self.run.iteration} iterations (or "
                             "was loaded from a checkpoint), which hold one process's envs: "
                             "a fit on several devices starts a fresh module.")
        here = self.trainer.strategy.root_device
        if self.global_rank != 0 or next(self.policies.parameters()).device != here:
            from wd_teach.train.data_parallel import use_device

            use_device(self.local_rank, here.type == "cuda")
            self._build(seed_offset=self.global_rank)
        self._ranked = True

    def configure_optimizers(self):
        """The learners' own optimisers, so Lightning checkpoints and wraps them."""
        return [getattr(learner, name) for learner, name in self._slots]

    def on_train_start(self) -> None:
        """Decide who steps the optimisers. On one device with Lightning's plain precision,
        Lightning does nothing to a gradient, so the learners keep their own optimisers and
        backward pass, and the update stays one recorded CUDA graph; the module then tells
        Lightning how many steps were taken. With several devices or a precision plugin
        (which must see every backward pass), or `step_hooks=True` (callbacks that hook
        into every backward and step), the learners get Lightning's wrapped optimisers and
        `manual_backward` instead, and the update runs step by step.

        On several devices the gradients are also averaged over the ranks, the way
        wd_teach.scale.distributed does it (`make_data_parallel`: rank 0's weights
        everywhere, each learner's `reduce` hook); `training_step` keeps the DDP wrapper's
        own sync off."""
        self.handed_over = self.step_hooks or not _lightning_adds_nothing(self.trainer)
        self._counter.clear()
        if self.trainer.world_size > 1:
            from wd_teach.train.data_parallel import make_data_parallel

            make_data_parallel(self.run)
        if not self.handed_over:
            return
        for (learner, name), optimizer in zip(self._slots, self._lightning_optimizers(),
                                              strict=True):
            setattr(learner, name, optimizer)
            learner.backward = self.manual_backward

    def on_train_end(self) -> None:
        """Give the learners their plain optimisers back: the run goes on without Lightning
        (and, on several devices, in this process alone)."""
        for learner, name in self._slots:
            optimizer = getattr(learner, name)
            setattr(learner, name, getattr(optimizer, "optimizer", optimizer))
            learner.backward = None
            learner.reduce = None

    def _lightning_optimizers(self) -> list:
        wrapped = self.optimizers()
        return wrapped if isinstance(wrapped, list) else [wrapped]

    def on_fit_end(self) -> None:
        """A fit ends with Lightning moving the model and the optimisers' state to the CPU.
        The run lives where its envs live: move them back, so it can go on (or evaluate)."""
        self.to(self.run.device)
        for learner, name in self._slots:
            for state in getattr(learner, name).state.values():
                for key, value in state.items():
                    if key != "step" and isinstance(value, torch.Tensor):  # Adam's step
                        state[key] = value.to(self.run.device)  # stays where torch keeps it

    def train_dataloader(self) -> DataLoader:
        return DataLoader(Iterations(self.iterations), batch_size=None)

    def training_step(self, batch, batch_idx):
        """One iteration: a rollout of every env on the device, then each policy's update
        (see on_train_start for whose optimisers step); the metrics come to the host once,
        as in Trainer.iterate. The whole row goes to Lightning's loggers at step env_steps
        (the plain Trainer's TensorBoard log steps the same way); the returns also go
        through `self.log`, for the progress bar and for callbacks (trainer.callback_metrics).
        Only they: `self.log` costs Lightning some half a millisecond of Python per metric
        and step, more than a CartPole iteration's update takes on a GPU.

        On several devices the DDP wrapper's gradient sync is blocked for the step: its
        hooks expect one backward pass per forward and every parameter in each, and an
        update makes many passes (PPO: epochs x minibatches), each of one policy; the
        learners' `reduce` hook averages each pass's gradients instead. The row is then
        averaged over the ranks, env steps summed, as a data-parallel Trainer's is."""
        replays = self.run.update_replays
        several = self.trainer.world_size > 1
        with self.trainer.strategy.block_backward_sync() if several else nullcontext():
            row = self.run.iterate(profile=self.profile)
        if several:
            from wd_teach.train.data_parallel import average_row

            average_row(self.run, row)
        if not self.handed_over:  # tell Lightning how many steps the learners took
            counts = self._counter.pull(replayed=self.run.update_replays > replays)
            for optimizer, steps in zip(self._lightning_optimizers(), counts, strict=True):
                _count_steps(optimizer, steps)
        shown = {f"{g.name}/return": row[f"{g.name}/return"] for g in self.run.groups}
        self.log_dict(shown, on_step=True, on_epoch=False, prog_bar=True, logger=False,
                      batch_size=1)
        logged = {k: v for k, v in row.items() if k != "iteration"}
        for logger in self.loggers:
            logger.log_metrics(logged, step=int(row["env_steps"]))

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint[STATE_KEY] = self.run.state_dict()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.run.load_state_dict(checkpoint[STATE_KEY], where="the Lightning checkpoint")

    def load_lightning_checkpoint(self, path) -> TrainingModule:
        """Go on from a checkpoint a fit wrote: the next fit continues the run exactly.
        (Lightning's own `fit(ckpt_path=...)` would restore the finished epoch too, and
        with it the end of training.)"""
        checkpoint = _read_lightning_checkpoint(path)
        self.on_load_checkpoint(checkpoint)
        return self

    @property
    def history(self) -> list[dict]:
        return self.run.history


class StepCounter:
    """How many times each optimiser stepped since the last `pull`, counted by a hook
    after every step. A replayed CUDA graph runs no Python, so no hook sees its steps; it
    repeats exactly what was recorded, so a replay took as many steps as the recording
    counted (the recording's Python ran, and its hooks counted, in the iteration that
    recorded it)."""

    def __init__(self, optimizers):
        self.counts = [0] * len(optimizers)
        self.recorded = [0] * len(optimizers)
        for index, optimizer in enumerate(optimizers):
            optimizer.register_step_post_hook(partial(self._count, index))

    def _count(self, index: int, *_) -> None:
        self.counts[index] += 1

    def pull(self, replayed: bool) -> list[int]:
        """The steps since the last pull; `replayed`: whether a recorded update ran."""
        counted, self.counts = self.counts, [0] * len(self.counts)
        if replayed and any(counted):  # the iteration that recorded the graph
            self.recorded = counted
        elif replayed:
            counted = self.recorded
        return counted

    def clear(self) -> None:
        """Forget steps taken elsewhere (through Lightning's own wrappers)."""
        self.counts = [0] * len(self.counts)


def _lightning_adds_nothing(trainer) -> bool:
    """Whether Lightning's optimiser wrapper and manual_backward would add nothing to a
    plain step: one device, and the plain precision plugin (the run's own bf16 autocast
    happens inside the update, not in Lightning)."""
    plain_precision = type(trainer.precision_plugin) is pl.plugins.precision.Precision
    return isinstance(trainer.strategy, pl.strategies.SingleDeviceStrategy) and plain_precision


def _count_steps(optimizer, steps: int) -> None:
    """Advance Lightning's count of optimiser steps (`trainer.global_step`, which its
    checkpoint callback and step-based limits read) by `steps`, through the hooks its
    manual-optimisation loop puts around every `LightningOptimizer.step`."""
    for _ in range(steps):
        optimizer._on_before_step()
        optimizer._on_after_step()


def _use_launched_gpu(gpu: bool | None) -> None:
    """In a process that a launcher started as one of several on a GPU machine (Lightning's
    DDP runs the script again with LOCAL_RANK and WORLD_SIZE set; torchrun sets them too),
    its GPU, cuda:LOCAL_RANK, before the run puts anything on a GPU."""
    several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if several and "LOCAL_RANK" in os.environ and (gpu_available() if gpu is None else gpu):
        from wd_teach.train.data_parallel import use_device

        use_device(int(os.environ["LOCAL_RANK"]), gpu=True)


def _read_lightning_checkpoint(path) -> dict:
    """A checkpoint Lightning wrote (a pickle, its format), read with `weights_only=True`:
    torch's restricted unpickler, which builds tensors, numbers, strings and containers and
    refuses anything else, so a stranger's file cannot run code. Bad files: a TrainError."""
    from pickle import UnpicklingError

    from wd_teach.errors import TrainError

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise TrainError(f"no Lightning checkpoint at {path}: no such file.") from None
    except (UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise TrainError(f"{path} is not a readable Lightning checkpoint: it is cut short, "
                         f"damaged or holds more than weights ({first}).") from None
    if not isinstance(checkpoint, dict) or STATE_KEY not in checkpoint:
        raise TrainError(f"{path} is not a Lightning checkpoint of a wd-teach TrainingModule "
                         f"(it has no {STATE_KEY!r}).")
    return checkpoint


def make_lightning_trainer(module: TrainingModule, iterations: int | None = None, *,
                           out=None, callbacks=(), progress: bool = True, devices: int = 1,
                           **options):
    """A Lightning Trainer that runs `iterations` training steps of `module` on the device
    its envs live on; with `out`, CSV logs (out/logs/) and a checkpoint at the end go there,
    and with the module's trainer.logger tensorboard, TensorBoard's event files
    (out/tensorboard/). `devices=N`: N processes (GPUs, or CPU processes joined by gloo),
    Lightning's DDP strategy unless `strategy=` says otherwise; each rank runs all
    `iterations` (no distributed sampler splits them)."""
    from wd_teach.train.data_parallel import check_world_size

    module.iterations = iterations = iterations or module.run.config.trainer.iterations
    cuda = module.run.device.type == "cuda"
    check_world_size(devices, cuda)
    options.setdefault("strategy", "ddp" if devices > 1 else "auto")
    callbacks = list(callbacks)
    events = tensorboard_folder(module.run.config.trainer.logger, out)  # checked first
    if out is not None:
        callbacks.append(pl.callbacks.ModelCheckpoint(dirpath=out, filename="lightning",
                                                      save_last=False))
    return pl.Trainer(
        # One epoch of `iterations` steps. (max_steps would count optimiser steps, and an
        # iteration of PPO takes many.)
        accelerator="gpu" if cuda else "cpu", devices=devices, max_epochs=1,
        callbacks=callbacks, logger=_loggers(out, events), use_distributed_sampler=False,
        enable_checkpointing=out is not None, enable_progress_bar=progress,
        enable_model_summary=False, log_every_n_steps=1, num_sanity_val_steps=0,
        **options)


def _loggers(out, events):
    """Lightning's loggers for a run folder: CSV always, TensorBoard into `events`."""
    if out is None:
        return False
    loggers = [pl.loggers.CSVLogger(out, name="logs")]
    if events is not None:
        # version="": the event files straight in `events`, not in a version_N folder;
        # no hp_metric placeholder scalar (this module logs no hyperparameters).
        loggers.append(pl.loggers.TensorBoardLogger(events.parent, name=events.name,
                                                    version="", default_hp_metric=False))
    return loggers


class Throughput(pl.Callback):
    """Env steps per second over the training steps after `warmup`, clocked from the
    start of the first measured step to the end of the last (each step ends with the
    metrics' trip to the host, so the device has finished by then)."""

    def __init__(self, warmup: int = 1):
        self.warmup = warmup
        self.start = self.end = None
        self.steps = 0

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if batch_idx == self.warmup:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if batch_idx >= self.warmup:
            self.end = time.perf_counter()
            self.steps += module.run.steps_per_iteration

    @property
    def steps_per_second(self) -> float:
        return self.steps / (self.end - self.start)


def measure_overhead(config=None, iterations: int = 10, warmup: int = 2, *,
                     overrides: dict | None = None, sets=(), gpu: bool | None = None) -> dict:
    """Env steps per second of the plain Trainer and of the Lightning module, same config
    and seed, `iterations` timed iterations after `warmup`; and Lightning's overhead,
    1 - lightning / plain."""
    plain = Trainer(config, overrides=overrides, sets=sets, gpu=gpu, logger="csv")
    plain.train(warmup, progress=False)
    start = time.perf_counter()
    plain.train(iterations, progress=False)
    plain_rate = iterations * plain.steps_per_iteration / (time.perf_counter() - start)

    module = TrainingModule(config, overrides=overrides, sets=sets, gpu=gpu, logger="csv")
    clock = Throughput(warmup)
    make_lightning_trainer(module, warmup + iterations, callbacks=[clock],
                           progress=False).fit(module)
    lightning_rate = clock.steps_per_second
    return {"env": plain.config.env.name, "algorithm": plain.config.algorithm_name,
            "num_envs": plain.wrapper.num_envs, "backend": plain.backend,
            "iterations": iterations, "plain_steps_per_second": plain_rate,
            "lightning_steps_per_second": lightning_rate,
            "overhead": 1 - lightning_rate / plain_rate}
