"""The `wd-teach` command.

    wd-teach doctor            what this machine has, and what to do about what it lacks;
                               exit 0 when some backend can run kernels here, 1 when none
                               (it runs without Numba and without a CUDA build of torch)
    wd-teach demo [--backend]  push a small particle world and step it with a kernel on
                               every backend that runs here, checked against NumPy
    wd-teach train ENV         train on ENV (a shipped env's name, or any env folder's
                               path) with its default config; metrics, a learning curve and
                               checkpoints go to --out; --gpus N trains on N GPUs, one
                               process each, the gradients averaged (wd_teach.scale.distributed);
                               started by torchrun (`torchrun --nproc-per-node N -m wd_teach
                               train ENV`, one or several machines) each process is one rank;
                               --envs auto: as many envs as fit the GPU (wd_teach.scale.autoscale);
                               a folder that holds a run is never overwritten (--force
                               replaces it; --resume goes on from it); --logger tensorboard
                               also writes TensorBoard event files as it trains
    wd-teach play RUN          a trained run's policies on fresh episodes (--episodes N,
                               --backend, --seed, --sample), with every setting of the run
                               (precision, episode length, env parameters), each printed
                               with where it came from; the scores `train` printed at its
                               end, and a video of one game (--video: mp4 with the [video]
                               extra, else GIF) where its env draws its games
    wd-teach bench [WHAT]      throughput against envs and agents: env, sampler, rollout,
                               train or all (wd_teach.scale.bench); a table, and JSON with --out
    wd-teach course DIR        an nbgrader course in DIR: each lesson's exercise an assignment
                               whose test cell runs the lesson's checker (wd_teach.room)
    wd-teach grades            the course's gradebook as a table of seats by exercise
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Only what every command needs: the rest is imported inside each command, so that
# `wd-teach doctor` runs on a machine that lacks the very pieces it is there to report.
from wd_teach import backends as backend_list
from wd_teach.backends import ALL as ENV_BACKENDS
from wd_teach.errors import WdTeachError
from wd_teach.train.logger import LOGGERS, TENSORBOARD_FOLDER


def _doctor(args: argparse.Namespace) -> int:
    """The table of what this machine has; exit 0 when some backend can run kernels."""
    from wd_teach.device import doctor

    report = doctor()
    return 0 if report.backends else 1


def _demo(args: argparse.Namespace) -> int:
    import numpy as np

    import wd_teach

    sizes = wd_teach.lesson_sizes()
    backends = ([wd_teach.choose_backend(args.backend)] if args.backend
                else list(wd_teach.discover().backends))
    if not backends:
        print("no backend can run kernels here; see `wd-teach doctor`.", file=sys.stderr)
        return 1
    from wd_teach.lessons.demo import DEMO_CUDA_C, move, reference_move  # Numba: only now
    from wd_teach.timing import time_calls

    rng = np.random.default_rng(args.seed)
    pos = rng.uniform(-1, 1, (sizes.num_envs, sizes.num_agents)).astype(np.float32)
    vel = rng.uniform(-1, 1, (sizes.num_envs, sizes.num_agents)).astype(np.float32)
    want = pos.copy()
    for _ in range(args.steps):
        want = reference_move(want, vel, dt=0.01)

    print(f"{sizes.num_envs} envs x {sizes.num_agents} agents, {args.steps} steps, "
          f"on {'the GPU' if wd_teach.gpu_available() else 'the CPU (CUDA simulator)'}")
    print(f"{'backend':<8} {'agent-steps/s':>14} {'max |error|':>12}")
    failed = False
    for backend in backends:
        store = wd_teach.DataStore(sizes.num_envs, sizes.num_agents)
        store.push("pos", pos, reset=True)
        store.push("vel", vel)
        store.set_constant("dt", 0.01)
        launcher = wd_teach.KernelLauncher(store, backend)
        launcher.load(DEMO_CUDA_C if launcher.backend.reads_cuda_c else move)
        launcher.launch("move")  # compile and warm up outside the timed loop
        store.restore()
        seconds = time_calls(lambda launcher=launcher: launcher.launch("move"), args.steps,
                             device=store.device).total
        error = float(np.abs(store.pull("pos") - want).max())
        failed |= not error < 1e-4
        rate = args.steps * sizes.agent_slots / seconds
        print(f"{backend:<8} {rate:>14,.0f} {error:>12.2e}")
    return 1 if failed else 0


def _train(args: argparse.Namespace) -> int:
    """A new run, or with --resume one that goes on. Every refusal comes before anything
    is written, and a folder that holds a run is never overwritten unless --force."""
    from wd_teach.train.config import load_config
    from wd_teach.train.runs import check_run_folder
    from wd_teach.train.trainer import Trainer

    _check_iterations(args.iterations)
    place = _launched(args)
    if args.resume:
        return _resume(args)
    overrides: dict = {}
    if args.backend:
        overrides.setdefault("env", {})["backend"] = args.backend
    if args.seed is not None:
        overrides.setdefault("trainer", {})["seed"] = args.seed
    if isinstance(args.envs, int):
        overrides.setdefault("env", {})["num_envs"] = args.envs
    if args.logger:
        overrides.setdefault("trainer", {})["logger"] = args.logger
    # Bad input first: the config is checked before the folder is looked at or the GPU used.
    config = load_config(args.config or args.env,
                         overrides={"env": {"name": args.env}, **overrides}, sets=args.set)
    # runs/<the env folder's name>: an env given as a path must not put its runs in itself
    out = Path(args.out or Path("runs") / Path(args.env).name)
    if place is not None:
        return _train_launched(args, config, out, place)
    check_run_folder(out, args.env, force=args.force)
    if args.envs == "auto":
        config = load_config(config, overrides={"env": {"num_envs": _auto_envs(args)}})
    if args.gpus != 1:
        return _train_data_parallel(args, config, out)
    return _train_into(Trainer(config), out, args)


def _resume(args: argparse.Namespace) -> int:
    """--resume CHECKPOINT (or a run folder: its latest checkpoint). By default the run
    goes on in the checkpoint's own folder; --out writes it elsewhere."""
    from wd_teach.errors import TrainError
    from wd_teach.train.checkpoint import read_checkpoint
    from wd_teach.train.runs import check_run_folder, checkpoint_to_resume
    from wd_teach.train.trainer import Trainer

    _refuse_what_a_checkpoint_fixes(args)
    checkpoint = checkpoint_to_resume(args.resume)
    theirs = read_checkpoint(checkpoint).get("env")
    if _env_name(theirs) != _env_name(args.env):
        raise TrainError(f"--resume {checkpoint} is a checkpoint of {theirs!r}, but the "
                         f"command names {args.env!r}: write `wd-teach train {theirs} "
                         f"--resume {checkpoint}`.")
    out = Path(args.out) if args.out else checkpoint.parent
    check_run_folder(out, args.env, force=args.force, resuming=checkpoint)
    return _train_into(Trainer.from_checkpoint(checkpoint, logger=args.logger), out, args)


