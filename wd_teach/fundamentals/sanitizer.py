"""compute-sanitizer: find it, run one of lesson 10's kernels under it, read its verdict
(and Nsight Compute's counters for a kernel, where ncu is here).

compute-sanitizer runs a program with every memory access and barrier of its kernels watched:
`memcheck` (the default) reports reads and writes outside any allocation, `racecheck` shared
memory that threads read and write with nothing ordering them, `synccheck` barriers that not
every thread reaches. It ends with a line "ERROR SUMMARY: N errors" (racecheck also counts
hazards: "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)").

It comes with the CUDA toolkit (beside nvcc), and on PyPI as NVIDIA's
nvidia-cuda-sanitizer-api wheel (13.x: nvidia/cu13/bin/compute-sanitizer; -cu12 for older
drivers). It needs a GPU: it watches kernels as they run.

    python -m wd_teach.fundamentals.sanitizer KERNEL [KERNEL ...] [--backend numba|pycuda]

launches each KERNEL once at a small size (what compute-sanitizer is pointed at here); the
kernels are the lesson's (kernels.cu) and three broken ones (broken.cu). Several kernels in
one program cost one start of Python and torch under the tool instead of one each.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: This module's own name, also when it runs as `python -m` (where __name__ is "__main__"):
#: each sanitizer run starts it again, as a module, to launch its kernels.
MODULE = "wd_teach.fundamentals.sanitizer"

TOOLS = ("memcheck", "racecheck", "synccheck")
#: Seconds one run may take: a fresh Python starts under the tool, torch included, and
#: launches its kernels (all eight of the lesson's, in the GPU check; about 10 s each alone).
TIME_LIMIT = 300
#: A saved run of every tool on an H100, shown where there is no GPU (made by `--save`).
SAVED = Path(__file__).with_name("saved_sanitizer_h100.txt")


def find_compute_sanitizer() -> str | None:
    """compute-sanitizer's path: on the PATH, in $CUDA_HOME/bin, beside nvcc, in
    /usr/local/cuda*/bin, or in NVIDIA's pip wheel; None where it is nowhere."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    places = [os.path.join(os.environ[v], "bin", "compute-sanitizer")
              for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        places.append(str(Path(nvcc).resolve().parent / "compute-sanitizer"))
    places += sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True)
    site = sysconfig.get_paths()["purelib"]
    places += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "compute-sanitizer")))
    places += glob.glob(os.path.join(site, "nvidia", "cuda_sanitizer_api", "compute-sanitizer",
                                     "compute-sanitizer"))
    return next((p for p in places if os.access(p, os.X_OK)), None)


@dataclass(frozen=True)
class Report:
    """What one run under compute-sanitizer found."""

    tool: str
    kernel: str
    errors: int | None  # None: the tool gave no summary (it could not run the program)
    output: str

    @property
    def findings(self) -> list[str]:
        """The tool's lines that name a problem (its first line of each report)."""
        return [line.strip("= ").strip() for line in self.output.splitlines()
                if re.search(r"Invalid|Error|error detected|Race reported|hazard",
                             line) and "SUMMARY" not in line]


def errors_in(output: str) -> int | None:
    """The errors compute-sanitizer counted, from its summary lines; None without one."""
    counts = [int(n) for n in re.findall(r"ERROR SUMMARY:\s+(\d+)\s+error", output)]
    counts += [int(n) for n in re.findall(r"RACECHECK SUMMARY:.*?\((\d+)\s+error", output)]
    return max(counts) if counts else None


def sanitize(kernel: str | Sequence[str], tool: str = "memcheck",
             backend: str = "numba") -> Report:
    """Run `kernel` (one of RUNS) once under compute-sanitizer's `tool`; or several, one
    after another in one program (the report's kernel is then their names, joined)."""
    names = [kernel] if isinstance(kernel, str) else list(kernel)
    if tool not in TOOLS:
        raise ValueError(f"tool {tool!r}: use one of {', '.join(TOOLS)}.")
    unknown = [name for name in names if name not in RUNS]
    if unknown or not names:
        raise ValueError(f"kernel {', '.join(map(repr, unknown)) or 'none given'}: use one "
                         f"or more of {', '.join(RUNS)}.")
    return Report(tool, " ".join(names), *_under_tool(tool, ["-m", MODULE, *names,
                                                             "--backend", str(backend)]))


