"""CUDA C for the pycuda backend: read kernel signatures, compile with nvcc, load with PyCUDA.

Three jobs, each usable on its own:

- `kernel_signatures(source)` reads the `extern "C" __global__` kernels of a source and the
  name and C type of each parameter, so the launcher can bind arguments from the data store
  by name and check their types before anything runs on the GPU.
- `ptx(source)` runs nvcc and returns the PTX it makes: what the GPU's driver would compile
  to machine code. It needs nvcc but no GPU, so a laptop can still see it.
- `compile_module(source)` compiles with PyCUDA inside torch's CUDA context (once per
  source: the result is cached), so PyCUDA kernels and torch tensors share memory.

Kernels are declared `extern "C"` so that Python finds them by their plain name, and the
exact same text goes to nvcc in every path: line numbers in errors are the learner's own.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wd_teach.device import PYCUDA_INSTALL, gpu_available, nvcc_path
from wd_teach.errors import CompileError, LaunchError, MissingPieceError

#: Folder of wd_teach.cuh, the headers every kernel may include: always on nvcc's include path.
#: A .cu file's own folder joins it when the file is compiled from its path, and an env adds
#: its folder and those of its shared kernels (Env.include_dirs), so a game's own header, say
#: envs/_tag/tag.cuh, is found wherever it lives.
INCLUDE_DIR = Path(__file__).parent / "cuda"

#: C parameter types a kernel may take, and how PyCUDA packs them (struct format).
SCALAR_TYPES = {"int": "i", "unsigned int": "I", "float": "f"}
POINTER_TYPES = {"float": "float32", "int": "int32", "unsigned int": "uint32",
                 "unsigned char": "uint8"}

# extern "C" __global__ void [__launch_bounds__(...)] name(params)
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+'
                     r'(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)', re.S)
_QUALIFIERS = re.compile(r"\b(const|__restrict__|volatile)\b")
#: "kernel.cu(5): error: ..." from nvcc's front end, "kernel.cu:1:10: fatal error: ..." from
#: its preprocessor.
_DIAGNOSTIC = re.compile(
    r"(?:\((\d+)\)|:(\d+):\d+): (?:catastrophic |fatal )?(error|warning)[^:]*: (.*)")
#: nvcc's echo of a source line and its caret (indented), its remarks and closing tallies.
_NVCC_NOISE = re.compile(r"^\s|^Remark:|detected in the compilation|compilation terminated")


@dataclass(frozen=True)
class Param:
    """One kernel parameter: `float* loc_x` is Param('loc_x', 'float', pointer=True)."""

    name: str
    ctype: str
    pointer: bool

    @property
    def struct_format(self) -> str:
        return "P" if self.pointer else SCALAR_TYPES[self.ctype]


def _is_path(source) -> bool:
    return isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and source.endswith(".cu"))


def include_dirs(source: str | os.PathLike, extra=()) -> list[str]:
    """nvcc's include folders for `source`: INCLUDE_DIR, the folder of a .cu path, `extra`."""
    dirs = [INCLUDE_DIR, *([Path(source).resolve().parent] if _is_path(source) else []),
            *map(Path, extra)]
    return list(dict.fromkeys(str(d) for d in dirs))


def read_source(source: str | os.PathLike) -> str:
    """CUDA C text from a string of code or from a .cu file."""
    if _is_path(source):
        path = Path(source)
        if not path.is_file():
            raise LaunchError(f"no CUDA C file at {path}. Pass the path of a .cu file or "
                              "the source text itself.")
        return path.read_text()
    if not isinstance(source, str):
        raise LaunchError(f"CUDA C source must be a string or a .cu path, got "
                          f"{type(source).__name__}.")
    return source


