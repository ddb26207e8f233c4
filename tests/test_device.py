"""Device discovery, the doctor's table and the choice of backend."""

import pytest

import wd_teach
from wd_teach import device
from wd_teach.cli import main
from wd_teach.errors import MissingPieceError


def test_report_has_a_row_for_every_piece():
    report = wd_teach.discover()
    pieces = [row.piece for row in report.rows]
    for piece in ["GPU", "CUDA driver", "nvcc", "PyCUDA", "Numba CUDA", "CUDA simulator",
                  "numpy", "torch", "Triton"]:
        assert piece in pieces
    assert "backends that can run here" in report.table()


def fresh_report():
    """The doctor's report made anew (the monkeypatched pieces seen), and not kept after."""
    device.discover.cache_clear()
    try:
        return device.discover()
    finally:
        device.discover.cache_clear()


def test_triton_is_optional_and_the_doctor_says_what_it_is_for(monkeypatch):
    real = device._version
    monkeypatch.setattr(device, "_version", lambda d: None if d == "triton" else real(d))
    report = fresh_report()
    row = next(r for r in report.rows if r.piece == "Triton")
    assert row.ok is None and row.found == "not installed"  # optional, never a NO
    if report.has_gpu:  # what runs instead, and where Triton comes from
        assert "optional" in row.todo and "PyTorch's two kernels" in row.todo
    else:
        assert row.todo == "used on a GPU only"


def test_every_missing_piece_says_what_to_do():
    for row in wd_teach.discover().rows:
        if row.ok is False:
            assert row.todo, f"{row.piece} is missing but the doctor gives no advice"


def test_simulator_runs_numba_when_there_is_no_gpu():
    report = wd_teach.discover()
    assert report.has_gpu == wd_teach.gpu_available()
    if not report.has_gpu:
        assert report.simulator
        assert report.backends == ("numba",)


def test_backend_choice_honours_the_learner(monkeypatch):
    monkeypatch.delenv("WD_TEACH_BACKEND", raising=False)
    assert wd_teach.choose_backend() == wd_teach.discover().backends[0]
    assert wd_teach.choose_backend("numba") == "numba"
    monkeypatch.setenv("WD_TEACH_BACKEND", "numba")
    assert wd_teach.choose_backend() == "numba"
    monkeypatch.setenv("WD_TEACH_BACKEND", "opencl")
    with pytest.raises(MissingPieceError, match="unknown backend 'opencl'"):
        wd_teach.choose_backend()


@pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the message on a machine with no GPU")
def test_forcing_pycuda_without_gpu_explains_why_not():
    with pytest.raises(MissingPieceError, match="this machine has none.*backend='numba'"):
        wd_teach.choose_backend("pycuda")


def test_old_driver_with_new_numba_toolkit_is_diagnosed(monkeypatch):
    """Colab's driver can be older than pip's CUDA: Numba's PTX would be refused."""
    monkeypatch.setattr(device, "_gpu", lambda: ("Tesla T4", (7, 5)))
    monkeypatch.setattr(device, "_driver_cuda_version", lambda: (12, 4))
    monkeypatch.setattr(device, "_numba_toolkit", lambda: (13, 0))
    report = fresh_report()
    row = next(r for r in report.rows if r.piece == "Numba's CUDA")
    assert row.ok is False
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in row.todo
    assert 'numba-cuda[cu12]' in row.todo and "nvidia-cuda-nvcc-cu12==12.4.*" in row.todo


def test_numpy_too_new_for_numba_cuda_is_flagged():
    assert device._numpy_ok("2.4.4")
    assert not device._numpy_ok("2.5.0")


def test_lesson_sizes_are_small_on_cpu_and_large_on_gpu(monkeypatch):
    small, full = wd_teach.lesson_sizes(gpu=False), wd_teach.lesson_sizes(gpu=True)
    assert small.agent_slots < 100 < 100_000 < full.agent_slots
    monkeypatch.delenv("WD_TEACH_SIZES", raising=False)
    assert wd_teach.lesson_sizes() == (full if wd_teach.gpu_available() else small)


@pytest.mark.parametrize("choice, want", [("small", False), ("full", True), (" Full ", True)])
def test_lesson_sizes_can_be_chosen_by_hand(monkeypatch, choice, want):
    monkeypatch.setenv("WD_TEACH_SIZES", choice)
    assert wd_teach.lesson_sizes() == wd_teach.lesson_sizes(gpu=want)


def test_a_wrong_size_choice_says_what_to_use(monkeypatch):
    monkeypatch.setenv("WD_TEACH_SIZES", "huge")
    with pytest.raises(wd_teach.WdTeachError, match="use 'small' or 'full'"):
        wd_teach.lesson_sizes()


def test_doctor_command_prints_the_table(capsys):
    assert main(["doctor"]) == 0
    assert "Numba CUDA" in capsys.readouterr().out


def test_demo_command_checks_every_backend_against_numpy(capsys):
    assert main(["demo", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    for backend in wd_teach.discover().backends:
        assert backend in out


@pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the message on a machine with no GPU")
def test_demo_with_unavailable_backend_fails_cleanly(capsys):
    assert main(["demo", "--backend", "pycuda"]) == 2
    assert "runs CUDA C on an NVIDIA GPU" in capsys.readouterr().err


def test_backend_names_come_from_one_list():
    """The wrapper, the configs, the bench and the command line take the one list."""
    from wd_teach import backends
    from wd_teach.cli import main  # noqa: F401  (imports the parser's choices)
    from wd_teach.device import BACKENDS, ENV_BACKENDS, NUMPY
    from wd_teach.scale import bench
    from wd_teach.train import config

    assert ENV_BACKENDS is backends.ALL and NUMPY is backends.NUMPY
    assert ENV_BACKENDS == (*wd_teach.BACKENDS, NUMPY) and BACKENDS == wd_teach.BACKENDS
    assert bench.ENV_BACKENDS is config.ENV_BACKENDS is ENV_BACKENDS  # imported, not copied
