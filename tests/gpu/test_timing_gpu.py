"""The shared clock on a GPU: CUDA events in torch's stream, read after one wait. What is
checked is how the marks relate (each call inside the span, the calls one after another on
one stream), never how long anything took."""

import torch

from wd_teach.timing import Clock, time_calls


def test_a_gpu_clock_marks_with_events_in_torchs_stream():
    clock = Clock("cuda")
    start = clock.mark()
    torch.randn(2048, 2048, device="cuda").matmul(torch.randn(2048, 2048, device="cuda"))
    end = clock.mark()
    assert isinstance(start, torch.cuda.Event) and isinstance(end, torch.cuda.Event)
    assert clock.seconds(start, end) > 0
    assert end.query()  # seconds() waited for the end mark


def test_calls_on_one_stream_fit_inside_the_span():
    a = torch.randn(1024, 1024, device="cuda")
    timed = time_calls(lambda: a.matmul(a), 20, warmup=2, device=a.device)
    assert timed.calls == 20 and all(t > 0 for t in timed.per_call)
    assert sum(timed.per_call) <= timed.total * (1 + 1e-3)  # one after another, no overlap
