"""The program tests/gpu/test_sanitizer_package_gpu.py runs under compute-sanitizer: a short
training of each env whose kernels the tool watches, all in one process. Run plainly here
with NumPy, it trains each env and exits 0, so a clean report on the GPU means the kernels
ran, not that the program stopped early."""

import subprocess
import sys

#: CUDA graphs off: the tool needs torch's memory cache off (wd_teach.fundamentals.sanitizer:
#: EXACT_ALLOCATIONS), and without it torch allocates from the driver while a graph is being
#: recorded, which CUDA refuses ("operation not permitted when stream is capturing", seen on
#: an H200). The kernels a graph replays are the ones launched here one by one.
SMALL = ["--envs", "8", "--iterations", "2", "--quiet", "--set", "trainer.cuda_graphs=false"]
#: Each env at a size where every kernel still runs (Tag's search over 60 agents, each
#: speaker_listener role) and the tool's slowdown stays in seconds.
RUNS = {
    "tag_continuous": ["--set", "env.params.num_taggers=6", "--set",
                       "env.params.num_runners=54", "--set", "env.params.num_nearest=5",
                       "--set", "trainer.steps=8", "--set", "policies.taggers.hidden=[32, 32]",
                       "--set", "policies.runners.hidden=[32, 32]"],
    "tag_grid": ["--set", "env.params.num_taggers=6", "--set", "env.params.num_runners=54",
                 "--set", "env.params.num_nearest=5", "--set", "trainer.steps=8",
                 "--set", "policies.taggers.hidden=[32, 32]",
                 "--set", "policies.runners.hidden=[32, 32]"],
    "speaker_listener": ["--set", "trainer.steps=8"],
}


def program(backend: str, folder) -> list[str]:
    """`python -c ...`: train each of RUNS on `backend` in one process, exit 1 if one failed."""
    calls = ", ".join(
        repr(["train", env, "--out", str(folder / env), "--backend", backend, *SMALL, *extra])
        for env, extra in RUNS.items())
    return ["-c", "import sys; from wd_teach.cli import main; "
                  f"sys.exit(max(main(args) for args in [{calls}]))"]


def test_the_program_trains_every_env_on_the_cpu(tmp_path):
    args = program("numpy", tmp_path)
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for env in RUNS:
        assert (tmp_path / env / "config.yaml").is_file()
