"""Launch lesson 10's kernels by hand and measure them: GB/s against the card's ceiling,
registers and occupancy from the card's limits (and the shared memory per block that lowers
occupancy, to measure what it costs), bank conflicts of a shared tile.

The kernels here take a grid and a block of their own (a transpose's 2-D tiles, a grid-stride
loop's small grid), so they are launched by hand through the backend object rather than by
KernelLauncher, whose grid is one block per environment. Every time is the package's one
clock (wd_teach.timing.time_calls): CUDA events on a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from wd_teach import backends, cuda_c
from wd_teach.errors import WdTeachError
from wd_teach.timing import time_calls

WARP = 32
BANKS = 32  # shared memory: 32 banks, 4 bytes wide, on every NVIDIA GPU since Kepler


class Kernels:
    """Kernels of one source (CUDA C text or path for PyCUDA; a module, function or list of
    functions for Numba), launched by hand: `kernels.launch(name, grid, block, *args)` with
    torch tensors for arrays and Python numbers for scalars, and `shared=` bytes of dynamic
    shared memory per block where a launch asks for some.

    `kernels.bind(name, *args)` looks the arguments up once and returns the launch itself,
    `(grid, block, shared=0) -> None`: what a timing loop calls, so that it times the
    kernel and not Python turning tensors into arguments on every call."""

    def __init__(self, backend, kernels=None):
        self.backend = backends.find(backend)
        self.backend.start()
        if kernels is None:  # the lesson's own kernels
            kernels = self.backend.layer_kernels("wd_teach.fundamentals")
        self.source = kernels
        self.loaded = self.backend.load(kernels)
        self.device = self.backend.device()

    def __contains__(self, name: str) -> bool:
        return name in self.loaded

    def launch(self, name: str, grid, block, *args, shared: int = 0) -> None:
        self.bind(name, *args)(grid, block, shared)

    def bind(self, name: str, *args):
        """Kernel `name` with `args` bound: a function (grid, block, shared=0) that launches
        it, on the default stream."""
        if name not in self.loaded:
            raise WdTeachError(f"no kernel named {name} (found: {', '.join(self.loaded)}).")
        kernel, _ = self.loaded[name]
        bound = tuple(self._argument(a) for a in args)
        call = self.backend.launch_call(kernel, bound, self.device)

        def launch(grid, block, shared: int = 0) -> None:
            if not isinstance(shared, int) or shared < 0:
                raise WdTeachError(f"shared is the bytes of dynamic shared memory a block "
                                   f"gets: a whole number, 0 or more; got {shared!r}.")
            call(_dims(grid), _dims(block), 0, shared)

        return launch

    def kernel(self, name: str):
        """The compiled kernel itself (a PyCUDA Function, a Numba dispatcher)."""
        return self.loaded[name][0]

    def _argument(self, value):
        if isinstance(value, torch.Tensor):
            return self.backend.array_argument(value)
        if self.backend.reads_cuda_c:  # PyCUDA packs by the C type it read
            return value
        return np.float32(value) if isinstance(value, float) else np.int32(value)


def _dims(dims) -> tuple:
    return tuple(dims) if isinstance(dims, (tuple, list)) else (int(dims),)


def blocks_for(n: int, threads: int) -> int:
    """Blocks of `threads` that cover `n` items (the last one partly idle)."""
    return -(-n // threads)


def median_seconds(fn, device, calls: int = 20, warmup: int = 3) -> float:
    """The median time of one call of `fn` on `device` (wd_teach.timing's clock)."""
    return float(np.median(time_calls(fn, calls=calls, warmup=warmup, device=device).per_call))


def gb_per_s(nbytes: int, seconds: float) -> float:
    """Bytes moved (read + written) per second, in GB/s (10^9 bytes)."""
    return nbytes / seconds / 1e9


def copy_ceiling(nbytes: int, device) -> float:
    """GB/s of a device-to-device copy of `nbytes` (read once, written once): the most a
    kernel that reads and writes memory can hope for on this card."""
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return gb_per_s(2 * src.nbytes, median_seconds(lambda: dst.copy_(src), device))


def past_the_cache(floats: int, device) -> int:
    """At least `floats`, and on a GPU at least 4 times its L2 cache: a measurement of
    memory that the cache would otherwise serve from a repeat."""
    if torch.device(device).type != "cuda":
        return floats
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20)
    return max(floats, 4 * l2 // 4)


# Occupancy: how many warps a multiprocessor (SM) can keep resident, from the card's limits.

@dataclass(frozen=True)
class Limits:
    """What one SM of a card holds at once."""

    name: str
    sms: int
    threads_per_sm: int
    blocks_per_sm: int
    registers_per_sm: int
    shared_per_sm: int  # bytes
    register_unit: int = 256  # registers are given to a warp in multiples of this
    #: Bytes of shared memory the system keeps for every block (1 KiB since compute
    #: capability 8.0): a block that asks for s bytes takes s + this of its SM's.
    reserved_shared_per_block: int = 0
    #: The most shared memory one block may ask for without opting in to more (48 KiB).
    shared_per_block: int = 48 * 1024
    #: Memory bandwidth on paper, GB/s: twice the memory clock (data moves on both edges)
    #: times the bus's width. None where the card does not say.
    peak_gb_per_s: float | None = None

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // WARP


#: An H100 SXM's limits (compute capability 9.0; CUDA C Programming Guide, "Technical
#: Specifications per Compute Capability", and the driver's answers on an H100): what a
#: CPU-only run computes with.
H100 = Limits("NVIDIA H100 80GB HBM3 (saved limits)", sms=132, threads_per_sm=2048,
              blocks_per_sm=32, registers_per_sm=65536, shared_per_sm=228 * 1024,
              reserved_shared_per_block=1024, shared_per_block=48 * 1024,
              peak_gb_per_s=3352.0)  # HBM3: 2 x 2,619 MHz x 5,120 bits / 8

#: Resident blocks per SM by compute capability, where it is not 32 (CUDA Programming
#: Guide, "Technical Specifications per Compute Capability").
_BLOCKS_PER_SM = {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24, (12, 0): 24}


def card_limits(device=None) -> Limits:
    """This GPU's limits (torch's device properties, and the driver's attributes for what
    torch does not carry), or an H100's where there is none."""
    if not torch.cuda.is_available():
        return H100
    p = torch.cuda.get_device_properties(device or 0)
    return Limits(p.name, sms=p.multi_processor_count,
                  threads_per_sm=p.max_threads_per_multi_processor,
                  blocks_per_sm=_driver_attribute("MAX_BLOCKS_PER_MULTIPROCESSOR",
                                                  _BLOCKS_PER_SM.get((p.major, p.minor), 32)),
                  registers_per_sm=getattr(p, "regs_per_multiprocessor", 65536),
                  shared_per_sm=getattr(p, "shared_memory_per_multiprocessor", 228 * 1024),
                  reserved_shared_per_block=_driver_attribute(
                      "RESERVED_SHARED_MEMORY_PER_BLOCK", 1024 if p.major >= 8 else 0),
                  shared_per_block=getattr(p, "shared_memory_per_block", 48 * 1024),
                  peak_gb_per_s=_peak_gb_per_s())


def _driver_attribute(name: str, otherwise: int) -> int:
    """The driver's answer for device attribute `name` (CU_DEVICE_ATTRIBUTE_<name>), read
    through Numba's device; `otherwise` (the Programming Guide's value) where it will not
    say."""
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        return otherwise
    from numba.cuda.cudadrv.error import CudaDriverError, CudaSupportError

    try:
        return int(getattr(cuda.get_current_device(), name))
    except (AttributeError, CudaSupportError, CudaDriverError):
        return otherwise


def _peak_gb_per_s() -> float | None:
    """The card's memory bandwidth on paper, from the driver's memory clock (kHz) and bus
    width (bits), read through Numba's device (torch's properties do not carry them)."""
    from numba import config, cuda

    if config.ENABLE_CUDASIM:  # a simulated device has no memory clock
        return None
    from numba.cuda.cudadrv.error import CudaDriverError, CudaSupportError

    try:
        card = cuda.get_current_device()
        return 2 * card.MEMORY_CLOCK_RATE * 1e3 * card.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
    except (AttributeError, CudaSupportError, CudaDriverError):
        return None  # a driver that will not say


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    fraction: float  # resident warps / the most an SM holds
    limiter: str  # what stopped more blocks: threads, blocks, registers or shared memory


def blocks_by_registers(registers_per_thread: int, threads_per_block: int,
                        limits: Limits = H100) -> int:
    """The blocks of a kernel one SM's registers hold: each warp's registers rounded up to
    the unit they are given in, the other limits aside."""
    warps = blocks_for(threads_per_block, WARP)
    per_warp = blocks_for(registers_per_thread * WARP, limits.register_unit) * limits.register_unit
    return (limits.registers_per_sm // per_warp) // warps if per_warp else 10**9


def occupancy(registers_per_thread: int, threads_per_block: int, shared_per_block: int = 0,
              limits: Limits = H100) -> Occupancy:
    """Blocks (and warps) of a kernel that one SM holds at once, and which limit binds.
    `shared_per_block`: the bytes of shared memory a block asks for (its own arrays and the
    launch's dynamic shared memory); the system keeps `limits.reserved_shared_per_block`
    more of each block."""
    warps = blocks_for(threads_per_block, WARP)
    shared = shared_per_block + limits.reserved_shared_per_block
    fits = {
        "threads": limits.warps_per_sm // warps,
        "blocks": limits.blocks_per_sm,
        "registers": blocks_by_registers(registers_per_thread, threads_per_block, limits),
        "shared memory": limits.shared_per_sm // shared if shared else 10**9,
    }
    limiter = min(fits, key=fits.get)
    blocks = fits[limiter]
    return Occupancy(blocks, blocks * warps, blocks * warps / limits.warps_per_sm, limiter)


# Occupancy, measured: the same kernel and grid, with room for fewer blocks on each SM.

#: Threads per block of the occupancy measurement: 64, so that on an H100 the 32 blocks an
#: SM may hold fill its 2,048 threads, and every block taken away is 1/32 of its warps.
OCCUPANCY_BLOCK = 64
#: Shared memory is asked for in steps of this many bytes here (tidy numbers in a table).
SHARED_STEP = 256


def shared_for_blocks(blocks: int, limits: Limits = H100) -> int:
    """Bytes of dynamic shared memory a block asks for so that an SM has room for `blocks`
    blocks and not one more: just over 1/(blocks + 1) of the SM's shared memory, less what
    the system keeps of each block. The least such amount (rounded up to SHARED_STEP), so
    that it stays within what a block may ask for as long as it can."""
    if blocks < 1:
        raise WdTeachError(f"blocks is the blocks an SM should hold: 1 or more, got {blocks}.")
    room = limits.shared_per_sm // (blocks + 1) + 1 - limits.reserved_shared_per_block
    return max(0, blocks_for(room, SHARED_STEP) * SHARED_STEP)


def occupancy_levels(registers_per_thread: int, limits: Limits = H100,
                     threads: int = OCCUPANCY_BLOCK) -> list[tuple[int, Occupancy]]:
    """(shared bytes per block, the occupancy it leaves) from none down, halving the blocks
    an SM holds at each step, as far as a block may ask for shared memory without opting in
    to more (on an H100: 100%, 50%, 25% and 12.5%)."""
    levels = [(0, occupancy(registers_per_thread, threads, 0, limits))]
    blocks = levels[0][1].blocks_per_sm // 2
    while blocks >= 1 and shared_for_blocks(blocks, limits) <= limits.shared_per_block:
        shared = shared_for_blocks(blocks, limits)
        levels.append((shared, occupancy(registers_per_thread, threads, shared, limits)))
        blocks //= 2
    return levels


def percent(fraction: float) -> str:
    """12.5% and 25%, not 12% and 25.0%."""
    return f"{100 * fraction:.3g}%"


def occupancy_cost(rates: dict) -> str:
    """What lowering the occupancy cost, written from the measured GB/s
    `rates[backend, floats a row, occupancy]` (occupancy a fraction, 1.0 the most), so
    that the lesson says only what this run measured."""
    said, kept_at_lowest = [], {}
    for backend, width in dict.fromkeys(key[:2] for key in rates):
        at = {f: r for (b, w, f), r in rates.items() if (b, w) == (backend, width)}
        full, lowest = max(at), min(at)
        share = {f: at[f] / at[full] for f in sorted(at, reverse=True)}
        kept_at_lowest[backend, width] = share[lowest]
        each = ", ".join(f"{s:.0%} at {percent(f)}" for f, s in share.items())
        said.append(f"{backend}, {_floats(width)} a row: GB/s as a share of "
                    f"{percent(full)} occupancy's: {each}.")
        kept = full  # walking down, the last occupancy before one lost more than 10%
        for f in share:
            if share[f] < 0.9:
                break
            kept = f
        slower = f"at {percent(lowest)} it took {1 / share[lowest]:.1f} times as long."
        if kept == lowest:
            said.append(f"  Down to {percent(lowest)} occupancy it kept within 10% of its "
                        "GB/s: lowering occupancy did not slow this read here.")
        elif kept == full:
            said.append(f"  It lost more than 10% at the first step down; {slower}")
        else:
            said.append(f"  It kept within 10% down to {percent(kept)} occupancy; {slower}")
    for backend in dict.fromkeys(b for b, _ in kept_at_lowest):
        widths = sorted(w for b, w in kept_at_lowest if b == backend)
        if len(widths) > 1:
            narrow, wide = kept_at_lowest[backend, widths[0]], kept_at_lowest[backend, widths[-1]]
            if wide > narrow + 0.1:
                said.append(f"{backend}: at the lowest occupancy, rows of {_floats(widths[-1])}"
                            f" kept {wide:.0%} of their GB/s, rows of {_floats(widths[0])} "
                            f"{narrow:.0%}.")
    return "\n".join(said)


def _floats(n: int) -> str:
    return f"{n} float" + ("" if n == 1 else "s")


def registers(kernels: Kernels, name: str) -> int:
    """Registers per thread of a compiled kernel (PyCUDA: the function's num_regs; Numba:
    get_regs_per_thread of what it compiled). Launch it once first (Numba compiles then)."""
    kernel = kernels.kernel(name)
    if kernels.backend.reads_cuda_c:
        return int(kernel.num_regs)
    regs = kernel.get_regs_per_thread()
    return int(regs if isinstance(regs, int) else max(regs.values()))


def compiled_ptx(kernels: Kernels, name: str) -> str:
    """The PTX kernel `name` runs as: nvcc's of the CUDA C source, or Numba's of the newest
    signature it compiled (a kernel launched with other argument types has several, each
    an entry of the same name; ptxas_usage wants one). Launch it once first."""
    if kernels.backend.reads_cuda_c:
        return cuda_c.ptx(kernels.source)
    return list(kernels.kernel(name).inspect_asm().values())[-1]


def ptx_registers_and_bounds(ptx: str, name: str) -> dict:
    """From PTX (no GPU needed), for the kernel whose entry's name holds `name` (Numba's is
    mangled around it): `maxntid` and `min_blocks`, the two numbers of
    __launch_bounds__(threads, blocks) (PTX's .maxntid and .minnctapersm; None where the
    kernel has none), and its shared arrays' sizes in bytes. Registers are known only after
    ptxas: see ptxas_usage."""
    found = re.search(rf"\.entry\s+([\w$]*{re.escape(name)}[\w$]*)\s*\(", ptx)
    if found is None:
        raise ValueError(f"no kernel named {name} in this PTX")
    entry = ptx[found.start():]
    end = entry.find("\n}")  # the entry's closing brace: the last line of Numba's PTX
    body = entry if end < 0 else entry[:end + 2]
    bounds = re.search(r"\.maxntid\s+(\d+)", body)
    blocks = re.search(r"\.minnctapersm\s+(\d+)", body)
    return {"maxntid": int(bounds.group(1)) if bounds else None,
            "min_blocks": int(blocks.group(1)) if blocks else None,
            "shared_bytes": [int(n) for n in re.findall(r"\.shared\s+\.align\s+\d+\s+\.b8\s+"
                                                        r"[\w$]+\[(\d+)\]", body)]}


def ptxas_usage(ptx: str, name: str, arch: str = "sm_90") -> dict | None:
    """What ptxas gives kernel `name` (Numba's entry names are mangled around it) of the PTX
    for `arch`, without a GPU: {"registers": per thread, "spill_bytes": stored to local
    memory for want of registers}. Through NVIDIA's nvJitLink library (the nvidia-nvjitlink
    wheel that numba-cuda[cu13] installs), which runs ptxas in-process; None where that
    library is not here, its ptxas cannot build the PTX, or the kernel is not in it. The
    spill count is ptxas's "bytes spill stores". sm_90 is the H100's and H200's."""
    try:
        from cuda.bindings import nvjitlink

        handle = nvjitlink.create(2, [f"-arch={arch}", "-verbose"])
    except Exception:  # no cuda-bindings, or no libnvJitLink for it to open
        return None
    data = ptx.encode()
    try:
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
    except Exception:  # PTX this ptxas cannot build (a newer version, another target)
        return None
    finally:
        nvjitlink.destroy(handle)
    text = next((part for part in log.decode(errors="replace").split("Compiling entry")
                 if re.match(rf"\s*function '[\w$]*{re.escape(name)}", part)), "")
    registers = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    if registers is None:
        return None
    return {"registers": int(registers.group(1)),
            "spill_bytes": int(spills.group(1)) if spills else 0}


# Bank conflicts of a shared tile, from its row length.

def bank_conflict_ways(row_floats: int) -> int:
    """How many lanes of a warp share one bank when the warp reads a column of a tile of
    rows `row_floats` floats long (lane k at float k * row_floats): 1 is no conflict."""
    banks = [(lane * row_floats) % BANKS for lane in range(WARP)]
    return max(banks.count(b) for b in set(banks))


# The lesson's tables.

def bandwidth_row(label: str, fn, nbytes: int, device, ceiling: float | None,
                  peak: float | None = None) -> dict:
    """One row of a bandwidth table: `fn`'s median time, its GB/s, and the share of the copy's
    GB/s (`ceiling`) that is; with `peak`, the share of the card's bandwidth on paper too."""
    seconds = median_seconds(fn, device)
    return rate_row(label, gb_per_s(nbytes, seconds), ceiling, peak, seconds)


def rate_row(label: str, rate: float, ceiling: float | None, peak: float | None = None,
             seconds: float | None = None) -> dict:
    """A table row for a rate already measured (GB/s); the peak's column only where given."""
    row = {"kernel": label, "ms": f"{seconds * 1e3:.3f}" if seconds else "-",
           "GB/s": f"{rate:,.0f}", "% of copy": _share(rate, ceiling)}
    return {**row, "% of peak": _share(rate, peak)} if peak else row


def _share(rate: float, of: float | None) -> str:
    return f"{100 * rate / of:.0f}%" if of else "-"


# Step 3: the strided read at several row widths.

#: The row widths Step 3 measures: the sampler's 10 actions (a warp's rows share 10 lines),
#: then rows of 2 and of 16 lines (every lane's load in a line of its own).
ROW_WIDTHS = (10, 64, 512)


def same_bytes_at_every_width(widths, device, limits: Limits = H100) -> int:
    """How many floats Step 3's probabilities hold, the same at every row width so that each
    width moves the same bytes. On a GPU: more than the L2 holds (past_the_cache), and at the
    widest enough rows (one thread each) to fill every SM's thread slots twice, so that no
    width is short of threads. On the CPU: one warp of rows at the widest (the simulator is
    slow)."""
    widest = max(widths)
    if torch.device(device).type != "cuda":
        return WARP * widest
    return past_the_cache(2 * limits.sms * limits.threads_per_sm * widest, device)


def stride_cost(rates: dict) -> str:
    """What the row-major (strided) read cost against the action-major (coalesced) one at
    each width, written from the measured GB/s, `rates[backend, width, kernel]` with kernel
    "sum_rows" or "sum_columns": so that the lesson says only what this run measured."""
    said = []
    for backend in dict.fromkeys(key[0] for key in rates):
        widths = sorted({width for b, width, _ in rates if b == backend})
        share = {w: rates[backend, w, "sum_rows"] / rates[backend, w, "sum_columns"]
                 for w in widths}
        each = ", ".join(f"{share[w]:.0%} at {w}" for w in widths)
        said.append(f"{backend}: the row-major read's GB/s, as a share of the action-major "
                    f"read's: {each} actions a row.")
        if len(widths) == 1:
            continue
        worst = min(widths[1:], key=share.get)
        if share[worst] < 0.8 * share[widths[0]]:
            said.append(f"  The gap opened as the rows widened: at {worst} actions a row the "
                        f"row-major read took {1 / share[worst]:.1f} times as long as the "
                        "action-major one.")
        else:
            said.append("  No gap opened here as the rows widened: the row-major read kept "
                        "within 20% of its share at the narrowest rows.")
    return "\n".join(said)


def show_table(rows: list[dict]) -> None:
    """Print rows of the same keys as an aligned table."""
    if not rows:
        return
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    print("  ".join(k.rjust(widths[k]) for k in keys))
    for row in rows:
        print("  ".join(str(row[k]).rjust(widths[k]) for k in keys))
