"""Two things that make the training loop fast on a GPU: CUDA graphs and cheaper matmuls.

**CUDA graphs.** A rollout of a hundred steps is some ten thousand small kernels (the
policy's layers, the sampler, the env step, the resets, the bookkeeping). Each costs the
host a few microseconds to launch, often more than the GPU takes to run it, so the GPU sits
waiting for Python. A CUDA graph records the whole sequence once and replays it with one
call: the same kernels on the same memory, launched by the driver, not by Python.

`Graphed(fn, ...)` does that for a function that only queues GPU work on fixed memory:

    call 1   runs `fn` as usual (on a stream of its own): kernels compile, torch's
             allocator and cuBLAS settle, and the results are real
    call 2   records `fn` into a graph (recording runs nothing), then replays it
    later    replays; nothing of `fn`'s Python runs

Recording needs what `fn` reads and writes to stay where it is. If any of the tensors that
`watch()` lists has moved (a policy moved to the CPU and back, an optimiser's state loaded
from a checkpoint), the recording is thrown away and the next call starts again at call 1.

**Precision.** `precision_context("tf32")` lets float32 matmuls use the tensor cores'
TF32 format (10 bits of mantissa instead of 23: some 5 to 8 times the throughput on an
H100, accurate enough for RL's noisy gradients); "bf16" runs the policy under autocast in
bfloat16; "fp32" (the default) changes nothing, so results agree bit for bit with the CPU.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from contextlib import contextmanager

import torch

#: The precisions a run can ask for (trainer.precision).
PRECISIONS = ("fp32", "tf32", "bf16")


@contextmanager
def precision_context(precision: str, device: torch.device):
    """Matmuls in `precision` inside the block (fp32 outside it, as before)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                         f"{precision!r}.")
    if precision == "fp32" or device.type != "cuda":
        yield
        return
    if precision == "bf16":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            yield
        return
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@contextmanager
def no_collection():
    """Python's cyclic garbage collector held off while a graph records, after one
    collection first. Collecting frees dead objects, and freeing one that owns CUDA
    resources (an earlier trainer's CUDA graph, a kernel module, a stream) calls the
    driver in a way that a recording stream forbids: the recording is then invalidated and
    fails later, at some unrelated operation ("operation failed due to a previous error
    during capture"). Held off, they wait for the next collection after the recording. (An
    object freed because its last reference goes, not by the collector, is freed at once:
    a recorded function must not drop the last reference to such an object.)"""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Graphed:
    """`fn()` run once, then recorded as a CUDA graph and replayed (see the module's doc).

    `watch()`: the tensors whose memory the recording relies on (parameters, optimiser
    state); `stream`: where the first run and the recording happen (a stream from
    wd_teach.launch.kernel_stream, so PyCUDA and Numba kernels are recorded too).
    Returns what `fn` returned: on a replay, the same tensors, now holding new values.
    """

    def __init__(self, fn: Callable, stream: torch.cuda.Stream,
                 watch: Callable[[], Iterable[torch.Tensor]] = tuple):
        self.fn, self.stream, self.watch = fn, stream, watch
        self.graph: torch.cuda.CUDAGraph | None = None
        self.result = None
        self.replays = 0
        self._warm = False
        self._key: tuple = ()

    def __call__(self):
        key = tuple(t.data_ptr() for t in self.watch())
        if key != self._key:  # something moved: what was recorded would read stale memory
            self.reset()
            self._key = key
        if not self._warm:
            self._warm = True
            return self._on_stream(self.fn)
        if self.graph is None:
            graph = torch.cuda.CUDAGraph()
            with no_collection(), torch.cuda.graph(graph, stream=self.stream,
                                                   capture_error_mode="thread_local"):
                self.result = self.fn()
            self.graph = graph  # only a recording that ended well is replayed
        self.graph.replay()
        self.replays += 1
        return self.result

    def reset(self) -> None:
        """Forget the recording: the next call runs `fn` as usual again."""
        self.graph, self.result, self._warm = None, None, False

    def _on_stream(self, fn):
        """Run `fn` on our stream, ordered after what was queued before and before what
        comes after (a graph's first run must not be on the default stream)."""
        outer = torch.cuda.current_stream()
        self.stream.wait_stream(outer)
        with torch.cuda.stream(self.stream):
            result = fn()
        outer.wait_stream(self.stream)
        return result


def maybe_graphed(enabled: bool, fn: Callable, stream_backend: str | None,
                  watch: Callable[[], Iterable[torch.Tensor]] = tuple):
    """A Graphed `fn` when `enabled` (a GPU run with graphs on), else `fn` itself."""
    if not enabled:
        return fn
    from wd_teach.launch import kernel_stream

    return Graphed(fn, kernel_stream(stream_backend), watch)
