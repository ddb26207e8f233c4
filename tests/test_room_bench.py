"""bench/room.py's verdicts, on made-up seats: who was starved (failed, or slower than k x
its env's median) and the table's last line. The seats' trainings run in tests/gpu."""

import importlib.util
import json
from pathlib import Path

from wd_teach.lessons.sizes import CPU_SIZES, GPU_SIZES

BENCH = Path(__file__).resolve().parents[1] / "bench" / "room.py"
spec = importlib.util.spec_from_file_location("bench_room", BENCH)
room = importlib.util.module_from_spec(spec)
spec.loader.exec_module(room)


def seat(number, env, seconds=None, error=None):
    if error:
        return {"seat": number, "env": env, "rc": 1, "error": error}
    return {"seat": number, "env": env, "rc": 0, "seconds": seconds, "peak_bytes": 2**29,
            "num_envs": 64}


def test_lesson_07s_mix_is_three_cartpoles_to_one_tag():
    assert [room.seat_env(i) for i in range(8)] == ["cartpole"] * 3 + ["tag_continuous"] + \
        ["cartpole"] * 3 + ["tag_continuous"]


def test_a_tag_seat_trains_what_lesson_07_trains():
    """The Tag seat's overrides are lesson 07's own `tag_run`: the lesson's cell that makes
    them, run here, gives the same dict at both sizes."""
    notebook = json.loads((BENCH.parents[1] / "notebooks" / "07_training.ipynb").read_text())
    cell = next("".join(c["source"]) for c in notebook["cells"]
                if c["cell_type"] == "code" and "tag_run = " in "".join(c["source"]))
    made = cell[:cell.index("tag = Trainer(")]  # the lines up to the trainer: plain dicts
    for sizes in (GPU_SIZES, CPU_SIZES):
        found = {"sizes": sizes}
        exec(made, found)
        assert found["tag_run"] == room.lesson_tag_run(sizes)


def test_a_seat_is_starved_when_it_failed_or_took_k_times_its_envs_median():
    seats = [seat(0, "cartpole", 10), seat(1, "cartpole", 11), seat(2, "cartpole", 25),
             seat(3, "tag_continuous", 40),
             seat(4, "tag_continuous", error="torch.OutOfMemoryError: ...")]
    room.mark_starved(seats, 2.0)
    assert [s["starved"] for s in seats] == [False, False, True, False, True]
    shown = room.table(seats, 3 * 2**30, 1.5)
    assert "YES: torch.OutOfMemoryError" in shown
    assert shown.splitlines()[-1] == "5 seats, 1.5 GiB each; card peak 3.0 GiB; 2 starved"


def test_the_card_watched_is_the_one_the_seats_see(monkeypatch):
    """Seats on the second card of two (CUDA_VISIBLE_DEVICES=1) are watched on that card:
    nvidia-smi numbers the machine's cards, not the ones a process is shown."""
    asked = []

    def nvidia_smi(cmd, **kw):
        asked.append(cmd[cmd.index("-i") + 1])
        return type("Done", (), {"stdout": "1024\n"})()

    monkeypatch.setattr(room.subprocess, "run", nvidia_smi)
    for shown, card in [(None, "0"), ("1", "1"), ("1,0", "1"), ("", "0")]:
        if shown is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", shown)
        assert room.card_memory("memory.used") == 1024 * 2**20
        assert asked[-1] == card
