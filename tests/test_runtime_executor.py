"""ember.build + GraphExecutor on the interp backend: results and every error."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import ember
from ember.build import build
from ember.errors import IRError, RuntimeFailure
from ember.runtime import nd
from ember.runtime.device import cpu, cuda
from ember.runtime.graph_executor import BenchmarkResult, GraphExecutor, GraphModule
from ember.runtime.module import load_params, save_params
from ember.runtime.registry import (
    UnknownFunctionError,
    list_global_func_names,
    register_func,
    remove_global_func,
)

MLP = """
func.func @main(%data: tensor<2x8xf32>, %weight: tensor<4x8xf32>, %bias: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = graph.dense %data, %weight : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %1 = graph.bias_add %0, %bias : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = graph.relu %1 : tensor<2x4xf32>
  func.return %2 : tensor<2x4xf32>
}
"""

TWO_RESULTS = """
func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = graph.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = graph.multiply %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
"""

EXTERN = """
func.func @main(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = graph.call_extern "test_runtime_executor.linear"(%x, %w, %b) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = graph.relu %0 : tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}
"""


def reference(data: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.maximum(data @ weight.T + bias, 0)


@pytest.fixture
def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "data": rng.standard_normal((2, 8)).astype(np.float32),
        "weight": rng.standard_normal((4, 8)).astype(np.float32),
        "bias": rng.standard_normal(4).astype(np.float32),
    }


@pytest.fixture
def executor(arrays: dict[str, np.ndarray]) -> GraphExecutor:
    lib = build(
        ember.parse(MLP),
        target="interp",
        params={"weight": arrays["weight"], "bias": arrays["bias"]},
    )
    return GraphExecutor(lib, cpu(0))


# -- results -------------------------------------------------------------------


def test_build_and_run_with_bound_params(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    assert executor.input_names == ["data"]
    assert executor.num_inputs == executor.get_num_inputs() == 1
    assert executor.num_outputs == executor.get_num_outputs() == 1
    executor.set_input("data", arrays["data"])
    executor.run()
    out = executor.get_output(0)
    assert out.shape == (2, 4) and out.dtype == "float32" and out.device == cpu(0)
    np.testing.assert_allclose(out.numpy(), reference(**arrays), rtol=1e-5, atol=1e-6)


def test_all_inputs_at_run_time(arrays: dict[str, np.ndarray]) -> None:
    lib = build(MLP, target="interp")  # IR text is accepted too
    ex = GraphExecutor(lib)
    assert ex.input_names == ["data", "weight", "bias"]
    assert ex.get_input_info() == (
        {"data": (2, 8), "weight": (4, 8), "bias": (4,)},
        {"data": "float32", "weight": "float32", "bias": "float32"},
    )
    ex.set_input("data", nd.array(arrays["data"]))
    # Lists take the input's dtype.
    ex.set_input(weight=arrays["weight"], bias=arrays["bias"].tolist())
    ex.run()
    np.testing.assert_allclose(
        ex.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


def test_outputs_are_preallocated_once(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.run(data=arrays["data"])
    first = executor.get_output(0)
    pointer, kept = first.data_ptr, first.numpy()
    executor.run(data=-arrays["data"])
    assert executor.get_output(0).data_ptr == pointer  # same slot, written in place
    assert not np.array_equal(executor.get_output(0).numpy(), kept)


def test_get_output_into_given_array(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.run(data=arrays["data"])
    out = nd.empty((2, 4), "float32")
    assert executor.get_output(0, out) is out
    np.testing.assert_allclose(out.numpy(), reference(**arrays), rtol=1e-5, atol=1e-6)


def test_get_output_into_a_numpy_array(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.run(data=arrays["data"])
    out = np.zeros((2, 4), np.float32)
    assert executor.get_output(0, out) is out
    np.testing.assert_allclose(out, reference(**arrays), rtol=1e-5, atol=1e-6)
    data = np.zeros((2, 8), np.float32)
    assert executor.get_input("data", data) is data
    np.testing.assert_array_equal(data, arrays["data"])


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (
            np.zeros((4, 2), np.float32),
            r"get_output\(0, out\): out is float32\[4, 2\] but output 0 is float32\[2, 4\]",
        ),
        (
            np.zeros((2, 4), np.float64),
            r"out is float64\[2, 4\] but output 0 is float32\[2, 4\]",
        ),
        (nd.empty((4, 2), "float32"), r"out is float32\[4, 2\] but output 0"),
        (np.zeros((2, 4), np.float32).view(), "read-only"),
        ([[0.0] * 4] * 2, "out must be an ember NDArray or a numpy array, got list"),
    ],
)
def test_get_output_rejects_a_wrong_out(
    executor: GraphExecutor, arrays: dict[str, np.ndarray], out: object, message: str
) -> None:
    if isinstance(out, np.ndarray) and message == "read-only":
        out.flags.writeable = False
    executor.run(data=arrays["data"])
    with pytest.raises(RuntimeFailure, match=message):
        executor.get_output(0, out)  # type: ignore[arg-type]


def test_set_input_by_index_and_get_input(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.set_input(0, arrays["data"])
    np.testing.assert_array_equal(executor.get_input("data").numpy(), arrays["data"])
    np.testing.assert_array_equal(executor.get_input(0).numpy(), arrays["data"])


def test_set_input_copies(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    data = arrays["data"].copy()
    executor.set_input("data", data)
    data[:] = 0
    executor.run()
    np.testing.assert_allclose(
        executor.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


def test_two_results() -> None:
    ex = GraphExecutor(build(TWO_RESULTS, target="interp"))
    a, b = np.arange(3, dtype=np.float32), np.full(3, 2, np.float32)
    ex.run(a=a, b=b)
    assert ex.num_outputs == 2
    np.testing.assert_array_equal(ex.get_output(0).numpy(), a + b)
    np.testing.assert_array_equal(ex.get_output(1).numpy(), a * b)


def test_tvm_factory_spelling(arrays: dict[str, np.ndarray]) -> None:
    lib = build(
        MLP,
        target="interp",
        params={"weight": arrays["weight"], "bias": arrays["bias"]},
    )
    for ex in (
        lib["default"](cpu(0)),
        GraphModule(lib["default"](cpu(0))),  # graph_executor.GraphModule(...)
        ember.GraphModule(lib["default"](cpu(0))),
    ):
        assert isinstance(ex, GraphExecutor) and ex.module is lib
        ex.set_input("data", arrays["data"])
        ex.run()
        np.testing.assert_allclose(
            ex.get_output(0).asnumpy(), reference(**arrays), rtol=1e-5, atol=1e-6
        )


def test_params_are_copied_at_build(arrays: dict[str, np.ndarray]) -> None:
    weight = arrays["weight"].copy()
    module = ember.parse(MLP)
    text_before = ember.to_text(module)
    lib = build(
        module, target="interp", params={"weight": weight, "bias": arrays["bias"]}
    )
    weight[:] = 0  # must not leak into the built module
    assert ember.to_text(module) == text_before
    ex = GraphExecutor(lib)
    ex.run(data=arrays["data"])
    np.testing.assert_allclose(
        ex.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


# -- params blobs ----------------------------------------------------------------


def test_load_params_from_bytes_and_dict(arrays: dict[str, np.ndarray]) -> None:
    ex = GraphExecutor(build(MLP, target="interp"))
    ex.load_params(
        save_params({"weight": arrays["weight"], "bias": nd.array(arrays["bias"])})
    )
    ex.load_params({"data": arrays["data"]})
    ex.run()
    np.testing.assert_allclose(
        ex.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


def test_save_load_params_round_trip() -> None:
    params = {"file": np.arange(3, dtype=np.int64), "a.b": np.ones((2, 2), np.float16)}
    loaded = load_params(save_params(params))
    assert sorted(loaded) == ["a.b", "file"]
    for name, values in params.items():
        assert loaded[name].dtype == values.dtype.name
        np.testing.assert_array_equal(loaded[name].numpy(), values)


@pytest.mark.parametrize(
    "blob", [b"", b"not a zip archive", save_params({"w": np.ones(2)})[:-10]]
)
def test_load_params_rejects_corrupt_bytes(blob: bytes) -> None:
    with pytest.raises(RuntimeFailure, match="not a valid params archive"):
        load_params(blob)


def test_load_params_rejects_non_bytes(executor: GraphExecutor) -> None:
    with pytest.raises(RuntimeFailure, match="expects bytes or a dict"):
        executor.load_params(42)  # type: ignore[arg-type]


# -- external functions -------------------------------------------------------------


@pytest.fixture
def no_test_externs() -> Iterator[None]:
    yield
    for name in list_global_func_names():
        if name.startswith("test_runtime_executor."):
            remove_global_func(name)


def test_call_extern_runs_registered_function(
    no_test_externs: None, arrays: dict[str, np.ndarray]
) -> None:
    lib = build(EXTERN, target="interp")
    assert lib.extern_funcs == ("test_runtime_executor.linear",)

    @register_func("test_runtime_executor.linear")
    def linear(x: nd.NDArray, w: nd.NDArray, b: nd.NDArray, out: nd.NDArray) -> None:
        o = np.from_dlpack(out)
        np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=o)
        o += np.from_dlpack(b)

    ex = GraphExecutor(lib)
    ex.run(x=arrays["data"], w=arrays["weight"], b=arrays["bias"])
    np.testing.assert_allclose(
        ex.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


def test_unknown_extern_fails_when_the_executor_is_created(
    no_test_externs: None,
) -> None:
    register_func("test_runtime_executor.linea", lambda *args: None)
    lib = build(EXTERN, target="interp")
    with pytest.raises(
        UnknownFunctionError,
        match=r"(?s)not registered.*did you mean 'test_runtime_executor\.linea'",
    ):
        GraphExecutor(lib)


# -- build errors ------------------------------------------------------------------


def test_unknown_target_lists_targets() -> None:
    with pytest.raises(
        RuntimeFailure, match=r"unknown target 'x86'; available targets: .*interp"
    ):
        build(MLP, target="x86")


def test_cuda_is_not_available_yet_and_never_falls_back() -> None:
    with pytest.raises(RuntimeFailure, match="'cuda'.*not available yet"):
        build(MLP, target="cuda")


@pytest.mark.parametrize(
    "params, match",
    [
        (
            {"wieght": np.zeros((4, 8), np.float32)},
            r"no argument of that name; did you mean 'weight'\?",
        ),
        (
            {"weight": np.zeros((8, 4), np.float32)},
            r"'weight'.*must be float32\[4, 8\], got float32\[8, 4\]",
        ),
        (
            {"bias": np.zeros(4, np.float64)},
            r"'bias'.*must be float32\[4\], got float64\[4\]",
        ),
        ({"bias": object()}, r"param 'bias'.*expected an NDArray"),
    ],
)
def test_bad_params_are_named(params: dict[str, object], match: str) -> None:
    with pytest.raises(RuntimeFailure, match=match):
        build(MLP, target="interp", params=params)


def test_missing_entry_and_bad_module() -> None:
    with pytest.raises(RuntimeFailure, match=r"no function @forward.*@main"):
        build(MLP, target="interp", entry="forward")
    with pytest.raises(RuntimeFailure, match="expects a module"):
        build(42, target="interp")  # type: ignore[arg-type]
    with pytest.raises(IRError):
        build("func.func @main(", target="interp")


def test_non_tensor_entry_is_rejected() -> None:
    text = "func.func @main(%x: f32) -> f32 {\n  func.return %x : f32\n}"
    with pytest.raises(RuntimeFailure, match="argument %x of @main has type f32"):
        build(text, target="interp")


# -- executor errors -----------------------------------------------------------------


def test_unknown_input_lists_valid_names(executor: GraphExecutor) -> None:
    with pytest.raises(
        RuntimeFailure,
        match=r"unknown input 'dta'.*data: float32\[2, 8\].*did you mean 'data'",
    ):
        executor.set_input("dta", np.zeros((2, 8), np.float32))


def test_bound_param_is_not_an_input(executor: GraphExecutor) -> None:
    with pytest.raises(RuntimeFailure, match="'weight' was bound as a constant"):
        executor.set_input(weight=np.zeros((4, 8), np.float32))


def test_wrong_shape_and_dtype_at_set_input(executor: GraphExecutor) -> None:
    with pytest.raises(
        RuntimeFailure,
        match=r"set_input\('data'\): expected float32\[2, 8\], got float32\[8, 2\]",
    ):
        executor.set_input("data", np.zeros((8, 2), np.float32))
    with pytest.raises(
        RuntimeFailure, match=r"expected float32\[2, 8\], got float64\[2, 8\].*astype"
    ):
        executor.set_input("data", np.zeros((2, 8)))
    with pytest.raises(RuntimeFailure, match="input index 3 out of range"):
        executor.set_input(3, np.zeros((2, 8), np.float32))


def test_set_input_checks_everything_before_copying() -> None:
    ex = GraphExecutor(build(TWO_RESULTS, target="interp"))
    with pytest.raises(RuntimeFailure, match="unknown input 'c'"):
        ex.set_input(a=np.ones(3, np.float32), c=np.ones(3, np.float32))
    with pytest.raises(RuntimeFailure, match="not set: a, b"):
        ex.run()


def test_run_before_inputs_are_set_names_them() -> None:
    ex = GraphExecutor(build(MLP, target="interp"))
    ex.set_input("weight", np.zeros((4, 8), np.float32))
    with pytest.raises(RuntimeFailure, match=r"input\(s\) not set: data, bias"):
        ex.run()


def test_get_output_errors(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    with pytest.raises(RuntimeFailure, match="before run"):
        executor.get_output(0)
    executor.run(data=arrays["data"])
    with pytest.raises(
        RuntimeFailure,
        match=r"get_output\(1\): index out of range, the module has 1 output",
    ):
        executor.get_output(1)
    with pytest.raises(RuntimeFailure, match=r"out is float32\[4, 2\]"):
        executor.get_output(0, nd.empty((4, 2), "float32"))


def test_executor_device_checks(arrays: dict[str, np.ndarray]) -> None:
    lib = build(MLP, target="interp")
    with pytest.raises(RuntimeFailure, match="runs on cpu, not on cuda:0"):
        GraphExecutor(lib, cuda(0))
    with pytest.raises(RuntimeFailure, match="expects a module"):
        GraphExecutor("lib", cpu(0))  # type: ignore[arg-type]
    with pytest.raises(RuntimeFailure, match="expected an ember device"):
        GraphExecutor(lib, "cpu")  # type: ignore[arg-type]


# -- benchmark ----------------------------------------------------------------------


def test_benchmark_returns_sane_statistics(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    result = executor.benchmark(cpu(0), repeat=4, number=3, data=arrays["data"])
    assert isinstance(result, BenchmarkResult)
    assert len(result.results) == 4 and result.number == 3
    assert 0 < result.min <= result.median <= result.max < 1.0
    assert result.min <= result.mean <= result.max and result.std >= 0
    assert result.mean_ms == pytest.approx(result.mean * 1e3)
    text = str(result)
    assert (
        "mean (ms)" in text and "median (ms)" in text and "4 repeats x 3 runs" in text
    )


def test_benchmark_min_repeat_ms_raises_number(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.set_input("data", arrays["data"])
    result = executor.benchmark(repeat=1, number=1, min_repeat_ms=50)
    assert result.number > 1
    # Calibrated so that a repeat lasts about 50 ms; timing noise on a shared
    # machine may shorten the measured one, but never by half.
    assert result.results[0] * result.number >= 0.025


def test_benchmark_end_to_end_and_errors(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    result = executor.benchmark(
        repeat=2, number=2, end_to_end=True, data=arrays["data"]
    )
    assert len(result.results) == 2
    fresh = GraphExecutor(executor.module)
    with pytest.raises(RuntimeFailure, match="not set: data"):
        fresh.benchmark(repeat=1, number=1)
    with pytest.raises(RuntimeFailure, match="runs on cpu:0, not cuda:0"):
        executor.benchmark(cuda(0))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"repeat": "3"}, "repeat must be an integer >= 1, got '3'"),
        ({"repeat": 0}, "repeat must be an integer >= 1, got 0"),
        ({"repeat": True}, "repeat must be an integer >= 1, got True"),
        ({"number": 2.5}, "number must be an integer >= 1, got 2.5"),
        ({"number": None}, "number must be an integer >= 1, got None"),
        ({"min_repeat_ms": "5"}, "min_repeat_ms must be a finite number"),
        ({"min_repeat_ms": -1}, "min_repeat_ms must be a finite number .* got -1"),
        ({"min_repeat_ms": math.inf}, "min_repeat_ms must be a finite number"),
        ({"min_repeat_ms": math.nan}, "min_repeat_ms must be a finite number"),
        ({"end_to_end": "yes"}, "end_to_end must be True or False, got 'yes'"),
    ],
)
def test_benchmark_arguments_are_checked(
    executor: GraphExecutor,
    arrays: dict[str, np.ndarray],
    arguments: dict[str, object],
    message: str,
) -> None:
    with pytest.raises(RuntimeFailure, match=f"benchmark: {message}"):
        executor.benchmark(data=arrays["data"], **arguments)  # type: ignore[arg-type]
    result = executor.benchmark(
        repeat=np.int64(1), number=1, min_repeat_ms=0, data=arrays["data"]
    )
    assert result.number == 1  # numpy integers and a zero minimum are fine


# -- threads -------------------------------------------------------------------------


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    """Run ``work(0..count-1)`` in ``count`` threads; re-raise the first failure."""
    failures: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            failures.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    if failures:
        raise failures[0]


def test_threads_sharing_an_executor_each_get_their_own_results(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    """4 threads x 20 rounds of set_input/run/get_output on one executor, each
    with its own data.  The barriers force the interleaving that shared
    slots got wrong: every thread sets its input before any runs, and every
    thread runs before any reads its output."""
    threads, rounds = 4, 20
    barrier = threading.Barrier(threads, timeout=60)
    wrong: list[tuple[int, int]] = []

    def work(index: int) -> None:
        rng = np.random.default_rng(100 + index)
        try:
            for round_ in range(rounds):
                data = rng.standard_normal((2, 8)).astype(np.float32)
                executor.set_input("data", data)
                barrier.wait()
                executor.run()
                barrier.wait()
                result = executor.get_output(0).numpy()
                expected = reference(data, arrays["weight"], arrays["bias"])
                if not np.allclose(result, expected, rtol=1e-5, atol=1e-6):
                    wrong.append((index, round_))
        except BaseException:
            barrier.abort()  # free the other threads instead of hanging them
            raise

    _in_threads(threads, work)
    assert wrong == []


def test_inputs_set_in_one_thread_are_not_seen_by_another(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.run(data=arrays["data"])
    messages: list[str] = []

    def work(index: int) -> None:
        for action in (lambda: executor.get_output(0), executor.run):
            try:
                action()
            except RuntimeFailure as e:
                messages.append(str(e))

    _in_threads(1, work)
    assert len(messages) == 2
    assert "get_output(0) before run()" in messages[0]
    assert "input(s) not set: data" in messages[1]
    assert all("each thread has its own inputs and outputs" in m for m in messages)
    # This thread's result is still there.
    np.testing.assert_allclose(
        executor.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )


class _DLPackOnly:
    """A foreign tensor that speaks only DLPack (as a torch tensor would)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: object) -> object:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()


def test_set_input_from_dlpack_and_bad_keys(
    executor: GraphExecutor, arrays: dict[str, np.ndarray]
) -> None:
    executor.set_input("data", _DLPackOnly(arrays["data"]))
    executor.run()
    np.testing.assert_allclose(
        executor.get_output(0).numpy(), reference(**arrays), rtol=1e-5, atol=1e-6
    )
    with pytest.raises(RuntimeFailure, match="named by a string or an index"):
        executor.set_input(["data"], arrays["data"])  # type: ignore[arg-type]
    with pytest.raises(RuntimeFailure, match="no value given"):
        executor.set_input("data")
