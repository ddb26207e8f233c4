"""Which arrays a Numba kernel applies its atomic operations to, read from the IR that Numba
makes of the kernel's bytecode.

A plain += on a counter that many threads add to loses adds on a GPU. The simulator cannot
show that: it runs a block's threads one at a time, so a plain += counts right there. What it
can show is where the kernel's atomics go: an atomic on another array (an exchange on
in_game, say) next to a plain += on the counter counts right on the simulator and loses adds
on a GPU. Reading the IR, not the source text, finds the atomic however it is spelled
(`cuda.atomic.add`, `atomic.add` imported, a device function that does it) and which
parameter it is applied to.
"""

from __future__ import annotations

#: The operations of cuda.atomic.
ATOMIC_OPS = frozenset({"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max",
                        "min", "nanmax", "nanmin", "compare_and_swap", "cas"})
#: How deep into the device functions a kernel calls the search goes.
DEPTH = 3


def atomic_targets(function, depth: int = DEPTH) -> dict[str, set[str]] | None:
    """{parameter of `function`: the atomic operations applied to it}, directly or through
    the device functions it calls and passes it to. None when Numba cannot make its IR."""
    from numba.core.compiler import run_frontend

    try:
        func_ir = run_frontend(function)
    except Exception:  # noqa: BLE001 (any code may fail to translate; the run still checks)
        return None
    params = list(func_ir.arg_names)
    found: dict[str, set[str]] = {}
    for call in _calls(func_ir):
        op = _atomic_op(func_ir, call.func)
        if op is not None and call.args:
            name = _parameter(func_ir, call.args[0])
            if name is not None:
                found.setdefault(name, set()).add(op)
            continue
        callee = _device_function(func_ir, call.func)
        if callee is None or depth == 0:
            continue
        inner = atomic_targets(callee, depth - 1) or {}
        callee_params = callee.__code__.co_varnames[:callee.__code__.co_argcount]
        for position, arg in enumerate(call.args[:len(callee_params)]):
            name = _parameter(func_ir, arg)
            if name in params and callee_params[position] in inner:
                found.setdefault(name, set()).update(inner[callee_params[position]])
    return found


def _calls(func_ir):
    from numba.core import ir

    for block in func_ir.blocks.values():
        for stmt in block.body:
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op == "call"):
                yield stmt.value


def _definition(func_ir, var):
    """What `var` was assigned, followed through plain copies (x = y)."""
    from numba.core import ir
    from numba.core.ir_utils import get_definition, guard

    seen = 0
    value = guard(get_definition, func_ir, var)
    while isinstance(value, ir.Var) and seen < 20:
        value, seen = guard(get_definition, func_ir, value), seen + 1
    return value


def _atomic_op(func_ir, var) -> str | None:
    """The operation's name when `var` is cuda.atomic.<op> (or atomic.<op>)."""
    from numba.core import ir

    value = _definition(func_ir, var)
    if not (isinstance(value, ir.Expr) and value.op == "getattr" and value.attr in ATOMIC_OPS):
        return None
    base = _definition(func_ir, value.value)
    if isinstance(base, ir.Expr) and base.op == "getattr" and base.attr == "atomic":
        return value.attr
    if isinstance(base, (ir.Global, ir.FreeVar)) and base.name == "atomic":
        return value.attr
    return None


def _parameter(func_ir, var) -> str | None:
    """The parameter `var` is, when it is one (followed through copies)."""
    from numba.core import ir

    value = _definition(func_ir, var)
    return value.name if isinstance(value, ir.Arg) else None


def _device_function(func_ir, var):
    """The Python function of the device function `var` calls, when it calls one."""
    from numba.core import ir

    value = _definition(func_ir, var)
    if isinstance(value, (ir.Global, ir.FreeVar)):
        return getattr(value.value, "py_func", None)
    return None