def _env_name(name_or_path) -> str:
    """The name a config gives an env (a folder as its absolute path), for comparing."""
    from wd_teach.env.registry import find_env

    try:
        return find_env(name_or_path).name
    except WdTeachError:
        return str(name_or_path)


#: What a checkpoint fixes, so --resume cannot change it: each flag and why.
FIXED_BY_A_CHECKPOINT = {
    "--envs": "the checkpoint holds the envs' state at their number",
    "--seed": "the checkpoint holds the random streams the run's seed started",
    "--set": "the checkpoint holds the run's config",
    "--config": "the checkpoint holds the run's config",
    "--backend": "the checkpoint's config names the backend its env state and random "
                 "streams come from",
    "--gpus": "a checkpoint holds one process's envs, so it goes on with one GPU",
}


def _refuse_what_a_checkpoint_fixes(args: argparse.Namespace) -> None:
    """--resume goes on exactly as the run would have: refuse, in one message, every flag
    given that would change what the checkpoint fixes (--iterations, --out, --quiet,
    --profile, --logger and --force apply)."""
    from wd_teach.errors import TrainError

    given = {"--envs": args.envs is not None, "--seed": args.seed is not None,
             "--set": bool(args.set), "--config": args.config is not None,
             "--backend": args.backend is not None, "--gpus": args.gpus != 1}
    refused = [f"{flag} ({FIXED_BY_A_CHECKPOINT[flag]})" for flag, is_given in given.items()
               if is_given]
    if refused:
        raise TrainError(f"--resume goes on exactly as the checkpoint's run would have, so it "
                         f"does not take {'; '.join(refused)}. Leave them out to go on, or "
                         "start a new run with them (without --resume).")


