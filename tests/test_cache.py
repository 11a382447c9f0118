"""The on-disk compilation cache (ember/runtime/cache.py) behind ember.build.

conftest.py turns the cache off for the suite (``EMBER_CACHE=0``); every
test here turns it on in a temporary directory of its own.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.compiler import CompileOptions
from ember.errors import EmberError
from ember.backends import cpu as cpu_backend
from ember.runtime import cache

TEXT = """
func.func @main(%x: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
"""
OTHER = TEXT.replace("graph.relu", "graph.negative")
B = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(4, 8)
X = np.arange(32, dtype=np.float32).reshape(4, 8) / 16 - 1


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(cache.SWITCH_VARIABLE, "1")
    monkeypatch.setenv(cache.DIR_VARIABLE, str(directory))
    monkeypatch.delenv(cache.MAX_BYTES_VARIABLE, raising=False)
    return directory


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts LLVM code generations (the llvm backend's _compile_parts:
    once per build, whatever the parts and threads)."""
    calls: list[int] = []
    original = cpu_backend._compile_parts

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(cpu_backend, "_compile_parts", counting)
    return calls


def run(lib: ember.runtime.Module) -> np.ndarray:
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.run(x=X)
    return executor.get_output(0).numpy()


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_a_warm_build_loads_the_entry_without_compiling(
    cache_dir: Path, compiles: list[int]
) -> None:
    cold = ember.build(TEXT, "llvm", {"b": B})
    assert len(compiles) == 1
    [key] = entries(cache_dir)
    assert len(key) == 64

    warm = ember.build(TEXT, "llvm", {"b": B})
    assert len(compiles) == 1  # loaded, not compiled
    np.testing.assert_array_equal(run(warm), run(cold))
    np.testing.assert_array_equal(run(warm), np.maximum(X + B, 0))
    assert [s.name for s in warm.input_specs] == ["x"]
    assert warm.param_names == cold.param_names == ("b",)  # weights live in the constants


def test_the_key_covers_options_target_params_ir_entry_and_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ir = ember.parse(TEXT)
    text = ember.ir.to_text(ir)
    params = {"b": B}
    base = cache.build_key(text, "llvm", CompileOptions(), params)
    changed_param = B.copy()
    changed_param[3, 7] = np.nextafter(changed_param[3, 7], np.float32(2))
    variants = [
        cache.build_key(text, "llvm", CompileOptions(bounds_check=True), params),
        cache.build_key(text, "llvm", CompileOptions(fast_math=True), params),
        cache.build_key(text, "llvm", CompileOptions(graph_pipeline="dce"), params),
        cache.build_key(text, "llvm", CompileOptions(entry="other"), params),
        cache.build_key(text, "llvm -libs=blas", CompileOptions(), params),
        cache.build_key(text, "llvm", CompileOptions(), {"b": changed_param}),
        cache.build_key(text, "llvm", CompileOptions(), {"b": B.reshape(8, 4)}),
        cache.build_key(text, "llvm", CompileOptions(), {}),
        cache.build_key(ember.ir.to_text(ember.parse(OTHER)), "llvm", CompileOptions(), params),
    ]
    assert len({base, *variants}) == len(variants) + 1
    # The same inputs give the same key; spacing in the target does not matter.
    assert cache.build_key(text, " llvm ", CompileOptions(), {"b": B.copy()}) == base

    monkeypatch.setattr(cache, "_host", lambda: "another-cpu +avx2,-avx512f")
    assert cache.build_key(text, "llvm", CompileOptions(), params) != base
    monkeypatch.setattr(cache, "_toolchain", lambda: "ember 9.9 sources 0")
    assert cache.build_key(text, "llvm", CompileOptions(), params) != base


def test_builds_that_differ_get_entries_of_their_own(
    cache_dir: Path, compiles: list[int]
) -> None:
    ember.build(TEXT, "llvm", {"b": B})
    ember.build(TEXT, "llvm", {"b": -B})
    ember.build(TEXT, "llvm", {"b": B}, options={"bounds_check": True})
    lib = ember.build(OTHER, "llvm", {"b": B})
    assert len(compiles) == 4
    assert len(entries(cache_dir)) == 4
    np.testing.assert_array_equal(run(lib), -(X + B))


def test_the_off_switches(
    cache_dir: Path, compiles: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    ember.build(TEXT, "llvm", {"b": B}, cache=False)
    ember.build(TEXT, "llvm", {"b": B}, remarks=True)
    monkeypatch.setenv(cache.SWITCH_VARIABLE, "off")
    ember.build(TEXT, "llvm", {"b": B})
    ember.build(TEXT, "llvm", {"b": B})
    assert len(compiles) == 4
    assert entries(cache_dir) == []

    monkeypatch.setenv(cache.SWITCH_VARIABLE, "maybe")
    with pytest.raises(EmberError, match="EMBER_CACHE='maybe' must be 1 or 0"):
        ember.build(TEXT, "llvm", {"b": B})
    monkeypatch.setenv(cache.SWITCH_VARIABLE, "1")
    with pytest.raises(EmberError, match="cache must be True or False"):
        ember.build(TEXT, "llvm", {"b": B}, cache="yes")  # type: ignore[arg-type]


def test_the_interp_target_is_not_cached(cache_dir: Path) -> None:
    ember.build(TEXT, "interp", {"b": B})
    assert entries(cache_dir) == []


def test_least_recently_used_entries_go_when_the_cache_is_full(
    cache_dir: Path, compiles: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    ember.build(TEXT, "llvm", {"b": B})
    [first] = entries(cache_dir)
    size = sum(f.stat().st_size for f in (cache_dir / first).iterdir())
    monkeypatch.setenv(cache.MAX_BYTES_VARIABLE, str(int(size * 2.5)))
    (cache_dir / "notes.txt").write_text("not the cache's")  # never touched
    (cache_dir / "projects").mkdir()

    ember.build(TEXT, "llvm", {"b": -B})
    [second] = [e for e in entries(cache_dir) if e not in (first, "notes.txt", "projects")]
    os.utime(cache_dir / first, (1, 1))
    os.utime(cache_dir / second, (2, 2))
    ember.build(TEXT, "llvm", {"b": B})  # a hit: `first` is now the most recent
    assert len(compiles) == 2
    ember.build(TEXT, "llvm", {"b": 2 * B})  # a third entry: `second` must go
    assert len(compiles) == 3
    kept = entries(cache_dir)
    assert first in kept and second not in kept
    assert "notes.txt" in kept and "projects" in kept
    assert len(kept) == 4

    monkeypatch.setenv(cache.MAX_BYTES_VARIABLE, "lots")
    with pytest.raises(EmberError, match="EMBER_CACHE_MAX_BYTES='lots'"):
        ember.build(TEXT, "llvm", {"b": 3 * B})


@pytest.mark.parametrize("damage", ["flip", "truncate", "remove", "manifest"])
def test_a_damaged_entry_is_rebuilt(
    cache_dir: Path, compiles: list[int], damage: str
) -> None:
    ember.build(TEXT, "llvm", {"b": B})
    [key] = entries(cache_dir)
    entry = cache_dir / key
    target = entry / ("manifest.json" if damage == "manifest" else "program.o")
    data = bytearray(target.read_bytes())
    if damage == "flip" or damage == "manifest":
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(bytes(data[: len(data) // 3]))
    else:
        (entry / "constants.bin").unlink()

    lib = ember.build(TEXT, "llvm", {"b": B})
    assert len(compiles) == 2
    np.testing.assert_array_equal(run(lib), np.maximum(X + B, 0))
    # The damaged entry was replaced by a sound one, which the next build uses.
    assert entries(cache_dir) == [key]
    ember.build(TEXT, "llvm", {"b": B})
    assert len(compiles) == 2


def test_an_unwritable_cache_warns_and_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache.SWITCH_VARIABLE, "1")
    monkeypatch.setenv(cache.DIR_VARIABLE, str(blocker / "cache"))
    with pytest.warns(UserWarning, match="cannot be written"):
        lib = ember.build(TEXT, "llvm", {"b": B})
    np.testing.assert_array_equal(run(lib), np.maximum(X + B, 0))


def _build_in_process(barrier, results, seed: int) -> None:  # type: ignore[no-untyped-def]
    barrier.wait(timeout=120)
    lib = ember.build(TEXT, "llvm", {"b": B})
    results.put((seed, run(lib).tolist()))


def test_concurrent_builds_of_one_key(cache_dir: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    workers = [
        context.Process(target=_build_in_process, args=(barrier, results, i))
        for i in range(2)
    ]
    for worker in workers:
        worker.start()
    outputs = [results.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for _, values in outputs:
        np.testing.assert_array_equal(np.array(values, np.float32), np.maximum(X + B, 0))
    # One sound entry, no temporary directories left behind.
    [key] = entries(cache_dir)
    assert len(key) == 64
    assert cache.lookup(key) is not None


def test_storing_a_key_that_is_already_there_keeps_the_first(
    cache_dir: Path, recwarn: pytest.WarningsRecorder
) -> None:
    """What the loser of two concurrent builds of one key does."""
    lib = ember.build(TEXT, "llvm", {"b": B})
    [key] = entries(cache_dir)
    first = (cache_dir / key / "manifest.json").stat().st_ino
    cache.store(key, lib)
    assert entries(cache_dir) == [key]  # no temporary directory left either
    assert (cache_dir / key / "manifest.json").stat().st_ino == first
    assert not [w for w in recwarn if "cache" in str(w.message)]


def test_the_default_directory_is_private_and_needs_a_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.SWITCH_VARIABLE, "1")
    monkeypatch.delenv(cache.DIR_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    ember.build(TEXT, "llvm", {"b": B})
    assert cache.directory() == tmp_path / "xdg" / "ember"
    assert len(entries(tmp_path / "xdg" / "ember")) == 1
    assert (tmp_path / "xdg" / "ember").stat().st_mode & 0o077 == 0

    def homeless() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(Path, "home", homeless)
    with pytest.warns(UserWarning, match="there is no home directory; set EMBER_CACHE_DIR"):
        lib = ember.build(TEXT, "llvm", {"b": B})
    np.testing.assert_array_equal(run(lib), np.maximum(X + B, 0))



def test_the_options_of_a_build_import_no_lowering() -> None:
    """ember.build needs CompileOptions for every key, warm builds too: they
    come without the lowerings and the xDSL dialects those build."""
    from tests.test_runtime_artifact import run_python

    code = (
        "import sys\n"
        "from ember.compiler import CompileOptions\n"
        "CompileOptions()\n"
        "print(sorted(m for m in sys.modules if m.startswith('ember.lowering.')))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
