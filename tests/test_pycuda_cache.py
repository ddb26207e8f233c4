"""PyCUDA's on-disk cache of compiled kernels is written in place, so a process that loads a
kernel another is still writing gets half a file ("device kernel image is invalid": one of
32 seats in bench/room.py on an H200). wd_teach.cuda_c.compile_module then compiles afresh,
past the cache; any other load error still reaches the caller. PyCUDA is faked here: the
real one runs in tests/gpu."""

import sys
import types

import pytest

from wd_teach import cuda_c


class LogicError(RuntimeError):
    """pycuda.driver.LogicError, as the fake driver raises it."""


class CompileError(RuntimeError):
    """pycuda.driver.CompileError, which compile_module turns into its own CompileError."""


def fake_pycuda(monkeypatch, first_error):
    """A pycuda whose SourceModule raises `first_error` when it reads the cache, and
    records every call's cache_dir."""
    calls = []

    def source_module(source, no_extern_c, include_dirs, cache_dir=None):
        calls.append(cache_dir)
        if cache_dir is not False and first_error is not None:
            raise LogicError(first_error)
        return ("module", source)

    driver = types.SimpleNamespace(LogicError=LogicError, CompileError=CompileError)
    monkeypatch.setattr(cuda_c, "require_pycuda", lambda: driver)
    monkeypatch.setattr(cuda_c, "_modules", {})
    compiler = types.ModuleType("pycuda.compiler")
    compiler.SourceModule = source_module
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    return calls


def test_a_half_written_cached_kernel_is_compiled_again_past_the_cache(monkeypatch):
    calls = fake_pycuda(monkeypatch, "cuModuleLoadDataEx failed: device kernel image is "
                                     "invalid - error   : Binary format for key='0', ident='' "
                                     "is not recognized")
    module = cuda_c.compile_module("__global__ void k() {}", dirs=[])
    assert module == ("module", "__global__ void k() {}")
    assert calls == [None, False]
    assert cuda_c.compile_module("__global__ void k() {}", dirs=[]) is module  # kept
    assert len(calls) == 2


def test_a_whole_cached_kernel_is_compiled_once(monkeypatch):
    calls = fake_pycuda(monkeypatch, None)
    cuda_c.compile_module("__global__ void k() {}", dirs=[])
    assert calls == [None]


def test_any_other_load_error_reaches_the_caller(monkeypatch):
    calls = fake_pycuda(monkeypatch, "cuModuleLoadDataEx failed: out of memory")
    with pytest.raises(LogicError, match="out of memory"):
        cuda_c.compile_module("__global__ void k() {}", dirs=[])
    assert calls == [None]
