"""DataStore: the named arrays of a simulation, pushed to the device once and kept there.

End-to-end GPU RL is fast because data does not travel: every array is copied from the
host once, and from then on the environment kernels, the action sampler and the training
code all read and write the same device memory in place. The store owns that memory as
torch tensors, so torch sees it natively, a Numba kernel sees it through
`numba.cuda.as_cuda_array` and a PyCUDA kernel through its data pointer: zero copies.

Arrays are laid out per environment or per agent, so a kernel with one block per
environment and one thread per agent finds its slot by (env, agent):

    per="env"      shape (num_envs, ...)
    per="agent"    shape (num_envs, num_agents, ...)
    per="shared"   any shape, one copy for all environments (a lookup table, say)

Arrays pushed with `reset=True` keep a pristine device copy that a reset restores from.
"""

from __future__ import annotations

import keyword
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from wd_teach import seat_memory
from wd_teach.device import default_device
from wd_teach.errors import StoreError

#: What kernels in both backends can read: numpy dtype -> torch dtype, with the C type name.
DTYPES = {
    np.dtype(np.float32): (torch.float32, "float"),
    np.dtype(np.int32): (torch.int32, "int"),
    np.dtype(np.uint32): (torch.uint32, "unsigned int"),
    np.dtype(np.uint8): (torch.uint8, "unsigned char"),
}
TORCH_TO_NUMPY = {t: n for n, (t, _) in DTYPES.items()}
LAYOUTS = ("env", "agent", "shared")
INT32 = np.iinfo(np.int32)


@dataclass(frozen=True)
class ArrayInfo:
    """What the store knows about one array."""

    name: str
    per: str
    shape: tuple[int, ...]
    dtype: np.dtype
    reset: bool

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize


class DataStore:
    """Named device arrays and constants for `num_envs` copies of an environment.

    >>> store = DataStore(num_envs=2, num_agents=3, episode_length=10)
    >>> store.push("pos", np.zeros((2, 3), np.float32), per="agent", reset=True)
    >>> store["pos"].shape
    torch.Size([2, 3])
    """

    def __init__(self, num_envs: int, num_agents: int, episode_length: int = 1,
                 device: str | torch.device | None = None):
        for name, value in (("num_envs", num_envs), ("num_agents", num_agents),
                            ("episode_length", episode_length)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise StoreError(f"{name} must be a positive whole number, got {value!r}.")
            if value > INT32.max:
                raise StoreError(f"{name}={value} does not fit the int32 that kernels index with.")
        self.device = torch.device(device) if device is not None else default_device()
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise StoreError("device='cuda' was asked for, but torch sees no CUDA GPU. "
                             "Leave device unset to use what this machine has.")
        seat_memory.apply(self.device)  # a room's per-seat limit, once, before any array
        self._arrays: dict[str, torch.Tensor] = {}
        self._info: dict[str, ArrayInfo] = {}
        self._pristine: dict[str, torch.Tensor] = {}
        self._constants: dict[str, np.int32 | np.float32] = {}
        self._frozen = False
        for name, value in (("num_envs", num_envs), ("num_agents", num_agents),
                            ("episode_length", episode_length)):
            self.set_constant(name, int(value))

    # -- meta information -------------------------------------------------------------------

    @property
    def num_envs(self) -> int:
        return int(self._constants["num_envs"])

    @property
    def num_agents(self) -> int:
        return int(self._constants["num_agents"])

    @property
    def episode_length(self) -> int:
        return int(self._constants["episode_length"])

    @property
    def frozen(self) -> bool:
        return self._frozen

    @property
    def names(self) -> list[str]:
        """The arrays, in the order they were pushed."""
        return list(self._arrays)

    @property
    def constants(self) -> dict[str, np.int32 | np.float32]:
        return dict(self._constants)

    def info(self, name: str) -> ArrayInfo:
        self._check_known(name)
        return self._info[name]

    # -- filling the store ------------------------------------------------------------------

    def push(self, name: str, data: np.ndarray | torch.Tensor, *, per: str = "agent",
             reset: bool = False, allow_nonfinite: bool = False) -> None:
        """Copy `data` to the device once, under `name`.

        `per` says how its leading dimensions line up with environments and agents;
        `reset=True` keeps a pristine copy on the device for resets to restore from.
        `allow_nonfinite=True` lets NaN and infinity in: only for an array that means them
        (a "no distance yet" of inf); otherwise they are a mistake that a step would carry
        into every number it computes, so they are refused here.
        """
        self._check_open(name)
        self._check_new_name(name)
        if per not in LAYOUTS:
            raise StoreError(f"per={per!r} for {name!r}: choose one of {', '.join(LAYOUTS)}.")
        host = self._as_host_array(name, data)
        if not allow_nonfinite:
            self._check_finite(name, host)
        self._check_shape(name, host.shape, per)
        self._check_room(name, host.nbytes * (2 if reset else 1))

        tensor = torch.from_numpy(host).to(self.device, copy=True)
        self._arrays[name] = tensor
        self._info[name] = ArrayInfo(name, per, tuple(host.shape), host.dtype, reset)
        if reset:
            self._pristine[name] = tensor.clone()

    def set_constant(self, name: str, value: int | float) -> None:
        """A scalar every kernel can take by name: Python int -> int32, float -> float32."""
        self._check_open(name)
        self._check_new_name(name)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise StoreError(f"constant {name!r} must be an int or a float, got {value!r}. "
                             "Arrays go through push().")
        if isinstance(value, (int, np.integer)):
            if not INT32.min <= value <= INT32.max:
                raise StoreError(f"constant {name!r}={value} does not fit in int32.")
            self._constants[name] = np.int32(value)
        else:
            if not np.isfinite(value):
                raise StoreError(f"constant {name!r} is {value}: constants must be finite.")
            self._constants[name] = np.float32(value)

    @contextmanager
    def all_or_nothing(self):
        """A block of calls that adds several arrays and constants at once (a Sampler, a
        Resetter): if any of them fails, the store is put back as it was before the block,
        so the learner can fix the cause and try again."""
        saved = (dict(self._arrays), dict(self._info), dict(self._pristine),
                 dict(self._constants), self._frozen)
        try:
            yield self
        except BaseException:
            arrays, info, pristine, constants, self._frozen = saved
            for mine, before in ((self._arrays, arrays), (self._info, info),
                                 (self._pristine, pristine), (self._constants, constants)):
                mine.clear()
                mine.update(before)
            raise

    def freeze(self) -> None:
        """No more pushes: kernels have been bound to these arrays' device addresses."""
        self._frozen = True

    # -- reading the store ------------------------------------------------------------------

    def __getitem__(self, name: str) -> torch.Tensor:
        """The live device tensor: writes to it are writes to the store."""
        self._check_known(name)
        return self._arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self._arrays or name in self._constants

    def constant(self, name: str) -> np.int32 | np.float32:
        if name not in self._constants:
            raise StoreError(f"no constant named {name!r}; constants: "
                             f"{', '.join(self._constants)}. Add one with set_constant().")
        return self._constants[name]

    def pull(self, name: str) -> np.ndarray:
        """A host copy of an array, to look at. Changing it does not change the store."""
        return self[name].cpu().numpy().copy()

    def pristine(self, name: str) -> torch.Tensor:
        """The device copy a reset restores `name` from (read it, do not write it)."""
        self._check_known(name)
        if name not in self._pristine:
            raise StoreError(f"{name!r} was pushed without reset=True, so it has no pristine "
                             "copy. Push it with reset=True to have resets restore it.")
        return self._pristine[name]

    def share_pristine(self, name: str) -> str:
        """Let kernels take the pristine copy of `name` by name, as `{name}_pristine`.

        A reset kernel reads each array beside its pristine copy, and kernels take arrays by
        name from the store. This lists the pristine copy under its own name: the same device
        memory, no copy. Kernels must only read it. Returns the new name.
        """
        pristine = self.pristine(name)
        shared = f"{name}_pristine"
        if self._arrays.get(shared) is pristine:
            return shared
        self._check_open(shared)
        self._check_new_name(shared)
        info = self._info[name]
        self._arrays[shared] = pristine
        self._info[shared] = ArrayInfo(shared, info.per, info.shape, info.dtype, reset=False)
        return shared

    @property
    def reset_names(self) -> list[str]:
        return list(self._pristine)

    def restore(self) -> None:
        """Put every reset=True array back to its pristine state, for all environments.

        A device-to-device copy: nothing crosses to the host.
        """
        for name, pristine in self._pristine.items():
            self._arrays[name].copy_(pristine)

    def summary(self) -> str:
        """A table of the arrays and constants, for printing in a notebook."""
        lines = [f"DataStore on {self.device}: {self.num_envs} envs x {self.num_agents} agents, "
                 f"episode length {self.episode_length}{' (frozen)' if self._frozen else ''}"]
        width = max([len(n) for n in [*self._arrays, *self._constants]] + [4])
        for info in self._info.values():
            lines.append(f"  {info.name:<{width}}  per {info.per:<6}  {str(info.shape):<16} "
                         f"{info.dtype.name:<8} {info.nbytes:>12,} B"
                         f"{'  reset' if info.reset else ''}")
        for name, value in self._constants.items():
            lines.append(f"  {name:<{width}}  constant    {value!s:<16} {value.dtype.name}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    # -- checks at the door -----------------------------------------------------------------

    def _check_open(self, name: str) -> None:
        if self._frozen:
            raise StoreError(f"cannot add {name!r}: the store is frozen because kernels are "
                             "already bound to its arrays. Add every array before the first "
                             "launch (or build a new DataStore).")

    def _check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise StoreError(f"{name!r} is not a valid name: kernels take arrays by name, so "
                             "use a Python/C identifier such as 'loc_x'.")
        if name in self._arrays or name in self._constants:
            raise StoreError(f"{name!r} is already in the store. Names are unique; to change "
                             "values on the device, write to store[name] in place.")

    def _check_known(self, name: str) -> None:
        if name not in self._arrays:
            hint = " It is a constant: use store.constant(name)." if name in self._constants else ""
            raise StoreError(f"no array named {name!r} in the store.{hint} "
                             f"Arrays: {', '.join(self._arrays) or 'none yet'}.")

    def _as_host_array(self, name: str, data: np.ndarray | torch.Tensor) -> np.ndarray:
        if isinstance(data, torch.Tensor):
            if data.dtype not in TORCH_TO_NUMPY:
                raise StoreError(self._dtype_message(name, str(data.dtype)))
            if not data.is_contiguous():
                raise StoreError(f"{name!r} is not contiguous in memory; kernels index it as "
                                 "one flat block. Pass data.contiguous().")
            data = data.detach().cpu().numpy()
        elif isinstance(data, (int, float, np.generic)):
            raise StoreError(f"{name!r} is a single number ({data!r}), shape (): arrays need at "
                             "least one dimension. Scalars go through set_constant().")
        elif not isinstance(data, np.ndarray):
            raise StoreError(f"{name!r} must be a numpy array or a torch tensor, got "
                             f"{type(data).__name__}. Wrap it with np.asarray(..., dtype=...).")
        if data.dtype not in DTYPES:
            raise StoreError(self._dtype_message(name, data.dtype.name))
        if not data.flags.c_contiguous:
            raise StoreError(f"{name!r} is not C-contiguous (a transpose or a strided slice?); "
                             "kernels index it as one flat block. Pass "
                             "np.ascontiguousarray(data).")
        if data.ndim == 0 or data.size == 0:
            raise StoreError(f"{name!r} has shape {data.shape}: arrays need at least one "
                             "element and one dimension. Scalars go through set_constant().")
        return data

    def _check_finite(self, name: str, host: np.ndarray) -> None:
        if host.dtype.kind != "f":
            return  # integers cannot hold NaN or infinity
        bad = ~np.isfinite(host)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise StoreError(f"{name!r} holds {int(bad.sum()):,} NaN or infinite values (the "
                             f"first, {host[where]}, at index {where}); a step would spread "
                             "them into every number it computes. Fix the data "
                             "(np.isfinite shows where), or pass allow_nonfinite=True if "
                             "they are meant.")

    def _dtype_message(self, name: str, got: str) -> str:
        allowed = ", ".join(d.name for d in DTYPES)
        hint = ""
        if "float64" in got or "double" in got:
            hint = " numpy makes float64 by default: pass data.astype(np.float32)."
        elif "int64" in got or "long" in got:
            hint = " numpy makes int64 by default: pass data.astype(np.int32)."
        elif "bool" in got:
            hint = " Store flags as uint8: pass data.astype(np.uint8)."
        return f"{name!r} has dtype {got}, which kernels here do not read; use {allowed}.{hint}"

    def _check_shape(self, name: str, shape: tuple[int, ...], per: str) -> None:
        want = {"env": (self.num_envs,), "agent": (self.num_envs, self.num_agents),
                "shared": ()}[per]
        if tuple(shape[: len(want)]) != want:
            lead = " x ".join(["num_envs", "num_agents"][: len(want)])
            raise StoreError(f"{name!r} has shape {tuple(shape)}, but per={per!r} arrays start "
                             f"with ({lead}) = {want}. Reshape it, or choose another `per`.")

    def _check_room(self, name: str, nbytes: int) -> None:
        if self.device.type != "cuda":
            return
        free, total = seat_memory.free_bytes(self.device)
        if nbytes <= free:
            return
        limit = seat_memory.limit_bytes()
        if limit is None:
            raise StoreError(f"{name!r} needs {nbytes / 2**30:.2f} GiB on the GPU but only "
                             f"{free / 2**30:.2f} of {total / 2**30:.2f} GiB is free. Use "
                             "fewer environments or agents.")
        raise StoreError(f"{name!r} needs {nbytes / 2**30:.2f} GiB on the GPU, more than the "
                         f"{free / 2**30:.2f} GiB left of {seat_memory.describe(limit)}. Use "
                         "fewer environments or agents; a larger limit is the teacher's to give.")