def sanitize_program(arguments: list[str], tool: str = "memcheck",
                     time_limit: int = TIME_LIMIT) -> Report:
    """Run `python ARGUMENTS...`, a whole program (wd_teach.fundamentals.package_run, say),
    under compute-sanitizer's `tool`, so that every kernel it launches, the package's and
    torch's, is watched. The report's kernel is the program's arguments."""
    if tool not in TOOLS:
        raise ValueError(f"tool {tool!r}: use one of {', '.join(TOOLS)}.")
    return Report(tool, " ".join(arguments), *_under_tool(tool, arguments, time_limit))


def _under_tool(tool: str, arguments: list[str],
                time_limit: int = TIME_LIMIT) -> tuple[int | None, str]:
    """(errors counted, output) of `python ARGUMENTS...` run under `tool`."""
    sanitizer = find_compute_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError(
            "compute-sanitizer is not on this machine: it comes with the CUDA toolkit, or "
            "from pip: `pip install 'wd-teach[sanitizer]'` for a CUDA 13 driver, "
            "`pip install 'wd-teach[sanitizer-cu12]'` for an older one such as Colab's (it "
            "needs an NVIDIA GPU).")
    # API errors are left out: Numba's set-up of its CUDA context asks the driver questions
    # whose error answers it expects (measured on an H100: 34 such calls under memcheck),
    # which the tool would count; the lesson is about what the kernels do.
    command = [sanitizer, "--tool", tool, "--report-api-errors", "no", sys.executable,
               *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=time_limit,
                          env={**os.environ, **EXACT_ALLOCATIONS})
    output = done.stdout + done.stderr
    return errors_in(output), output


#: torch keeps freed memory and hands out pieces of large blocks, so a write past the end of
#: a tensor usually lands in memory torch holds, where memcheck sees nothing wrong. Without
#: the cache every tensor is an allocation of its own, as memcheck needs.
EXACT_ALLOCATIONS = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


# What the program under the tool runs: each kernel once, at a small size.

def _run(names: list[str], backend: str) -> None:
    import torch

    from wd_teach import backends
    from wd_teach.fundamentals.measure import Kernels

    where = Path(__file__).parent
    cuda_c = backends.find(backend).reads_cuda_c
    loaded = {}  # each source compiled once: the lesson's kernels, or the broken ones
    for kernel in names:
        broken = kernel in BROKEN
        source = where / ("broken.cu" if cuda_c else "broken_numba.py") if broken else None
        if source not in loaded:
            loaded[source] = Kernels(backend, str(source) if source else None)
        kernels = loaded[source]
        floats = torch.zeros(4096, device=kernels.device)  # fresh for each kernel
        counter = torch.zeros(1, dtype=torch.int32, device=kernels.device)
        RUNS[kernel](kernels, floats, counter)
        torch.cuda.synchronize()
        print("launched", kernel)


def _transpose(name):
    return lambda k, f, c: k.launch(name, (2, 2), (32, 32), f[:2048], f[2048:], 32, 64)