def kernel_signatures(source: str) -> dict[str, list[Param]]:
    """{kernel name: its parameters} for every `extern "C" __global__ void` kernel."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    kernels = {}
    for name, params in _KERNEL.findall(code):
        kernels[name] = [_param(name, p) for p in params.split(",") if p.strip()]
    return kernels


def _param(kernel: str, text: str) -> Param:
    words = _QUALIFIERS.sub(" ", text).replace("*", " * ").split()
    stars = words.count("*")
    words = [w for w in words if w != "*"]
    name, ctype = words[-1], " ".join(words[:-1])
    table = POINTER_TYPES if stars else SCALAR_TYPES
    if ctype not in table or stars > 1:
        allowed = ", ".join(f"{t}*" for t in POINTER_TYPES) + ", " + ", ".join(SCALAR_TYPES)
        raise LaunchError(f"kernel {kernel!r}: parameter {text.strip()!r} has a type the "
                          f"launcher cannot bind. Use one of: {allowed}.")
    return Param(name, ctype, pointer=stars == 1)


# -- nvcc, with or without a GPU -----------------------------------------------------------


def _require_nvcc() -> str:
    path = nvcc_path()
    if path is None:
        raise MissingPieceError("nvcc (the CUDA C compiler) is not on this machine. Install "
                                "the CUDA toolkit, or put its bin/ folder on PATH.")
    return path


def _run_nvcc(source: str, args: list[str], out_suffix: str, dirs: list[str]) -> str:
    nvcc = _require_nvcc()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.cu"
        out = Path(tmp) / f"kernel{out_suffix}"
        src.write_text(source)
        cmd = [nvcc, *args, *(f"-I{d}" for d in dirs), "-o", str(out), str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise CompileError(explain_compile_error(done.stderr + done.stdout, source))
        return out.read_text() if out_suffix == ".ptx" else ""


def ptx(source: str | os.PathLike, arch: str | None = None, extra_include_dirs=()) -> str:
    """The PTX that nvcc makes of `source` (text or .cu path). Needs nvcc, not a GPU."""
    args = ["--ptx", "-lineinfo"] + ([f"-arch={arch}"] if arch else [])
    return _run_nvcc(read_source(source), args, ".ptx", include_dirs(source, extra_include_dirs))


def explain_compile_error(log: str, source: str) -> str:
    """nvcc's error lines, each followed by the source line it points at.

    nvcc also echoes each line with a caret under it, tallies the errors and names its
    temporary file; those are left out, so what remains reads in the learner's own lines.
    """
    lines = source.splitlines()
    out = ["nvcc could not compile the CUDA C source:"]
    for raw in log.splitlines():
        match = _DIAGNOSTIC.search(raw)
        if match:
            if match.group(3) == "error":
                number = int(match.group(1) or match.group(2))
                out.append(f"  line {number}: error: {match.group(4).strip()}")
                if 0 < number <= len(lines):
                    out.append(f"    {number:>4} | {lines[number - 1]}")
        elif raw.strip() and not _NVCC_NOISE.search(raw):
            out.append(f"  {raw.strip()}")
    if len(out) == 1:
        out.append(log.strip())
    return "\n".join(out)


# -- PyCUDA on the GPU -----------------------------------------------------------------------

_modules: dict[str, object] = {}
_context = None
#: What the driver says when it loads a compiled kernel that is not whole (seen with 32
#: processes compiling one kernel at once on an H200: bench/room.py).
HALF_WRITTEN = "device kernel image is invalid"


def require_pycuda():
    """pycuda.driver, running in torch's primary CUDA context; a clear error if it cannot."""
    if not gpu_available():
        raise MissingPieceError(
            "PyCUDA runs CUDA C on an NVIDIA GPU, and this machine has none (torch sees no "
            "CUDA device). Use the numba backend, which runs here on the CUDA simulator, or "
            "a GPU machine; wd_teach.cuda_c.ptx(source) still shows what nvcc makes of a "
            "kernel.")
    try:
        import pycuda.driver as driver
    except ImportError as err:
        raise MissingPieceError(f"PyCUDA is not installed ({err}). {PYCUDA_INSTALL}.") from err
    _enter_torch_context(driver)
    return driver


def _enter_torch_context(driver) -> None:
    """Make PyCUDA use the primary context, the one torch allocates in: pointers then agree."""
    global _context
    if _context is not None:
        return
    import torch

    torch.cuda.init()
    driver.init()
    device = driver.Device(torch.cuda.current_device())
    _context = device.retain_primary_context()
    _context.push()
    atexit.register(_context.pop)  # PyCUDA aborts at exit if a context is left on its stack


def compile_module(source: str, dirs: list[str] | None = None):
    """A PyCUDA module for `source` (text), compiled once per distinct source and include path.

    `dirs` are nvcc's include folders (see include_dirs); INCLUDE_DIR alone by default."""
    driver = require_pycuda()
    dirs = dirs if dirs is not None else include_dirs(source)
    key = hashlib.sha256("\n".join([source, *dirs]).encode()).hexdigest()
    if key not in _modules:
        from pycuda.compiler import SourceModule

        try:
            try:
                module = SourceModule(source, no_extern_c=True, include_dirs=dirs)
            except driver.LogicError as err:
                if HALF_WRITTEN not in str(err):
                    raise
                # PyCUDA writes its on-disk cache of compiled kernels in place: a process
                # that reads a binary another is still writing (a room's seats compiling the
                # same kernel at once) loads half a file. Compile afresh, past the cache.
                module = SourceModule(source, no_extern_c=True, include_dirs=dirs,
                                      cache_dir=False)
        except driver.CompileError as err:
            raise CompileError(explain_compile_error(
                f"{err.stderr or ''}\n{err.stdout or ''}", source)) from None
        _modules[key] = module
    return _modules[key]
