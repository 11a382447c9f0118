"""The ``llvm`` backend compiles a program as parts, on several threads.

A build streams the kernels to LLVM (``ember.backends.cpu.emit_program_object``):
each is lowered to the llvm dialect and printed, and a part goes to LLVM on
ember's thread count (``set_num_threads``) once its kernels hold ``PART_OPS``
ops, while Python lowers the next; ``ember.backends.link.link_objects``
makes the parts' objects the artifact's one object.  What must hold: the
same bytes whatever the thread count, each function's machine code what a
one-part build makes, a part LLVM rejects named by its kernels, and builds
from several threads at once all finish.  ``PART_OPS`` is lowered here so
that small networks split too.
"""

from __future__ import annotations

import platform
import struct
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import ember
from ember.backends import cpu, llvm_text
from ember.backends.link import link_objects
from ember.errors import RuntimeFailure
from ember.runtime import elf, threads
from ember.runtime.jit import load_object
from ember.testing import workloads


@pytest.fixture(autouse=True)
def restore_thread_count() -> Iterator[None]:
    before = threads.num_threads()
    yield
    threads.set_num_threads(before)


DEFAULT_SWITCH_INTERVAL = sys.getswitchinterval()


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "PART_OPS", 40)


def build(name: str = "tiny_pipe") -> ember.runtime.Module:
    module, params = workloads.get(name)
    return ember.build(module, target="llvm", params=params, cache=False)


