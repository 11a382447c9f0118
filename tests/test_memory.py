"""Memory: the plan-memory pass's reuse, weights stored once, constants mapped.

Sizes here are exact byte counts of buffers the module owns (never RSS or
timings): the plan's workspace against the sum of activations, the files
of an artifact against the weights, and where a loaded module's constants
live in the address space.
"""

from __future__ import annotations

import gc
import os
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.testing import workloads

LAYERS = 8
WIDTH = 256


def chain_network(layers: int = LAYERS, width: int = WIDTH) -> tuple[str, dict[str, np.ndarray]]:
    """``x -> dense -> tanh -> dense -> tanh ...``: every tensor dies at the next op."""
    t = f"tensor<1x{width}xf32>"
    w = f"tensor<{width}x{width}xf32>"
    args = ", ".join(f"%w{i}: {w}" for i in range(layers))
    lines = [f"func.func @main(%x: {t}, {args}) -> {t} {{"]
    value = "%x"
    for i in range(layers):
        lines.append(f"  %d{i} = graph.dense {value}, %w{i} : ({t}, {w}) -> {t}")
        lines.append(f"  %h{i} = graph.tanh %d{i} : ({t}) -> {t}")
        value = f"%h{i}"
    lines += [f"  func.return {value} : {t}", "}"]
    rng = np.random.default_rng(0)
    params = {
        f"w{i}": (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        for i in range(layers)
    }
    return "\n".join(lines), params


def run(lib: ember.runtime.Module, x: np.ndarray) -> np.ndarray:
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input("x", x)
    ex.run()
    return ex.get_output(0).numpy()


@pytest.fixture(scope="module")
def chain() -> tuple[ember.runtime.Module, str, dict[str, np.ndarray]]:
    text, params = chain_network()
    return ember.build(text, "llvm", params=params), text, params


def test_the_plan_reuses_buffers_along_a_chain(chain) -> None:
    lib, text, params = chain
    report = lib.memory_report()
    tensor = WIDTH * 4
    # Each intermediate dies at the next op: two buffers alternate, whatever
    # the number of layers; one buffer per tensor would take all of them.
    assert report.naive_activation_bytes >= (LAYERS - 1) * tensor
    assert report.workspace_bytes <= 2 * tensor
    assert report.peak_activation_bytes <= report.workspace_bytes
    assert report.workspace_bytes * 3 < report.naive_activation_bytes
    assert report.weights_bytes >= sum(p.nbytes for p in params.values())
    x = np.random.default_rng(1).standard_normal((1, WIDTH)).astype(np.float32)
    expected = ember.interpret(ember.bind_params(ember.parse(text), params), "main", x)[0]
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-5)


def test_memory_report_reads_as_a_table(chain) -> None:
    lines = str(chain[0].memory_report()).splitlines()
    assert [line.split()[0] for line in lines] == ["weights", "workspace", "peak", "naive"]
    assert "MiB" in lines[0] and "of naive" in lines[1]


def test_the_interpreter_plans_no_memory() -> None:
    module, params = workloads.get("mlp")
    lib = ember.build(module, "interp", params=params)
    with pytest.raises(ember.RuntimeFailure, match="target 'interp' plans no memory"):
        lib.memory_report()


# -- weights once: the module holds the packed constants and nothing else -------


