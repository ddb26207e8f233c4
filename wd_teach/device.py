"""What this machine has for GPU reinforcement learning, and which backend to use.

`discover()` looks at every piece once (GPU, driver, nvcc, PyCUDA, Numba, torch, numpy) and
returns a `Report`; `doctor()` prints it as a table with what to do about each missing
piece; `choose_backend()` picks the backend a notebook runs on from the same report.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

import torch

from wd_teach._simulator import numba_import_error, simulator_on

NUMBA_INSTALL = 'pip install "numba-cuda>=0.30,<0.31"'

#: numba-cuda 0.30.x cannot compile kernels under numpy 2.5 or newer.
NUMPY_TOO_NEW = (2, 5)

PYCUDA_INSTALL = (
    'pip install "wd-teach[pycuda]" (PyCUDA builds from source: it needs nvcc and the CUDA '
    "toolkit headers; on Colab they are already there)"
)


@dataclass(frozen=True)
class Row:
    """One line of the doctor's table."""

    piece: str
    ok: bool | None  # True: ready; False: missing or broken; None: not needed here
    found: str
    todo: str = ""


@dataclass(frozen=True, repr=False)
class Report:
    """Everything `discover()` found. `rows` is what `doctor()` prints."""

    gpu_name: str | None
    compute_capability: tuple[int, int] | None
    driver_cuda: tuple[int, int] | None
    nvcc: str | None
    pycuda: str | None
    numba_cuda: str | None
    simulator: bool
    torch_version: str
    torch_cuda: str | None
    numpy_version: str
    numba_toolkit: tuple[int, int] | None
    rows: list[Row] = field(default_factory=list)

    @property
    def has_gpu(self) -> bool:
        return self.gpu_name is not None

    @property
    def backends(self) -> tuple:
        """The backends that can run kernels here, best first (each backend says whether
        it can: wd_teach/backends)."""
        from wd_teach import backends

        return tuple(b for b in backends.kernel_backends() if b.usable(self))

    def table(self) -> str:
        head = ("piece", "", "found", "what to do")
        cells = [(r.piece, {True: "ok", False: "NO", None: "-"}[r.ok], r.found, r.todo)
                 for r in self.rows]
        widths = [max(len(c[i]) for c in [head, *cells]) for i in range(3)]
        lines = []
        for c in [head, *cells]:
            lines.append("  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3])
        lines.insert(1, "-" * (sum(widths) + 6 + len(head[3])))
        backends = ", ".join(self.backends) or "none"
        lines.append("")
        lines.append(f"backends that can run here: {backends}")
        return "\n".join(line.rstrip() for line in lines)

    def __repr__(self) -> str:
        return self.table()


def gpu_available() -> bool:
    """True when torch sees a CUDA GPU (and so PyCUDA and Numba can use it too)."""
    return torch.cuda.is_available()


def default_device() -> torch.device:
    """Where the data store keeps its arrays: the GPU when there is one, else the CPU."""
    return torch.device("cuda") if gpu_available() else torch.device("cpu")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pycuda_version() -> str | None:
    """PyCUDA's version, also when it was unpacked without package metadata."""
    if importlib.util.find_spec("pycuda") is None:
        return None
    try:
        import pycuda  # the top-level module only: it does not touch the GPU
    except ImportError:
        return None
    return _version("pycuda") or getattr(pycuda, "VERSION_TEXT", "installed")


def _driver_cuda_version() -> tuple[int, int] | None:
    """The newest CUDA the installed driver supports, read from libcuda itself."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
            return version.value // 1000, (version.value % 1000) // 10
    return None


def _nvcc() -> tuple[str | None, str | None]:
    """(path, version) of nvcc, looked for on PATH and under CUDA_HOME."""
    path = shutil.which("nvcc")
    if path is None:
        for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
                path = os.path.join(root, "bin", "nvcc")
                break
    if path is None:
        return None, None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return path, None
    match = re.search(r"release (\d+\.\d+)", out)
    return path, match.group(1) if match else None


def nvcc_path() -> str | None:
    """Where nvcc is, or None."""
    return _nvcc()[0]


def _numba_toolkit() -> tuple[int, int] | None:
    """The CUDA version of the NVVM compiler that pip installed for Numba, if any.

    Numba writes PTX for this version; a driver older than it refuses to load that PTX
    (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), which is what happens on Colab with cu13 wheels.
    """
    for dist in ("nvidia-nvvm", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"):
        version = _version(dist)
        if version:
            major, minor = (int(x) for x in version.split(".")[:2])
            return major, minor
    return None


def nvvm_pin(driver: tuple[int, int]) -> str:
    """The pip command that gives Numba an NVVM no newer than the driver understands."""
    major, minor = driver
    package = "nvidia-nvvm" if major >= 13 else f"nvidia-cuda-nvcc-cu{major}"
    return (f'pip install "numba-cuda[cu{major}]>=0.30,<0.31" "{package}=={major}.{minor}.*", '
            "then restart the kernel")


def _numba_found(version: str | None, error: str | None) -> str:
    """The Numba row's "found": its version, or why it is missing or cannot be imported."""
    if version:
        return version
    installed = _version("numba-cuda")
    if installed:
        return f"{installed} installed, but `from numba import cuda` fails: {error}"
    return "not installed"


def _numpy_ok(version: str) -> bool:
    major, minor = (int(x) for x in re.findall(r"\d+", version)[:2])
    return (major, minor) < NUMPY_TOO_NEW


def _gpu() -> tuple[str | None, tuple[int, int] | None]:
    if not gpu_available():
        return None, None
    index = torch.cuda.current_device()
    return torch.cuda.get_device_name(index), torch.cuda.get_device_capability(index)


def cxx_path() -> str | None:
    """The host's C++ compiler (g++, c++ or clang++), if there is one: the exercises'
    checkers build CUDA C with it to run on the CPU where no GPU is."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@functools.lru_cache(maxsize=1)
def discover() -> Report:
    """Look at every piece once. Cached: the machine does not change under a running kernel."""
    gpu_name, capability = _gpu()
    driver = _driver_cuda_version()
    nvcc, nvcc_version = _nvcc()
    pycuda = _pycuda_version()
    numba_error = numba_import_error()
    numba_cuda = _version("numba-cuda") if numba_error is None else None
    simulator = simulator_on()
    torch_cuda = torch.version.cuda
    numpy_version = _version("numpy") or "?"
    toolkit = _numba_toolkit()
    triton = _version("triton")

    rows = [
        Row("GPU", gpu_name is not None,
            f"{gpu_name} (compute capability {capability[0]}.{capability[1]})" if gpu_name
            else "none",
            "" if gpu_name else "lessons run on the CPU at small size; for full size use a "
            "GPU machine or Colab (Runtime > Change runtime type > GPU)"),
        Row("CUDA driver", driver is not None if gpu_name else None,
            f"supports CUDA {driver[0]}.{driver[1]}" if driver else "none",
            "" if driver or not gpu_name else "install the NVIDIA driver"),
        Row("nvcc", nvcc is not None if gpu_name else None,
            f"{nvcc_version or '?'} at {nvcc}" if nvcc else "not found",
            "" if nvcc else "only PyCUDA needs it: install the CUDA toolkit, or use Numba"),
        Row("PyCUDA", (pycuda is not None) if gpu_name else None,
            pycuda or "not installed",
            "" if pycuda else PYCUDA_INSTALL if gpu_name
            else "optional; needs a GPU to run (without one, lessons show the CUDA C and PTX)"),
        Row("Numba CUDA", numba_cuda is not None, _numba_found(numba_cuda, numba_error),
            "" if numba_cuda else NUMBA_INSTALL),
        Row("CUDA simulator", None if gpu_name else simulator,
            "on: Numba kernels run on the CPU" if simulator else "off",
            "" if simulator or gpu_name else
            "needs Numba: " + NUMBA_INSTALL if numba_error else
            "no GPU and no simulator: set NUMBA_ENABLE_CUDASIM=1 before numba is imported "
            "(`import wd_teach` first does it for you)"),
        Row("numpy", _numpy_ok(numpy_version), numpy_version,
            "" if _numpy_ok(numpy_version) else
            'numba-cuda 0.30 cannot compile under numpy >= 2.5: pip install "numpy<2.5"'),
        Row("torch", gpu_name is None or torch_cuda is not None,
            torch.__version__ + (f", built for CUDA {torch_cuda}" if torch_cuda else ", CPU build"),
            "" if gpu_name is None or torch_cuda else
            "this GPU needs a CUDA build of torch: see pytorch.org/get-started"),
        Row("Triton", True if triton else None,
            (triton + ("" if gpu_name else " (used on a GPU only)")) if triton
            else "not installed",
            "" if triton else
            "optional: training's fused ReLU backward then runs as PyTorch's two kernels "
            "(the same results, one more pass over memory); CUDA builds of torch bring it"
            if gpu_name else "used on a GPU only"),
    ]
    if not gpu_name:  # where the exercises' checkers run CUDA C on the CPU
        cxx = cxx_path()
        rows.append(Row(
            "C++ compiler", True if cxx else None, cxx or "not found",
            "" if cxx else "optional: with one (apt-get install g++) the exercises' checkers "
            "run your CUDA C on the CPU; without, they compile it only"))
    if gpu_name and driver and toolkit and toolkit > driver:
        rows.append(Row(
            "Numba's CUDA", False,
            f"NVVM from pip is CUDA {toolkit[0]}.{toolkit[1]}, newer than the driver's "
            f"{driver[0]}.{driver[1]}",
            "Numba kernels would fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION: "
            + nvvm_pin(driver)))
    return Report(gpu_name, capability, driver, nvcc_version if nvcc else None, pycuda,
                  numba_cuda, simulator, torch.__version__, torch_cuda, numpy_version,
                  toolkit, rows)


def doctor() -> Report:
    """Print what this machine has, and what to do about what it lacks. Returns the report."""
    report = discover()
    print(report.table())
    return report


def choose_backend(prefer: str | None = None):
    """The backend to run kernels on: `prefer`, else $WD_TEACH_BACKEND, else the best here.

    PyCUDA comes first where it works (a GPU and PyCUDA installed); Numba runs everywhere
    else, on the GPU or on the CUDA simulator. (The choosing is wd_teach.backends.get's.)
    """
    from wd_teach import backends

    return backends.get(prefer, kernels=True)


def __getattr__(name: str):
    """BACKENDS (those that run kernels), ENV_BACKENDS (all) and NUMPY, from the one list in
    wd_teach/backends; read on first use, since the backends themselves import this module."""
    from wd_teach import backends

    lists = {"BACKENDS": backends.kernel_backends, "ENV_BACKENDS": lambda: backends.ALL,
             "NUMPY": lambda: backends.NUMPY}
    if name not in lists:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return lists[name]()