def run(lib: ember.runtime.Module, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(lib.input_specs[0].shape)
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.run(data=x.astype(np.float32))
    return executor.get_output(0).numpy()


def functions(obj: bytes) -> dict[str, bytes]:
    """Each defined function's machine code (relocated bytes as zeros)."""
    found = elf.read_object(obj, platform.machine(), "program.o")
    code = {}
    for name, symbol in found.symbols.items():
        if symbol.kind == elf.STT_FUNC and symbol.defined:
            start = found.sections[symbol.section].offset + symbol.value
            code[name] = obj[start : start + symbol.size]
    return code


def test_the_object_is_the_same_bytes_whatever_the_thread_count(small_parts) -> None:
    built = {}
    for count in (1, 2, 3):
        threads.set_num_threads(count)
        jit = build()._jit  # type: ignore[attr-defined]
        assert isinstance(jit.ir, tuple) and len(jit.ir) == 3  # compiled as three parts
        built[count] = (jit.emit_object(), jit.llvm_ir)  # the IR linked into one module
    assert built[1] == built[2] == built[3]


def test_resnet18_is_the_same_bytes_on_one_thread_and_on_two() -> None:
    objects = []
    for count in (1, 2):
        threads.set_num_threads(count)
        objects.append(build("resnet18")._jit.emit_object())  # type: ignore[attr-defined]
    assert objects[0] == objects[1]


def test_parts_compile_each_function_as_one_module_does(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts change where functions are, not their machine code: a kernel
    and its outlined loops are optimised together, as in one module."""
    threads.set_num_threads(2)
    parted = build()
    monkeypatch.setattr(cpu, "PART_OPS", 1 << 30)
    whole = build()
    assert isinstance(whole._jit.ir, str)  # type: ignore[attr-defined]
    code = [functions(lib._jit.emit_object()) for lib in (parted, whole)]  # type: ignore[attr-defined]
    assert code[0] == code[1]
    np.testing.assert_array_equal(run(parted, 5), run(whole, 5))


def test_a_build_releases_its_ir_while_llvm_compiles(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that releases memory (weights of RELEASE_BYTES and more)
    collects the IR its kernels left dead as each part goes to LLVM, and
    once more when the last is made and every part has started (a
    collection holds the GIL: a thread could not start one), not after
    LLVM is done.  Here the part that starts last waits for that last
    collection before it returns."""
    from ember.runtime import memory

    threads.set_num_threads(2)
    monkeypatch.setattr(cpu, "RELEASE_BYTES", 0)
    translated: list[int] = []
    released = threading.Event()
    waited: list[bool] = []
    assemble, compile_part, release = llvm_text.assemble, cpu._compile_part, memory.release_free_memory

    def translating(*args):
        translated.append(1)
        return assemble(*args)

    starts = iter(range(3))

    def compiling(*args):
        last = next(starts) == 2
        compiled = compile_part(*args)
        if last:
            waited.append(released.wait(timeout=30))
        return compiled

    after: list[int] = []  # how many parts were translated at each release

    def releasing() -> None:
        release()
        after.append(len(translated))
        if len(after) == 5:  # the graph stage's, one per part, the last
            released.set()

    monkeypatch.setattr(llvm_text, "assemble", translating)
    monkeypatch.setattr(cpu, "_compile_part", compiling)
    monkeypatch.setattr(memory, "release_free_memory", releasing)
    lib = build()
    assert len(translated) == 3 and waited == [True]
    assert after == [0, 1, 2, 3, 3]
    monkeypatch.undo()
    np.testing.assert_array_equal(run(lib, 7), run(build(), 7))


def test_a_module_compiled_in_parts_exports_and_loads(small_parts, tmp_path) -> None:
    """The linked object passes every check ``ember.load_module`` makes
    (ELF structure, relocations, the entry and the layout digest)."""
    threads.set_num_threads(2)
    lib = build()
    lib.export_library(tmp_path / "lib")
    loaded = ember.load_module(tmp_path / "lib")
    np.testing.assert_array_equal(run(loaded, 6), run(lib, 6))


def test_llvm_runs_on_the_thread_count_ember_is_set_to(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    compile_part = cpu._compile_part

    def spy(*args):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return compile_part(*args)

    monkeypatch.setattr(cpu, "_compile_part", spy)
    threads.set_num_threads(1)
    build()
    assert seen == [threading.current_thread().name] * 3
    seen.clear()
    threads.set_num_threads(2)
    build()
    assert len(seen) == 3 and all(name.startswith("ember-llvm") for name in seen)
    assert len(set(seen)) <= 2


def test_a_part_llvm_rejects_is_named_by_its_kernels(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    assemble = llvm_text.assemble

    def broken(*args):  # type: ignore[no-untyped-def]
        text = assemble(*args)
        return text + "\nnot llvm ir\n" if 'define void @"dense"' in text else text

    monkeypatch.setattr(llvm_text, "assemble", broken)
    threads.set_num_threads(2)
    rejected = r"LLVM rejected the module \(the part holding dense\): LLVM IR parsing error"
    with pytest.raises(RuntimeFailure, match=rejected):
        build()


def test_builds_from_several_threads_at_once_all_finish(small_parts) -> None:
    threads.set_num_threads(2)
    objects: list[bytes] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            objects.append(build()._jit.emit_object())  # type: ignore[attr-defined]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=one) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert not any(worker.is_alive() for worker in workers), "a build hung"
    assert errors == [] and len(objects) == 3 and len(set(objects)) == 1
    assert sys.getswitchinterval() == DEFAULT_SWITCH_INTERVAL  # the last build restored it


# -- link_objects: several objects as one ----------------------------------------

CALLER = """
declare void @store(ptr)
define void @caller(ptr %out) {
  call void @store(ptr %out)
  ret void
}
"""
CALLEE = """
@answer = constant i32 42
define void @store(ptr %out) {
  %v = load i32, ptr @answer
  store i32 %v, ptr %out
  ret void
}
"""


def test_linked_objects_call_each_other() -> None:
    objects = [cpu.emit_ir_object(text)[1] for text in (CALLER, CALLEE)]
    linked = link_objects(objects)
    found = elf.read_object(linked, platform.machine(), "linked")
    assert found.function("caller") and found.function("store") and found.undefined == []
    assert link_objects(objects) == linked  # the same bytes for the same parts
    jit = load_object(linked)
    out = np.zeros(1, np.int32)
    jit.run("caller", out)
    assert out[0] == 42


def test_a_symbol_two_objects_define_is_an_error() -> None:
    obj = cpu.emit_ir_object(CALLEE)[1]
    with pytest.raises(RuntimeFailure, match="symbol store is defined by two object parts"):
        link_objects([obj, obj])


def test_a_relocation_against_no_symbol_stays_against_none() -> None:
    """Symbol 0 is "no symbol" (``R_X86_64_NONE``-style entries): it maps to
    itself, not to some part's first local."""
    caller, callee = (cpu.emit_ir_object(text)[1] for text in (CALLER, CALLEE))

    def relocations(obj: bytes) -> list[tuple[int, tuple[int, int, int]]]:
        """(where in ``obj``, (offset, info, addend)) of each RELA entry."""
        found = elf.read_object(obj, platform.machine(), "object")
        return [
            (at, struct.unpack_from("<QQq", obj, at))
            for section in found.sections
            if section.kind == 4  # SHT_RELA
            for at in range(section.offset, section.offset + section.size, 24)
        ]

    at, (offset, _, _) = relocations(caller)[0]
    patched = bytearray(caller)
    struct.pack_into("<QQq", patched, at, offset, 0, 0)  # type 0 against symbol 0
    linked = link_objects([bytes(patched), callee])
    assert (offset, 0, 0) in [entry for _, entry in relocations(linked)]


def test_a_kernel_that_fails_to_lower_mid_stream_stops_the_build_cleanly(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel is lowered while LLVM compiles the parts before it: its
    error is the build's, and the pool's threads are gone after it."""
    from ember.errors import PassError
    from ember.lowering import kernel_to_llvm

    translate = kernel_to_llvm._KernelTranslator.translate
    lowered: list[str] = []

    def failing_second(self):  # type: ignore[no-untyped-def]
        lowered.append(self.kernel.sym_name.data)
        if len(lowered) == 2 and not self.in_parallel:
            raise PassError(f"lower-kernel-to-llvm: cannot lower @{lowered[-1]} (test)")
        return translate(self)

    parts: list[int] = []
    assemble = llvm_text.assemble
    monkeypatch.setattr(llvm_text, "assemble", lambda *a: parts.append(1) or assemble(*a))
    monkeypatch.setattr(kernel_to_llvm._KernelTranslator, "translate", failing_second)
    threads.set_num_threads(2)
    with pytest.raises(PassError, match=r"cannot lower @\w+ \(test\)"):
        build()
    assert parts, "no part was handed to LLVM before the failing kernel"
    assert not [t for t in threading.enumerate() if t.name.startswith("ember-llvm")]


def test_a_kernel_whose_schedule_fails_mid_stream_stops_the_build_cleanly(
    small_parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernels are scheduled as they are lowered, while LLVM compiles the
    parts before them: an error of a schedule pass on a later kernel is the
    build's, and the pool's threads are gone after it."""
    from ember.errors import PassError
    from ember.passes.kernel_vectorize import KernelVectorizePass

    rewrite = KernelVectorizePass.rewrite_kernel
    seen: list[str] = []

    def failing_second(self, kernel):  # type: ignore[no-untyped-def]
        seen.append(kernel.sym_name.data)
        if len(seen) == 2:
            raise PassError(f"kernel-vectorize: cannot schedule @{seen[-1]} (test)")
        rewrite(self, kernel)

    parts: list[int] = []
    assemble = llvm_text.assemble
    monkeypatch.setattr(llvm_text, "assemble", lambda *a: parts.append(1) or assemble(*a))
    monkeypatch.setattr(KernelVectorizePass, "rewrite_kernel", failing_second)
    threads.set_num_threads(2)
    with pytest.raises(PassError, match=r"cannot schedule @\w+ \(test\)"):
        build()
    assert parts, "no part was handed to LLVM before the failing kernel"
    assert not [t for t in threading.enumerate() if t.name.startswith("ember-llvm")]


def test_one_thread_fewer_compiles_while_python_makes_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """On 3 threads, at most 2 parts compile while the stream still makes
    parts (Python's thread keeps a core), and all 3 once it is done; the
    parts start in the order they were made."""
    made = threading.Event()
    # Three compiles at once pass it; two alone would wait out its timeout.
    three = threading.Barrier(3, timeout=30)
    lock = threading.Lock()
    active, during = [0], [0]

    order: list[str] = []

    def compile_part(llvm_ir: str, target: object, kernels: tuple[str, ...]) -> tuple[str, bytes]:
        with lock:
            order.append(llvm_ir)
            active[0] += 1
            if not made.is_set():
                during[0] = max(during[0], active[0])
        assert made.wait(timeout=30)  # the first ones hold their slots until then
        three.wait()
        with lock:
            active[0] -= 1
        return llvm_ir, b""

    def texts() -> Iterator[tuple[str, tuple[str, ...]]]:
        for n in range(6):
            yield f"part {n}", ()
        for _ in range(3000):  # until two compile (or 30 s), and a moment for a third
            with lock:
                if active[0] >= 2:
                    break
            time.sleep(0.01)
        time.sleep(0.05)
        made.set()

    monkeypatch.setattr(cpu, "_compile_part", compile_part)
    monkeypatch.setattr(cpu, "link_objects", lambda objects: b"linked")
    ir, _ = cpu._compile_parts(texts(), ember.target.Target(), None, 3)
    assert ir == tuple(order) == tuple(f"part {n}" for n in range(6))
    assert during[0] == 2


@pytest.mark.parametrize("caller_s", [DEFAULT_SWITCH_INTERVAL, cpu.HANDOVER_INTERVAL / 4])
def test_python_hands_the_gil_over_quickly_while_llvm_compiles(
    monkeypatch: pytest.MonkeyPatch, caller_s: float
) -> None:
    """A thread compiling a part returns to Python between LLVM's calls and
    waits for the GIL: while parts compile, the switch interval is at most
    HANDOVER_INTERVAL (a caller's shorter one kept), and afterwards what
    it was, after a part that failed too."""
    seen: list[float] = []

    def compile_part(llvm_ir: str, target: object, kernels: tuple[str, ...]) -> tuple[str, bytes]:
        seen.append(sys.getswitchinterval())
        if llvm_ir == "bad":
            raise RuntimeFailure("LLVM rejected the module (the part holding bad)")
        return llvm_ir, b""

    monkeypatch.setattr(cpu, "_compile_part", compile_part)
    monkeypatch.setattr(cpu, "link_objects", lambda objects: b"linked")
    sys.setswitchinterval(caller_s)
    try:
        cpu._compile_parts(iter([("a", ()), ("b", ())]), ember.target.Target(), None, 2)
        assert sys.getswitchinterval() == pytest.approx(caller_s, abs=1e-6)
        with pytest.raises(RuntimeFailure, match="holding bad"):
            cpu._compile_parts(iter([("bad", ())]), ember.target.Target(), None, 2)
        assert sys.getswitchinterval() == pytest.approx(caller_s, abs=1e-6)
    finally:
        sys.setswitchinterval(DEFAULT_SWITCH_INTERVAL)
    # The interpreter keeps whole microseconds.
    assert seen == [pytest.approx(min(caller_s, cpu.HANDOVER_INTERVAL), abs=1e-6)] * 3
