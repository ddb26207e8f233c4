"""What the compiler made of an env's kernels, in both backends, with no GPU: for each step
kernel and each twin behind the fast door, its CUDA C (nvcc, as PyCUDA compiles it) and its
Numba twin (NVVM's PTX, then ptxas), for one GPU architecture (sm_90, the H100's, unless
--arch says another). Each row: registers a thread, bytes spilled to local memory (stores
and loads), shared memory a block, and the machine instructions (SASS, from cuobjdump,
padding NOPs left out); with --loops, each loop of the machine code too (its length, and
its loads and stores), where a kernel's time goes.

    python bench/sass.py tag_continuous
    python bench/sass.py tag_continuous --search grid --loops --json out.json
    python bench/sass.py tag_grid --arch sm_80

What it is for: a kernel's time on a GPU is what a GPU must be lent to measure, but the
reasons for it (registers that cap the blocks an SM holds, a spill, a loop twice as long in
one backend as in the other) are read here, on any machine with the CUDA toolkit. A table
to read, never a pass or fail; the same counts for one kernel are what bench/NOTES.md
quotes. Needs nvcc and ptxas (the CUDA toolkit) and cuobjdump (the toolkit's, or the copy
that Triton ships); a row whose tool is missing says which.
"""

import argparse
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np


@dataclass
class Row:
    kernel: str
    backend: str  # "cuda_c" or "numba"
    twin: bool  # behind the fast door
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    shared_bytes: int | None = None
    instructions: int | None = None
    note: str = ""
    loops: list = field(default_factory=list)  # each an asdict(Loop)


def tool(name: str) -> str | None:
    """A CUDA toolkit program: on PATH, else (cuobjdump, ptxas) the copy Triton ships."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import triton
    except ImportError:
        return None
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return str(bundled) if bundled.exists() else None


_PTXAS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads.*?"
                    r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", re.S)
_SASS = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")


def ptxas_counts(log: str, function: str | None = None) -> tuple[int, int, int, int]:
    """(spill stores, spill loads, registers, shared bytes) from `ptxas -v` for `function`
    (the only one, where None)."""
    if function is not None:
        start = log.index(f"Compiling entry function '{function}'")
        log = log[start:]
    match = _PTXAS.search(log)
    if match is None:
        raise ValueError(f"ptxas -v said nothing of registers:\n{log}")
    stores, loads, regs, smem = match.groups()
    return int(stores), int(loads), int(regs), int(smem or 0)


def sass_instructions(listing: str) -> dict[str, int]:
    """Machine instructions of each function in cuobjdump -sass's listing, NOPs left out."""
    counts: dict[str, int] = {}
    name = None
    for line in listing.splitlines():
        head = re.match(r"\s*Function : (\S+)", line)
        if head:
            name = head.group(1)
            counts[name] = 0
            continue
        op = _SASS.search(line)
        if name is not None and op is not None and op.group(1) != "NOP":
            counts[name] += 1
    return counts


@dataclass
class Loop:
    """A loop of the machine code: a branch back to an earlier instruction, with what lies
    between (the branch and its target included; an inner loop's instructions count in
    the loop around it too)."""

    start: int  # the byte offset of the first instruction
    end: int  # of the branch back
    instructions: int
    loads: int  # from global memory (LDG)
    stores: int  # to global memory (STG)
    shared_loads: int  # LDS
    shared_stores: int  # STS


