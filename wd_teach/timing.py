"""How long work takes where it runs: the one clock of every measurement in the package.

Work on a GPU is queued: a kernel launch returns at once, long before the kernel has run,
so a clock on the host read around a launch times the launch, not the work. On a GPU the
clock here is therefore CUDA events, recorded into torch's stream between the kernels and
read once the last of them has happened; on the CPU, where a call's work is done when it
returns, it is time.perf_counter. Marking does not wait for the GPU: timed calls keep it
as busy as untimed ones would, and the only wait is for the last mark.

    clock = Clock(device)
    start = clock.mark(); work(); end = clock.mark()
    clock.seconds(start, end)                    # waits for `end` on a GPU

    timed = time_calls(fn, calls=100, warmup=5, device=device)
    timed.total       # seconds from the first call's start to the last call's end
    timed.per_call    # seconds of each call

`total` spans the gaps between calls as well (on a GPU, the time it waited for Python to
queue more work): what a user waits for, the measure of throughput. `per_call` holds only
each call's own time: its median is the measure of one call. The env's throughput
(wd_teach.env.wrapper.steps_per_second), the benchmark rows (wd_teach.scale.bench), the
sampler's table (wd_teach.sampler.bench) and the training loop's phases
(wd_teach.train.metrics.PhaseTimer) all read this clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from wd_teach.errors import BenchError


class Clock:
    """Marks in time on `device`: CUDA events on a GPU, perf_counter readings on the CPU."""

    def __init__(self, device: torch.device | str):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"

    def mark(self):
        """Now, in the order of the work queued so far (on a GPU: an event in torch's
        current stream, which marks the moment the GPU gets there)."""
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def seconds(self, start, end) -> float:
        """Seconds from mark `start` to mark `end`; on a GPU, waits until `end` has passed."""
        if not self.cuda:
            return end - start
        end.synchronize()
        return start.elapsed_time(end) / 1000

    def wait(self) -> None:
        """Until the device has done everything queued on it (nothing to wait for on the CPU)."""
        if self.cuda:
            torch.cuda.synchronize(self.device)


@dataclass(frozen=True)
class Timed:
    """What `time_calls` measured, in seconds."""

    total: float  # from the first timed call's start to the last one's end
    per_call: list[float]  # each call's own time

    @property
    def calls(self) -> int:
        return len(self.per_call)


def time_calls(fn: Callable[[], object], calls: int, warmup: int = 0,
               device: torch.device | str = "cpu") -> Timed:
    """Time `calls` calls of `fn` on `device`, after `warmup` untimed calls (kernels compile,
    caches fill, CUDA graphs are recorded) and once the device has finished them."""
    if not isinstance(calls, int) or calls < 1 or not isinstance(warmup, int) or warmup < 0:
        raise BenchError(f"time_calls needs calls >= 1 and warmup >= 0 (whole numbers), got "
                         f"calls={calls!r}, warmup={warmup!r}.")
    clock = Clock(device)
    for _ in range(warmup):
        fn()
    clock.wait()
    marks = []
    for _ in range(calls):
        start = clock.mark()
        fn()
        marks.append((start, clock.mark()))
    total = clock.seconds(marks[0][0], marks[-1][1])  # on a GPU, the one wait
    return Timed(total, [clock.seconds(start, end) for start, end in marks])