def _live(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_the_build_keeps_neither_the_params_nor_its_ir() -> None:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    text, params = chain_network(layers=3, width=32)
    module = ember.parse(text)
    refs = [weakref.ref(array) for array in params.values()]
    modules, ops = _live(ModuleOp), _live(Operation)
    lib = ember.build(module, "llvm", params=params)
    del params
    # Every IR stage (graph, kernel, llvm dialect) is gone after the build,
    # and so are the caller's arrays once the caller drops them.
    assert (_live(ModuleOp), _live(Operation)) == (modules, ops)
    assert [ref() for ref in refs] == [None] * 3
    assert lib.params == {} and lib.param_names == ("w0", "w1", "w2")


class AtLlvm:
    """What is alive when the build hands its IR text to LLVM, after a full
    collection (so that only what something still refers to counts): live
    xDSL ops, and whether each array watched in ``arrays`` is alive."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, list[bool]]] = []
        self.arrays: list[weakref.ref] = []

    def record(self) -> None:
        from xdsl.ir import Operation

        self.seen.append((_live(Operation), [ref() is not None for ref in self.arrays]))


@pytest.fixture
def at_llvm(monkeypatch) -> AtLlvm:
    from ember.backends import cpu

    watch = AtLlvm()
    emit = cpu._compile_part

    def spy(*args, **kwargs):
        watch.record()
        return emit(*args, **kwargs)

    monkeypatch.setattr(cpu, "_compile_part", spy)
    return watch


def test_no_ir_stage_is_alive_while_llvm_runs(at_llvm) -> None:
    from xdsl.ir import Operation

    text, params = chain_network(layers=3, width=32)
    module = ember.parse(text)
    ops = _live(Operation)
    lib = ember.build(module, "llvm", params=params, cache=False)
    # Only the caller's module: the stages the build lowered its copy into
    # (graph, kernel, llvm dialect: thousands of ops) are gone by then.
    assert at_llvm.seen == [(ops, [])]
    x = np.random.default_rng(1).standard_normal((1, 32)).astype(np.float32)
    expected = ember.interpret(ember.bind_params(ember.parse(text), params), "main", x)[0]
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-5)


def test_weights_the_caller_lets_go_are_freed_before_llvm_runs(at_llvm) -> None:
    """Params the caller does not hold (a temporary dict, np.load's archive)
    live only until the build has packed them, not while LLVM runs."""
    text, params = chain_network(layers=3, width=32)

    def watched() -> dict[str, np.ndarray]:
        fresh = {name: array.copy() for name, array in params.items()}
        at_llvm.arrays[:] = [weakref.ref(array) for array in fresh.values()]
        return fresh

    held = watched()
    lib = ember.build(text, "llvm", params=held, cache=False)
    assert at_llvm.seen[-1][1] == [True] * 3  # the caller holds them
    temporary = ember.build(text, "llvm", params=watched(), cache=False)
    assert at_llvm.seen[-1][1] == [False] * 3
    x = np.random.default_rng(2).standard_normal((1, 32)).astype(np.float32)
    np.testing.assert_array_equal(run(temporary, x), run(lib, x))


def test_llvm_runs_in_contexts_the_build_disposes(monkeypatch) -> None:
    """Each LLVM module is parsed into a context of its own, disposed with
    everything LLVM uniqued in it; the global context would keep them."""
    import llvmlite.binding as llvm

    created = []
    create = llvm.create_context

    def spy():
        created.append(create())
        return created[-1]

    monkeypatch.setattr(llvm, "create_context", spy)
    text, params = chain_network(layers=2, width=16)
    lib = ember.build(text, "llvm", params=params, cache=False)
    assert len(created) == 2  # one to optimise, one to generate code
    assert all(context.closed for context in created)
    x = np.random.default_rng(3).standard_normal((1, 16)).astype(np.float32)
    expected = ember.interpret(ember.bind_params(ember.parse(text), params), "main", x)[0]
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-5)


# -- weights once: the artifact holds the packed constants and nothing else ------


def test_an_llvm_artifact_stores_each_weight_once(chain, tmp_path: Path) -> None:
    lib, _, params = chain
    lib.export_library(tmp_path / "net.ember")
    files = {p.name: p.stat().st_size for p in (tmp_path / "net.ember").iterdir()}
    assert sorted(files) == ["constants.bin", "layout.json", "manifest.json", "program.o"]
    weights = sum(p.nbytes for p in params.values())
    # The constants are the weights (packed), each padded to 64 bytes at most.
    assert weights <= files["constants.bin"] <= weights + 64 * len(lib.layout.constants) + 64
    assert lib.params == {} and sorted(lib.param_names) == sorted(params)
    loaded = ember.load_module(tmp_path / "net.ember")
    assert loaded.param_names == lib.param_names
    assert [s.name for s in loaded.input_specs] == ["x"]


def _mapping_of(address: int) -> str:
    """The file (or [heap], or '') mapped at ``address`` in this process."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            low, high = (int(a, 16) for a in fields[0].split("-"))
            if low <= address < high:
                return fields[5].strip() if len(fields) > 5 else ""
    raise AssertionError(f"{address:#x} is not mapped")


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_loaded_constants_are_the_file_mapping(chain, tmp_path: Path) -> None:
    lib, text, params = chain
    lib.export_library(tmp_path / "net.ember")
    path = os.path.realpath(tmp_path / "net.ember" / "constants.bin")
    first, second = (ember.load_module(tmp_path / "net.ember") for _ in range(2))
    for loaded in (first, second):
        for constant in loaded._constants:
            # The frame points into the file's pages: no copy on the heap.
            assert _mapping_of(constant.ctypes.data) == path
            assert not constant.flags.writeable
    x = np.random.default_rng(2).standard_normal((1, WIDTH)).astype(np.float32)
    np.testing.assert_array_equal(run(first, x), run(lib, x))
    # A built module's constants are its own aligned blob, not the params.
    assert all(not np.shares_memory(c, p) for c in lib._constants for p in params.values())


def test_import_ember_loads_no_code_generator_and_no_frontend() -> None:
    """``import ember`` stays small: LLVM, CUDA, ONNX, onnxruntime and the
    compiler are imported on first use (modules checked, never RSS)."""
    from tests.test_runtime_artifact import run_python

    code = (
        "import sys, ember\n"
        "heavy = ('llvmlite', 'cuda', 'onnx', 'onnxruntime', 'torch')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "    or m.startswith(('ember.runtime.cpu', 'ember.lowering', 'ember.compiler'))))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_an_empty_constants_file_is_checked_too(tmp_path: Path) -> None:
    """A network without constants maps nothing, but its checksum still counts."""
    import json

    from ember.runtime.artifact import seal

    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = graph.relu %x : tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n}\n"
    )
    path = tmp_path / "relu.ember"
    ember.build(text, "llvm").export_library(path)
    assert (path / "constants.bin").stat().st_size == 0
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["constants.bin"]["sha256"] = "0" * 64
    (path / "manifest.json").write_text(json.dumps(seal(manifest)))
    with pytest.raises(ember.ArtifactError, match="constants.bin does not match its checksum"):
        ember.load_module(path)


