"""What the CUDA C checkers do where PyCUDA cannot run (no GPU): bind the kernel's
parameters by name against the store, as a launch would, and compile it with nvcc."""

from __future__ import annotations

from wd_teach import cuda_c
from wd_teach.device import nvcc_path
from wd_teach.errors import WdTeachError
from wd_teach.launch import cuda_c_argument

LABEL = "CUDA C kernel"


def bind_and_compile(text: str, kernel: str, params, store, hint: str) -> bool:
    """Every parameter of `kernel` found in `store` with the type the C says, then PTX from
    nvcc if it is here. Prints the verdict; `hint` follows a missing parameter."""
    try:
        for param in params:
            if param.name not in store:
                print(f"{LABEL}: {kernel} needs {param.name!r}, but the store has no array or "
                      f"constant of that name.\nHint: {hint}")
                return False
            cuda_c_argument(store, kernel, param, param.name)
        if nvcc_path() is None:
            print(f"{LABEL}: its parameters match the store, but neither PyCUDA (it needs a "
                  "GPU) nor nvcc is here, so it was neither run nor compiled.")
            return True
        cuda_c.ptx(text)
    except WdTeachError as err:  # a CompileError from nvcc, or a type the store lacks
        print(f"{LABEL}: {err}")
        return False
    print(f"{LABEL}: compiles with nvcc and its parameters match the store. PyCUDA needs a "
          "GPU to run it, so its arithmetic is checked only on a GPU.")
    return True