def sass_loops(listing: str) -> dict[str, list[Loop]]:
    """The loops of each function in cuobjdump -sass's listing, in the order they close."""
    found: dict[str, list[Loop]] = {}
    for part in re.split(r"\n\s*Function : ", listing)[1:]:
        name = part.split("\n", 1)[0].strip()
        code = [(int(at, 16), " ".join(op.split()))
                for at, op in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", part)]
        found[name] = []
        for at, op in code:
            back = re.search(r"\bBRA (?:!?U?P[T0-9], )?0x([0-9a-f]+)", op)
            if back is None or int(back.group(1), 16) >= at:
                continue
            start = int(back.group(1), 16)
            ops = [(o.split()[1] if o.startswith("@") else o.split()[0]).split(".")[0]
                   for a, o in code if start <= a <= at]
            found[name].append(Loop(start, at, len(ops), ops.count("LDG"), ops.count("STG"),
                                    ops.count("LDS"), ops.count("STS")))
    return found


def _ptxas(ptx: str, arch: str, folder: Path) -> tuple[str, Path]:
    """ptxas -v on `ptx`, the .version lowered to what an older ptxas names."""
    ptxas = tool("ptxas")
    if ptxas is None:
        raise FileNotFoundError("ptxas (the CUDA toolkit) is not on PATH")
    cubin = folder / "k.cubin"
    for _ in range(2):
        (folder / "k.ptx").write_text(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", "-O3", "-v", str(folder / "k.ptx"),
                               "-o", str(cubin)], capture_output=True, text=True)
        older = re.search(r"current version is '([0-9.]+)'", done.stderr)
        if done.returncode == 0 or older is None:
            break
        ptx = re.sub(r"^[.]version [0-9.]+", ".version " + older.group(1), ptx, flags=re.M)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return done.stderr + done.stdout, cubin


def _sass(cubin: Path) -> str | None:
    """cuobjdump -sass's listing of the cubin, or None without cuobjdump."""
    cuobjdump = tool("cuobjdump")
    if cuobjdump is None:
        return None
    return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout


def _read_sass(row: Row, listing: str | None, function: str | None = None) -> None:
    """The row's instructions and loops, from the listing (its only function, where None)."""
    if listing is None:
        row.note = "cuobjdump not found"
        return
    counts, loops = sass_instructions(listing), sass_loops(listing)
    name = function if function is not None else next(iter(counts))
    row.instructions = counts.get(name)
    row.loops = [asdict(loop) for loop in loops.get(name, [])]


def numba_signature(py_func, env):
    """The argument types the env wrapper passes: each array as the env's state holds it,
    each constant an int32 or a float32 (tests/test_env_ptx.py compiles with these too)."""
    from numba import types
    from numba.np import numpy_support

    state = env.full_state(2)
    scalars = {"num_agents": env.num_agents, "episode_length": env.episode_length,
               **env.constants()}
    args = []
    for name in inspect.signature(py_func).parameters:
        if name in state:
            data = state[name].data
            args.append(types.Array(numpy_support.from_dtype(data.dtype), data.ndim, "C"))
        else:
            whole = isinstance(scalars[name], (int, np.integer))
            args.append(types.int32 if whole else types.float32)
    return tuple(args)


_DEVICE_SWAP = threading.Lock()


def numba_row(env, name: str, module, arch: str, twin: bool) -> Row:
    from wd_teach._simulator import simulator_on

    row = Row(name, "numba", twin)
    if simulator_on():
        row.note = ("Numba is on its CUDA simulator here, which writes no PTX: run "
                    "bench/sass.py as a script, which turns it off")
        return row
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda

    cc = tuple(int(c) for c in arch.removeprefix("sm_"))
    kernel = getattr(module, name)
    options = {}
    bounds = kernel.targetoptions.get("launch_bounds")
    if bounds:
        options["launch_bounds"] = bounds
    # Device functions ask the current GPU for its compute capability; there may be none,
    # or another than the one asked for: for this compile only, it is `arch`'s. The swap is
    # the process's, so one compile at a time holds it (a thread that launches a kernel
    # meanwhile would see `arch` too: run this where no kernel runs).
    with _DEVICE_SWAP:
        current = dispatcher.get_current_device
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)
        try:
            ptx, _ = cuda.compile_ptx(kernel.py_func,
                                      numba_signature(kernel.py_func, env),
                                      cc=cc, **options)
        finally:
            dispatcher.get_current_device = current
    with tempfile.TemporaryDirectory() as tmp:
        try:
            log, cubin = _ptxas(ptx, arch, Path(tmp))
        except FileNotFoundError as err:
            row.note = str(err)
            return row
        row.spill_stores, row.spill_loads, row.registers, row.shared_bytes = ptxas_counts(log)
        _read_sass(row, _sass(cubin))
    return row