def _check_iterations(iterations: int | None) -> None:
    """--iterations: leave it out for the config's trainer.iterations, or at least 1."""
    from wd_teach.errors import TrainError

    if iterations is not None and iterations < 1:
        raise TrainError(f"--iterations {iterations}: a run needs at least 1 iteration. "
                         "Leave it out for the config's trainer.iterations.")


def _train_into(trainer, out: Path, args: argparse.Namespace) -> int:
    """Train and write the run's files into `out`, a folder check_run_folder allowed;
    with --force, the old run's files are deleted first so the two are never mixed."""
    from wd_teach.files import write_text
    from wd_teach.train.runs import clear_run_folder

    if args.force:
        clear_run_folder(out)
    write_text(out / "config.yaml", trainer.config.to_yaml())
    where = "GPU" if trainer.device.type == "cuda" else "CPU"
    print(f"{trainer}\non the {where}; writing to {out}/")
    _tensorboard_hint(trainer.config, out)
    trainer.train(args.iterations, progress=not args.quiet, profile=args.profile, out=out)
    _write_results(trainer.history, trainer.config, [g.name for g in trainer.groups], out,
                   args.profile)
    _print_evaluation(trainer)
    return 0


def _print_evaluation(trainer) -> None:
    """The trained policies' score: a training episode's return mixes the policy with its
    exploration and with a policy that changed during the episode, so it can be far below
    (or above) what the final policy does. This plays fresh episodes with the most
    probable actions: the number a learner should read (`wd-teach play` prints it again)."""
    from wd_teach.train.evaluation import EVALUATION_EPISODES

    print(trainer.evaluate(num_envs=EVALUATION_EPISODES).describe())


def _train_data_parallel(args: argparse.Namespace, config, out: Path) -> int:
    """--gpus N: N processes, one GPU each (wd_teach.scale.distributed); rank 0 writes."""
    from wd_teach.scale.distributed import check_world_size, train_data_parallel

    check_world_size(args.gpus, gpu=True)
    _open_data_parallel_run(args, config, out, args.gpus, "GPUs")
    history = train_data_parallel(config, args.gpus, args.iterations, out=out, gpu=True,
                                  progress=not args.quiet, profile=args.profile)
    _write_results(history, config, list(config.policies), out, args.profile)
    return 0


def _launched(args: argparse.Namespace):
    """Started by torchrun (or a launcher that sets its variables) as one of several
    processes: this process's place (wd_teach.scale.distributed.launched_place), the flags
    that cannot go with it refused; None for a process that trains alone."""
    from wd_teach.errors import TrainError
    from wd_teach.scale.distributed import launched_place

    place = launched_place()
    if place is None:
        return None
    several = place.world_size > 1
    given = {"--gpus": (args.gpus != 1, "torchrun already started the processes; its "
                        "--nproc-per-node says how many on each machine, one GPU each"),
             "--resume": (several and args.resume is not None, "a checkpoint holds one "
                          "process's envs, so it goes on in one process, without torchrun"),
             "--envs auto": (several and args.envs == "auto", "give every rank the same "
                             "--envs N (measure it once with `wd-teach train ENV --envs "
                             "auto` in one process)")}
    refused = [f"{flag} ({why})" for flag, (is_given, why) in given.items() if is_given]
    if refused:
        raise TrainError(f"this process was started by torchrun as rank {place.rank} of "
                         f"{place.world_size}, so it does not take {'; '.join(refused)}.")
    return place if several else None


def _train_launched(args: argparse.Namespace, config, out: Path, place) -> int:
    """Under torchrun: this process is one rank (wd_teach.scale.distributed). Rank 0 checks
    and writes the run folder, and its refusal stops every rank; each rank ends with a line
    of its seed and its weights' checksum, the same on every rank."""
    from wd_teach.device import gpu_available
    from wd_teach.scale.distributed import (
        check_local_gpus,
        process_group,
        rank_zero_decides,
        train_rank,
    )

    gpu = gpu_available() and backend_list.runs_kernels(config.env.backend)  # NumPy: the CPU
    check_local_gpus(place, gpu)
    with process_group(place, gpu):
        rank_zero_decides(_open_launched_run, args, config, out, place.world_size,
                          "GPUs" if gpu else "processes")
        result = train_rank(place.rank, place.world_size, config.to_dict(), args.iterations,
                            out, not args.quiet, args.profile)
        print(f"rank {place.rank} of {place.world_size}: seed {result.seed}, envs on "
              f"{result.device}, weights {result.checksum}", flush=True)
        if place.rank == 0:
            _write_results(result.history, config, list(config.policies), out, args.profile)
    return 0


