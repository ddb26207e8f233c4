"""The types Numba gives a kernel's variables when it compiles it for a GPU, on any machine.

The simulator runs a kernel as Python, by NumPy's rules: a running sum started at `0.0` or
`float(0)` and added to float32 values stays float32 there, while Numba's compiler for a GPU
makes it a float64, and the sum rounds differently. To see what a GPU would run, the kernel
is compiled for one (Numba's compiler, NVVM, needs no GPU) in a fresh Python with the
simulator off, and the types of its variables are read from the compiler's own type map.

The kernel travels to that Python as its code object (marshal, inside JSON), with the names
it uses rebuilt there: modules and importable objects by import, the learner's own device
functions compiled the same way, plain values (numbers, strings, tuples of them, NumPy
scalars) as Python literals. Nothing is unpickled: pickle would run whatever a payload says.
"""

from __future__ import annotations

import ast
import base64
import importlib
import json
import marshal
import subprocess
import sys
import types

import numpy as np

#: Seconds a fresh Python may take to import Numba and compile one kernel.
TIME_LIMIT = 300

SCRIPT = r"""
import ast, base64, importlib, json, marshal, os, sys, types as pytypes
from types import SimpleNamespace
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
from numba import cuda, types
import numba.cuda.dispatcher as dispatcher
from numba.cuda.compiler import compile_cuda
import numpy

try:  # device functions ask the current GPU for its compute capability; there may be none
    cuda.get_current_device()
except Exception:
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(8, 0))

def value(ref):
    kind = ref[0]
    if kind == "module":
        return importlib.import_module(ref[1])
    if kind == "import":
        return getattr(importlib.import_module(ref[1]), ref[2])
    if kind == "device":
        return cuda.jit(device=True)(build(ref[1]))
    if kind == "scalar":
        return getattr(numpy, ref[1])(ast.literal_eval(ref[2]))
    return ast.literal_eval(ref[1])

def build(described):
    namespace = {"__builtins__": __builtins__}
    namespace.update({name: value(ref) for name, ref in described["globals"].items()})
    cells = tuple(pytypes.CellType(value(ref)) for ref in described["closure"])
    code = marshal.loads(base64.b64decode(described["code"]))
    return pytypes.FunctionType(code, namespace,
                                described["name"], None, cells or None)

payload = json.load(sys.stdin)
args = tuple(eval(arg, dict(vars(types))) for arg in payload["args"])
result = compile_cuda(build(payload["kernel"]), None, args, cc=(8, 0))
print(json.dumps({name: str(typ) for name, typ in result.fndesc.typemap.items()}))
"""


def gpu_local_types(kernel, arg_types: tuple[str, ...]) -> dict[str, str] | str:
    """{variable: its Numba type} when `kernel` (a @cuda.jit kernel) is compiled for a GPU
    with arguments of `arg_types` (written as in numba.types: "float32[:, :, ::1]",
    "int32"), or, when it could not be compiled, a sentence saying why. Variables that the
    kernel assigns more than once appear once per version ("total", "total.1", ...)."""
    try:
        payload = json.dumps({"kernel": _describe(kernel.py_func), "args": list(arg_types)})
    except (AttributeError, TypeError, ValueError) as err:
        return f"its code could not be sent to the compiler ({err})"
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], input=payload.encode(),
                              capture_output=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return f"compiling it took over {TIME_LIMIT} s"
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()
        return f"Numba could not compile it for a GPU: {last[-1] if last else 'no message'}"
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def float64_variables(kernel, arg_types: tuple[str, ...]) -> list[str] | str:
    """The kernel's own named variables that are float64 on a GPU (sorted, without the
    version suffix), or why that could not be found out."""
    found = gpu_local_types(kernel, arg_types)
    if isinstance(found, str):
        return found
    return sorted({name.split(".")[0] for name, typ in found.items()
                   if typ == "float64" and not name.startswith(("$", "arg."))})


def _describe(function) -> dict:
    """What the fresh Python needs to rebuild `function`: its code, and how to find each
    global name and closure value it uses."""
    code = function.__code__
    names = _names_used(code)
    found = {}
    for name in names & set(function.__globals__):
        ref = _reference(function.__globals__[name])
        if ref is not None:  # a name the kernel cannot really use (an attribute, say)
            found[name] = ref
    closure = [_reference(cell.cell_contents, required=True)
               for cell in function.__closure__ or ()]
    return {"code": base64.b64encode(marshal.dumps(code)).decode(), "name": function.__name__,
            "globals": found,
            "closure": closure}


def _names_used(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def _reference(value, required: bool = False):
    """("module", name), ("import", module, name), ("device", described), ("scalar", NumPy
    type, literal) or ("value", literal); None for a global that cannot travel (unless
    `required`: then it raises)."""
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    imported = _importable(value)
    if imported is not None:
        return imported
    if hasattr(value, "py_func"):  # the learner's own device function
        return ("device", _describe(value.py_func))
    if isinstance(value, np.generic):
        return ("scalar", type(value).__name__, repr(value.item()))
    if _is_literal(value):
        return ("value", repr(value))
    if required:
        raise TypeError(f"a closure value of type {type(value).__name__} cannot be sent: only "
                        "numbers, strings, tuples of them and NumPy scalars travel")
    return None


def _is_literal(value) -> bool:
    """Whether `value` is written back exactly by its repr (a number, a string, a tuple of
    them...): what ast.literal_eval reads without running anything."""
    try:
        return type(value) in (int, float, complex, str, bytes, bool, type(None), tuple) \
            and ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _importable(value):
    module, name = getattr(value, "__module__", None), getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str) or module == "__main__":
        return None
    try:
        if getattr(importlib.import_module(module), name) is value:
            return ("import", module, name)
    except Exception:  # noqa: BLE001 (a module that will not import is not importable)
        return None
    return None