def cuda_c_rows(sources, include_dirs, names: dict[str, bool], arch: str) -> list[Row]:
    """A row for each kernel of `names` (name -> twin) that the .cu files define."""
    from wd_teach import cuda_c

    nvcc = tool("nvcc")
    rows = {}
    for source in sources:
        text = cuda_c.read_source(source)
        here = [n for n in names if re.search(rf"\b{n}\s*\(", text) and n not in rows]
        if not here:
            continue
        if nvcc is None:
            rows.update({n: Row(n, "cuda_c", names[n], note="nvcc is not on PATH")
                         for n in here})
            continue
        dirs = cuda_c.include_dirs(source, include_dirs)
        with tempfile.TemporaryDirectory() as tmp:
            src, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
            src.write_text(text)
            done = subprocess.run([nvcc, "--cubin", f"-arch={arch}", "-Xptxas", "-v",
                                   *(f"-I{d}" for d in dirs), "-o", str(cubin), str(src)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(done.stderr)
            listing = _sass(cubin)
            for n in here:
                row = Row(n, "cuda_c", names[n])
                (row.spill_stores, row.spill_loads, row.registers,
                 row.shared_bytes) = ptxas_counts(done.stderr, n)
                _read_sass(row, listing, n)
                rows[n] = row
    return list(rows.values())


def kernel_rows(env, arch: str = "sm_90") -> list[Row]:
    """Both backends' rows for each of the env's step kernels and fast twins."""
    kernels = {name: False for name in env.step_kernels}
    twins = [t for t in env.fast_kernels() if t.threads]
    kernels.update({t.name: True for t in twins})
    sources = list(env.cuda_sources()) + [t.cuda for t in twins]
    dirs = list(env.include_dirs()) + [Path(t.cuda).parent for t in twins]
    c_rows = {r.kernel: r for r in cuda_c_rows(sources, dirs, kernels, arch)}
    rows = []
    for name, twin in kernels.items():
        if name in c_rows:
            rows.append(c_rows[name])
        module = env.numba_kernels()
        if twin:
            module = env.numba_twin(next(t for t in twins if t.name == name))
        rows.append(numba_row(env, name, module, arch, twin))
    return rows


def table(rows: list[Row]) -> str:
    def show(value):
        return "-" if value is None else f"{value:,}"

    lines = [f"{'kernel':34} {'backend':7} {'regs':>5} {'spill st/ld':>12} {'smem':>7} "
             f"{'SASS':>6}  note"]
    for r in rows:
        spill = "-" if r.spill_stores is None else f"{r.spill_stores}/{r.spill_loads}"
        name = r.kernel + (" (fast)" if r.twin else "")
        lines.append(f"{name:34} {r.backend:7} {show(r.registers):>5} {spill:>12} "
                     f"{show(r.shared_bytes):>7} {show(r.instructions):>6}  {r.note}")
    return "\n".join(lines)


def loop_table(rows: list[Row]) -> str:
    """Each kernel's loops, in both backends: where the time of a long kernel goes."""
    lines = []
    for r in rows:
        lines.append(f"{r.kernel} ({r.backend}): loops as they close, instructions "
                     "(global loads, global stores, shared loads, shared stores)")
        lines += [f"  {lp['start']:#07x}-{lp['end']:#07x} {lp['instructions']:5d}  "
                  f"({lp['loads']}, {lp['stores']}, {lp['shared_loads']}, "
                  f"{lp['shared_stores']})" for lp in r.loops]
    return "\n".join(lines)


def main(argv=None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env", help="a shipped env's folder name, e.g. tag_continuous")
    parser.add_argument("--arch", default="sm_90", help="the GPU architecture (sm_90: H100)")
    parser.add_argument("--search", choices=("tiles", "grid"),
                        help="a Tag game's search (grid adds its grid-search kernel)")
    parser.add_argument("--loops", action="store_true", help="also list each kernel's loops")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)

    from wd_teach.env.registry import find_env

    env_class = find_env(args.env).env_class
    env = env_class(search=args.search) if args.search else env_class()
    rows = kernel_rows(env, args.arch)
    print(f"{args.env}{f' (search={args.search})' if args.search else ''}, {args.arch}")
    print(table(rows))
    if args.loops:
        print(loop_table(rows))
    if args.json:
        args.json.write_text(json.dumps({"env": args.env, "arch": args.arch,
                                         "search": args.search,
                                         "rows": [asdict(r) for r in rows]}, indent=1))
    return rows


if __name__ == "__main__":
    if "numba" not in sys.modules:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"  # real PTX for a real GPU, not the simulator
    main()