def _open_launched_run(args: argparse.Namespace, config, out: Path, ranks: int,
                       unit: str) -> None:
    """Rank 0's checks and first writes under torchrun (the other ranks write nothing)."""
    from wd_teach.train.runs import check_run_folder

    check_run_folder(out, args.env, force=args.force)
    _open_data_parallel_run(args, config, out, ranks, unit)


def _open_data_parallel_run(args: argparse.Namespace, config, out: Path, ranks: int,
                            unit: str) -> None:
    """A data-parallel run's folder, started by the process that writes it: the config
    (with --force, the old run's files deleted first) and a line of what runs where."""
    from wd_teach.files import write_text
    from wd_teach.train.runs import clear_run_folder

    if args.force:
        clear_run_folder(out)
    write_text(out / "config.yaml", config.to_yaml())
    print(f"{config.env.name}, {config.algorithm_name}: {ranks} {unit} x "
          f"{config.env.num_envs} envs, seeds {config.trainer.seed} to "
          f"{config.trainer.seed + ranks - 1}; writing to {out}/", flush=True)
    _tensorboard_hint(config, out)


def _tensorboard_hint(config, out: Path) -> None:
    """How to watch a run that writes TensorBoard events, while it trains."""
    if config.trainer.logger == "tensorboard":
        print(f"TensorBoard events in {out / TENSORBOARD_FOLDER}/; watch them live with "
              f"`tensorboard --logdir {out}`")


def _auto_envs(args: argparse.Namespace) -> int:
    """--envs auto: the most envs whose training fits the GPU, measured (wd_teach.scale.autoscale).
    With --gpus N it is measured on the first GPU, and every GPU then runs that many."""
    from wd_teach.scale.autoscale import fit_num_envs

    env = {"name": args.env, **({"backend": args.backend} if args.backend else {})}
    from wd_teach import seat_memory

    limit = seat_memory.limit_bytes()
    within = f" within {seat_memory.describe(limit)}" if limit else ""
    print(f"--envs auto: measuring how many envs fit on this GPU{within}")
    fit = fit_num_envs(args.config or args.env, overrides={"env": env}, sets=args.set,
                       log=lambda line: print("  " + line))
    print(fit.describe())
    return fit.num_envs


def _envs_count(text: str):
    """--envs: a positive whole number, or 'auto'."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"takes a positive whole number or 'auto', got {text!r}")
    return value


def _positive(what: str, default: int):
    """An argument type for a positive whole number of `what` (argparse's error says the
    number given, and the default a user gets by leaving it out)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"takes a positive whole number of {what}, "
                                             f"got {text!r}; leave it out for {default}")
        return value
    return parse


#: --steps: the demo times that many steps of each backend.
_positive_steps = _positive("steps to time", 20)


def _play(args: argparse.Namespace) -> int:
    """Every refusal (no run, no checkpoint, another run's checkpoint, a backend that does
    not run here, a video that cannot be written) comes before any game is played."""
    from wd_teach.train.play import check_backend, play_run
    from wd_teach.train.runs import open_run
    from wd_teach.train.video import check_video_path, draws, video_path, write_video

    run = open_run(args.run_folder)
    check_backend(run, args.backend)
    path = None if args.no_video else video_path(args.video, run.folder / "play")
    if path is not None:
        check_video_path(path)
    played = play_run(run, args.episodes, backend=args.backend, seed=args.seed,
                      greedy=not args.sample, record=path is not None)
    print(f"{played.trainer}\nplayed with:\n{played.settings_table()}")
    print(played.evaluation.describe())
    env = played.trainer.env
    if path is not None and not draws(env):
        print(f"no video: {type(env).__name__} does not draw its games (it has no "
              "draw_frame method); the scores above are all there is to see.")
    elif path is not None:
        write_video(env, played.evaluation.frames, path)
        print(f"video of the first game: {path}")
    return 0