#: Each kernel's launch: (kernels, 4,096 floats, one int) -> None.
RUNS = {
    # its own 300 floats, allocated last (nothing after them), and 2,048 threads writing
    "write_unguarded": lambda k, f, c: k.launch("write_unguarded", 8, 256, f.new_zeros(300),
                                                300),
    "count_lost": lambda k, f, c: k.launch("count_lost", 1, 256, c),
    "barrier_divergent": lambda k, f, c: k.launch("barrier_divergent", 1, 64, f, 50),
    "sum_rows": lambda k, f, c: k.launch("sum_rows", 2, 256, f[:3000], f[3000:], 300, 10),
    "sum_columns": lambda k, f, c: k.launch("sum_columns", 2, 256, f[:3000], f[3000:], 300,
                                            10),
    "transpose_naive": _transpose("transpose_naive"),
    "transpose_tiled": _transpose("transpose_tiled"),
    "transpose_padded": _transpose("transpose_padded"),
    "softmax_rows": lambda k, f, c: k.launch("softmax_rows", 1, 64, f[:1920], f[2048:3968],
                                             60),
    "push_cart_per_block": lambda k, f, c: k.launch("push_cart_per_block", 1000, 1, f, 0.02,
                                                    1000),
    "push_carts": lambda k, f, c: k.launch("push_carts", 4, 128, f, 0.02, 1000),
}
BROKEN = ("write_unguarded", "count_lost", "barrier_divergent")
#: The tool that finds each broken kernel's bug.
FINDS = {"write_unguarded": "memcheck", "count_lost": "racecheck",
         "barrier_divergent": "synccheck"}


#: Nsight Compute's counters for coalescing: sectors fetched per load request (4 is one
#: 128-byte line per warp; 32 is a sector per lane). Not DRAM throughput: ncu runs a kernel
#: once at RUNS' small size, a launch too short for its share of the card's bandwidth to
#: mean anything (an H100 showed 0.26%); lesson 10's GB/s tables measure that instead.
NCU_METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")


def nsight_compute(kernel: str, backend: str = "numba") -> str:
    """Nsight Compute's (ncu's) NCU_METRICS for one launch of `kernel` (one of RUNS), as ncu
    prints them; what it said instead where it could not (it often needs the right to read
    the GPU's counters: ERR_NVGPUCTRPERM)."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return "ncu (Nsight Compute) is not on this machine."
    command = [ncu, "--metrics", ",".join(NCU_METRICS), "--kernel-name", f"regex:{kernel}",
               sys.executable, "-m", MODULE, kernel, "--backend", str(backend)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT)
    lines = (done.stdout + done.stderr).splitlines()
    found = [line.strip() for line in lines if any(m in line for m in NCU_METRICS)]
    return "\n".join(found or lines[-5:])


def brief(output: str) -> str:
    """compute-sanitizer's output cut to what a reader needs: the first error it reports,
    without the host stack's frames, and its summary lines. (A run of the unguarded write
    reports each of its hundreds of stray threads, each with some thirty host frames.)"""
    lines = output.strip().splitlines()
    first, end = [], None
    for i, line in enumerate(lines):
        if "Host Frame" in line:
            continue
        if end is None:
            first.append(line)
            if len(first) > 1 and line.strip() == "=========":  # the first report ends
                end = i
    summary = [line for line in lines[end or len(lines):] if "SUMMARY" in line]
    note = ["========= (the host stack's frames, and every later report, left out here)"]
    return "\n".join(first + (note if end else []) + summary)


def save(backend: str = "pycuda") -> Path:
    """On a GPU: run every broken kernel under the tool that finds it, and keep the outputs
    in SAVED, for the lesson to show where there is no GPU."""
    parts = []
    for kernel, tool in FINDS.items():
        report = sanitize(kernel, tool, backend)
        parts.append(f"$ compute-sanitizer --tool {tool} python -m {MODULE} {kernel} "
                     f"--backend {backend}\n{brief(report.output)}\n")
    SAVED.write_text("\n".join(parts))
    return SAVED


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", nargs="+", choices=[*RUNS, "save"],
                        help="kernels to launch, in order; or `save` alone")
    parser.add_argument("--backend", default="numba", choices=["numba", "pycuda"])
    args = parser.parse_args(argv)
    if args.kernel == ["save"]:
        print("saved", save(args.backend))
    elif "save" in args.kernel:
        parser.error("`save` runs alone: it launches every broken kernel itself.")
    else:
        _run(args.kernel, args.backend)


if __name__ == "__main__":
    main()