# -- weights once during the build: constants hold arrays, originals die --------

CONV_BN = """
func.func @main(%x: tensor<1x8x8x8xf32>, %w: tensor<16x8x3x3xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<1x16x8x8xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  func.return %n : tensor<1x16x8x8xf32>
}
"""


def conv_bn_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    params = {
        "w": rng.standard_normal((16, 8, 3, 3)).astype(np.float32),
        "g": rng.uniform(0.5, 2.0, 16).astype(np.float32),
        "b": rng.standard_normal(16).astype(np.float32),
        "m": rng.standard_normal(16).astype(np.float32),
        "v": rng.uniform(0.5, 2.0, 16).astype(np.float32),
    }
    return params


def frozen(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Read-only views of ``params``, as ember.build binds them."""
    views = {name: array.view() for name, array in params.items()}
    for view in views.values():
        view.flags.writeable = False
    return views


def constants_of(module) -> dict[str, "ConstantOp"]:  # noqa: F821
    from ember.dialects.graph import ConstantOp

    return {op.result.name_hint: op for op in module.walk() if isinstance(op, ConstantOp)}


def test_binding_holds_a_read_only_param_and_copies_a_writable_one() -> None:
    text, params = chain_network(layers=2, width=16)
    views = frozen(params)
    held = constants_of(ember.bind_params(ember.parse(text), views))
    copied_module = ember.bind_params(ember.parse(text), params)
    copied = constants_of(copied_module)
    for name in params:
        assert np.shares_memory(held[name].to_array(copy=False), views[name])
        assert not np.shares_memory(copied[name].to_array(copy=False), params[name])
    # Held or copied, a constant is the same attribute: same text, equal, same hash.
    text_held = ember.to_text(held["w1"].parent_op().parent_op())
    assert text_held == ember.to_text(copied_module)
    attr, twin = held["w1"].value, copied["w1"].value
    reparsed = constants_of(ember.parse(text_held))["w1"].value
    assert attr == twin == reparsed and hash(attr) == hash(twin) == hash(reparsed)
    # The caller may change a writable array afterwards: the copy does not see it.
    before = copied["w0"].to_array()
    params["w0"][:] = 0
    np.testing.assert_array_equal(copied["w0"].to_array(), before)


def test_cse_merges_held_and_copied_constants_of_equal_values() -> None:
    t = "tensor<4x32xf32>"
    text = (
        f"func.func @main(%a: {t}, %b: {t}, %c: {t}) -> {t} {{\n"
        f"  %s = graph.add %a, %b : ({t}, {t}) -> {t}\n"
        f"  %r = graph.add %s, %c : ({t}, {t}) -> {t}\n"
        f"  func.return %r : {t}\n}}\n"
    )
    values = np.arange(128, dtype=np.float32).reshape(4, 32)
    (view,) = frozen({"a": values}).values()
    bound = ember.bind_params(ember.parse(text), {"a": view, "b": view, "c": values.copy()})
    assert len(constants_of(bound)) == 3
    merged = ember.apply_passes(bound, "cse")
    assert len(constants_of(merged)) == 1
    np.testing.assert_array_equal(
        ember.interpret(merged, "main")[0], ember.interpret(bound, "main")[0]
    )


def test_the_build_binds_params_without_copying_or_changing_them() -> None:
    from ember.compiler import CompileOptions, to_graph

    text, params = chain_network(layers=2, width=16)
    views = frozen(params)
    graph = to_graph(ember.parse(text), views, CompileOptions(graph_pipeline=""))
    for name, constant in constants_of(graph).items():
        assert np.shares_memory(constant.to_array(copy=False), params[name])
    lib = ember.build(text, "llvm", params=params, cache=False)
    assert all(array.flags.writeable for array in params.values())  # the caller's flags
    x = np.random.default_rng(4).standard_normal((1, 16)).astype(np.float32)
    expected = ember.interpret(ember.bind_params(ember.parse(text), params), "main", x)[0]
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-5)


def test_packing_drops_each_folded_weight_as_soon_as_it_is_packed() -> None:
    from ember.compiler import to_graph, to_kernel

    params = conv_bn_params()
    graph = to_graph(ember.parse(CONV_BN), frozen(params))
    scaled = constants_of(graph)["w_scaled"]  # batch_norm folded: an ember-made array
    # The memory the constant holds (the exporter of its bytes' memoryview).
    memory = weakref.ref(scaled.value.data.data.obj)
    del scaled
    assert memory() is not None
    gc.disable()  # its op's reference cycles are not what frees it
    try:
        kernel = to_kernel(graph, copy=False)
        assert memory() is None
    finally:
        gc.enable()
    assert "w_scaled_packed" in constants_of(kernel) and "w_scaled" not in constants_of(kernel)
    x = np.random.default_rng(5).standard_normal((1, 8, 8, 8)).astype(np.float32)
    lib = ember.build(CONV_BN, "llvm", params=params, cache=False)
    expected = ember.interpret(ember.bind_params(ember.parse(CONV_BN), params), "main", x)[0]
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input("x", x)
    ex.run()
    np.testing.assert_allclose(ex.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-4)


def test_folding_a_scale_into_a_weight_rounds_once_from_f64() -> None:
    """The fold rounds each product once: the same values as
    ``(W.astype(f64) * s).astype(f32)``, without that f64 copy of W, for
    weights whose products are subnormal or near f32's largest too."""
    t_w, t_x, t_y = "tensor<16x8x3x3xf32>", "tensor<1x8x8x8xf32>", "tensor<1x16x8x8xf32>"
    text = (
        f"func.func @main(%x: {t_x}, %w: {t_w}, %s: tensor<1x16x1x1xf32>) -> {t_y} {{\n"
        f"  %c = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : ({t_x}, {t_w}) -> {t_y}\n"
        f"  %y = graph.multiply %c, %s : ({t_y}, tensor<1x16x1x1xf32>) -> {t_y}\n"
        f"  func.return %y : {t_y}\n}}\n"
    )
    rng = np.random.default_rng(6)
    magnitudes = 10.0 ** rng.integers(-44, 38, (16, 8, 3, 3))
    w = (rng.standard_normal((16, 8, 3, 3)) * magnitudes).astype(np.float32)
    s = rng.uniform(0.1, 3.0, (1, 16, 1, 1)).astype(np.float32)
    folded = ember.apply_passes(ember.bind_params(ember.parse(text), {"w": w, "s": s}), "fold-constants")
    expected = (w.astype(np.float64) * s.reshape(16, 1, 1, 1).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(constants_of(folded)["w_scaled"].to_array(), expected)


# -- the collector during a build ------------------------------------------------


def test_a_build_runs_no_automatic_garbage_collection() -> None:
    """The IR a build makes lives to the end of its stage: the collector's
    automatic passes over it would find nothing to free (a build frees its
    dead stages itself), so they are off while it compiles."""
    import gc

    text, params = chain_network(layers=3, width=32)
    module = ember.parse(text)
    ember.build(module, "llvm", params=params, cache=False)  # the imports it needs
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        lib = ember.build(module, "llvm", params=params, cache=False)
    finally:
        gc.callbacks.remove(count)
    # At most the one the collector starts as it is enabled again at the
    # end (without the pause: dozens, all through the build).
    assert len(collections) <= 1
    assert gc.isenabled()
    x = np.random.default_rng(4).standard_normal((1, 32)).astype(np.float32)
    expected = ember.interpret(ember.bind_params(ember.parse(text), params), "main", x)[0]
    np.testing.assert_allclose(run(lib, x), expected, rtol=1e-4, atol=1e-5)


def test_collection_paused_nests_and_keeps_a_caller_s_setting() -> None:
    import gc

    from ember.runtime.memory import collection_paused

    assert gc.isenabled()
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # the caller turned it off: it stays off
    finally:
        gc.enable()
    with pytest.raises(ZeroDivisionError):
        with collection_paused():
            1 / 0
    assert gc.isenabled()


def test_a_held_setting_is_restored_when_the_last_of_overlapping_blocks_ends() -> None:
    """Blocks on two threads, the first to begin ending first: the setting
    keeps the first block's value until the second ends."""
    from ember.runtime.held import HeldSetting

    value = ["caller's"]
    setting = HeldSetting(lambda: value[0], lambda v: value.__setitem__(0, v))
    first_in, second_in, checked = threading.Event(), threading.Event(), threading.Event()
    seen: list[str] = []

    def second() -> None:
        assert first_in.wait(timeout=30)
        with setting.held("second's"):
            second_in.set()
            assert checked.wait(timeout=30)  # until the first block has ended and looked
            seen.append(value[0])

    worker = threading.Thread(target=second)
    worker.start()
    with setting.held("first's"):
        first_in.set()
        assert second_in.wait(timeout=30)
    seen.append(value[0])  # the second block still runs
    checked.set()
    worker.join(timeout=30)
    assert seen == ["first's", "first's"]
    assert value[0] == "caller's"


def test_the_lowered_entry_lets_go_of_the_weights_without_a_collection() -> None:
    """The build streams kernels to LLVM with collection paused: the graph
    function the entry lowering replaced must not keep the weights in its
    constants (the ops are reference cycles), or they would be held twice,
    packed and dead, while LLVM compiles."""
    from ember import compiler, driver
    from ember.dialects import graph
    from ember.runtime.memory import collection_paused

    text, params = chain_network(layers=3, width=32)
    options = compiler.CompileOptions()
    with collection_paused():
        planned = driver.lower(ember.parse(text), "plan", params, options, copy=False)
        del params
        gc.collect()  # what the earlier stages left dead
        held = [
            weakref.ref(op.value)
            for op in planned.walk()
            if isinstance(op, graph.ConstantOp)
        ]
        assert len(held) == 3
        layout, constants = compiler.lower_entry(planned, options)
        constants.clear()  # packed: pack_constants empties the list
        assert [ref() for ref in held] == [None] * 3