#: --episodes: how many fresh games play scores.
_positive_episodes = _positive("episodes to play", 100)


def _bench(args: argparse.Namespace) -> int:
    from wd_teach.scale.bench import command

    return command(args)


def _write_results(history: list[dict], config, groups: list[str], out: Path,
                   profile: bool) -> None:
    """Metrics (CSV, JSON), the learning curve and the time breakdown; a summary."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no window
    from matplotlib import pyplot as plt

    from wd_teach.train import report
    from wd_teach.train.config import make_env
    from wd_teach.train.metrics import per_episode

    report.write_csv(history, out / "metrics.csv")
    report.write_json(history, out / "metrics.json", config=config.to_dict())
    labels = {per_episode(n): m.label for n, m in make_env(config.env).episode_metrics().items()}
    ax = report.plot_learning_curves(history, groups, f"{Path(config.env.name).name}, "
                                     f"{config.algorithm_name}", metrics=labels)
    report.save_figure(ax.figure, out / "learning_curve.png")
    plt.close(ax.figure)
    if profile:
        ax = report.plot_time_breakdown(history)
        report.save_figure(ax.figure, out / "time_breakdown.png")
        plt.close(ax.figure)
    last = history[-1]
    for group in groups:
        values = report.series(history, f"{group}/return")[1]
        shown = f"{values[-1]:.4g}" if len(values) else "no episode ended"
        print(f"{group}: mean episode return {shown}")
    print(f"{last['env_steps']:,} env steps; last iteration {last['steps_per_second']:,.0f} "
          f"env steps/s. Files: {', '.join(sorted(p.name for p in out.iterdir()))}")


def _course(args: argparse.Namespace) -> int:
    from wd_teach.room.assignments import make_course

    lessons = [name.strip() for name in args.lessons.split(",")] if args.lessons else None
    found = {"notebooks": args.notebooks} if args.notebooks else {}
    written = make_course(args.folder, lessons, course_id=args.course_id, **found)
    for path in written:
        print(f"source assignment: {path}")
    print(f"Next, in {args.folder}: nbgrader generate_assignment NAME, then release_assignment "
          "NAME (or the Formgrader's page in JupyterLab); docs/teaching.md walks through it.")
    return 0


def _grades(args: argparse.Namespace) -> int:
    from wd_teach.room.grades import read_grades

    print(read_grades(args.course).table())
    return 0


def _env_help(what: str) -> str:
    """The envs found here (wd_teach.env.registry), for --help: shipped, installed, or a folder."""
    from wd_teach.env.registry import known_envs

    return f"{what}: {', '.join(known_envs())}, or the path of an env folder"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wd-teach", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("doctor", help="what this machine has for GPU RL").set_defaults(
        run=_doctor)
    demo = commands.add_parser("demo", help="step a particle world on every backend")
    demo.add_argument("--backend", choices=backend_list.kernel_backends())
    demo.add_argument("--steps", type=_positive_steps, default=20,
                      help="steps each backend takes, at least 1 (default 20)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_demo)
    train = commands.add_parser("train", help="train policies on an environment")
    train.add_argument("env", help=_env_help("the env to train"))
    train.add_argument("--backend", choices=ENV_BACKENDS,
                       help="default: PyCUDA or Numba on a GPU, the NumPy env on a CPU")
    train.add_argument("--envs", type=_envs_count, metavar="N|auto",
                       help="environments stepped together; auto: as many as fit the GPU")
    train.add_argument("--iterations", type=int,
                       help="rollout-and-update iterations, at least 1 (default: the "
                            "config's trainer.iterations)")
    train.add_argument("--config", help="a YAML file laid over the env's defaults")
    train.add_argument("--out", metavar="DIR",
                       help="output folder (default: runs/ENV; with --resume, the "
                            "checkpoint's folder). A folder that already holds a run is "
                            "refused, never overwritten: choose another, --resume it, or "
                            "--force")
    train.add_argument("--force", action="store_true",
                       help="replace the run in the output folder: its files are deleted "
                            "first (only a run's files), so the two runs are never mixed")
    train.add_argument("--seed", type=int)
    train.add_argument("--gpus", type=int, default=1, metavar="N",
                       help="train on N GPUs of this machine, one process each, the "
                            "gradients averaged (default 1). On several machines, start "
                            "`torchrun --nproc-per-node N -m wd_teach train ENV` instead")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change one setting, e.g. --set trainer.lr=1e-3 (repeatable)")
    train.add_argument("--profile", action="store_true",
                       help="time each phase (policy, sampling, env step, training)")
    train.add_argument("--resume", metavar="CHECKPOINT",
                       help="go on from a checkpoint, or from the latest one in a run "
                            "folder; the checkpoint fixes envs, seed and config, so --envs, "
                            "--seed, --set, --config, --backend and --gpus are refused")
    train.add_argument("--logger", choices=LOGGERS,
                       help="csv (default): the metrics as CSV, JSON and pictures when the "
                            "run ends; tensorboard: those, and TensorBoard event files in "
                            f"OUT/{TENSORBOARD_FOLDER}/ as it trains (trainer.logger)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)
    play = commands.add_parser("play", help="watch and score a trained run")
    play.add_argument("run_folder", metavar="RUN",
                      help="a run's folder (what `wd-teach train` wrote: runs/ENV or its "
                           "--out), or one checkpoint file in it")
    play.add_argument("--episodes", type=_positive_episodes, metavar="N",
                      help="fresh episodes to play, at least 1 (default 100, as train's "
                           "evaluation)")
    play.add_argument("--backend", choices=ENV_BACKENDS,
                      help="default: the run's own (its env.backend), or the best that runs "
                           "here where its config leaves it out")
    play.add_argument("--seed", type=int, metavar="S",
                      help="the games' seed (default: the training's evaluation's, "
                           "trainer.seed + 1)")
    play.add_argument("--sample", action="store_true",
                      help="draw each action from the policy, as training does (default: "
                           "the most probable, as training's evaluation)")
    play.add_argument("--video", metavar="FILE",
                      help="where the video of the first game goes, .mp4 or .gif (default: "
                           "RUN/play.mp4 with the [video] extra installed, else RUN/play.gif)")
    play.add_argument("--no-video", action="store_true", help="scores only")
    play.set_defaults(run=_play)
    bench = commands.add_parser("bench", help="throughput against envs and agents")
    bench.add_argument("what", nargs="?", default="all",
                       help="env, sampler, rollout, train or all (default)")
    bench.add_argument("--envs", metavar="N,N,..", help="numbers of environments, e.g. 1,10,100")
    bench.add_argument("--agents", metavar="N,N,..", help="agents per env, e.g. 10,110,1000")
    bench.add_argument("--backend", metavar="B,B,..", help="pycuda, numba and/or numpy")
    bench.add_argument("--iterations", type=int, metavar="N", help="timed calls per row")
    bench.add_argument("--cpu-baseline", action="store_true",
                       help="also the same config on the CPU (NumPy env, torch on the CPU)")
    bench.add_argument("--cpu-envs", metavar="N,N,..",
                       help="envs of the CPU baseline (default: the smallest of --envs)")
    bench.add_argument("--cpu-iterations", type=int, metavar="N",
                       help="timed calls per CPU baseline row")
    bench.add_argument("--env", default=None,
                       help=_env_help("the env to measure (default: tag_continuous)"))
    bench.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change one setting of the env's config (repeatable)")
    bench.add_argument("--out", metavar="FILE.json", help="write the results as JSON")
    bench.add_argument("--quiet", action="store_true", help="no line per row while it runs")
    bench.set_defaults(run=_bench)
    course = commands.add_parser("course", help="the exercises as nbgrader assignments")
    course.add_argument("folder", metavar="DIR", help="the course folder (made if new)")
    course.add_argument("--lessons", metavar="NN_name,..",
                        help="only these lessons (default: every lesson with an exercise)")
    course.add_argument("--course-id", default="wd-teach",
                        help="the course's name in nbgrader's exchange (default wd-teach)")
    course.add_argument("--notebooks", metavar="DIR",
                        help="the lessons' folder (default: notebooks/ of this clone)")
    course.set_defaults(run=_course)
    grades = commands.add_parser("grades", help="seats by exercise, from nbgrader's gradebook")
    grades.add_argument("--course", default=".", metavar="DIR",
                        help="the course folder, where gradebook.db is (default: here)")
    grades.set_defaults(run=_grades)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except WdTeachError as err:
        print(f"wd-teach: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
