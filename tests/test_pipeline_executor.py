"""The pipeline build, artifact and executor (ember.pipeline.build / PipelineModule).

Checks the seed-000 flow end to end (tiny_pipe split after its first relu,
two stages on cpu:0 and cpu:1, f32 and f16, exported, loaded — also in a
fresh process — and run pipelined: the outputs equal the two subgraphs run
one after the other with GraphExecutors, as the seed's own check does);
the soundness property (random programs, random cuts: pipelined ==
sequential == reference interpreter over many queued inputs, in order, none
lost); and every error: bad connections, unconnected inputs, type
mismatches, stage failures, timeouts, damaged artifacts, use after close.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import ember
from ember.pipeline import (
    PipelineClosedError,
    PipelineConfig,
    PipelineConfigError,
    PipelineError,
    PipelineLibrary,
    PipelineModule,
    PipelineTimeout,
    StageError,
    build,
    load_library,
    run_pipeline_file,
    split_graph,
    stage_functions,
)
from ember.runtime import (
    ArtifactError,
    GraphExecutor,
    list_global_func_names,
    register_func,
    remove_global_func,
    threads,
)
from ember.runtime.artifact import seal
from ember.testing import workloads
from ember.testing.strategies import graph_programs

TINY_PARAMS = ("weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var", "dweight")
REPO_ROOT = Path(__file__).resolve().parent.parent


def _pipeline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ember-pipeline-")]


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test closes what it opens: no stage thread outlives it."""
    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while _pipeline_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _pipeline_threads(), f"threads left running: {_pipeline_threads()}"


@pytest.fixture
def pipeline_externs() -> Iterator[None]:
    """Unregister the test_pipeline.* functions a test registered."""
    yield
    for name in list_global_func_names():
        if name.startswith("test_pipeline."):
            remove_global_func(name)


# --------------------------------------------------------------------------
# The seed-000 flow
# --------------------------------------------------------------------------


def seed_config(
    dtype: str,
) -> tuple[PipelineConfig, object, object, dict[str, np.ndarray]]:
    """The tutorial's configuration: mod0 on cpu:0, mod1 on cpu:1."""
    module, params = workloads.get("tiny_pipe", dtype)
    mod0, mod1 = stage_functions(split_graph(module, ["relu"], [0]))
    cfg = PipelineConfig([mod0, mod1])
    cfg[mod0].target = "llvm"
    cfg[mod0].dev = ember.cpu(0)
    cfg[mod1].target = "llvm"
    cfg[mod1].dev = "cpu:1"
    for name in ("data", *TINY_PARAMS[:-1]):
        cfg["input"][name].connect(cfg[mod0]["input"][name])
    cfg["input"]["dweight"].connect(cfg[mod1]["input"]["dweight"])
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    cfg[mod1]["output"][0].connect(cfg["output"][0])
    return cfg, mod0, mod1, params


@pytest.fixture(scope="module", params=["float32", "float16"])
def seed_flow(request, tmp_path_factory):
    """Built, exported and loaded seed pipeline, with the seed's baseline."""
    dtype = request.param
    cfg, mod0, mod1, params = seed_config(dtype)
    lib = build(cfg, params=params)
    path = lib.export_library(tmp_path_factory.mktemp(f"pipe_{dtype}"))
    # The seed's check: the subgraphs built one by one, run one after the other.
    stage0 = ember.build(
        ModuleOp([mod0.clone()]),
        "llvm",
        params={n: params[n] for n in TINY_PARAMS[:-1]},
        entry="main_0",
    )
    stage1 = ember.build(
        ModuleOp([mod1.clone()]),
        "llvm",
        params={"dweight": params["dweight"]},
        entry="main_1",
    )
    return dtype, lib, path, (GraphExecutor(stage0), GraphExecutor(stage1)), params


def _seed_inputs(dtype: str, count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (1, 3, 8, 8)).astype(dtype) for _ in range(count)]


def _sequential_baseline(executors, data: np.ndarray) -> np.ndarray:
    module0, module1 = executors
    module0.set_input("data", data)
    module0.run()
    module1.set_input("data_n", module0.get_output(0))
    module1.run()
    return module1.get_output(0).numpy()


def test_seed_flow_pipelined_equals_the_subgraphs_run_in_sequence(seed_flow):
    dtype, _, path, executors, params = seed_flow
    assert Path(path).name == "pipeline.json"
    inputs = _seed_inputs(dtype, 24)
    threads_before = threads.num_threads()
    with PipelineModule.load_library(path) as pipe:
        assert pipe.input_names == ["data"]
        cores = sorted(_allowed())
        if len(cores) >= 2:
            assert pipe.pinned_cores == cores[:2]
        for data in inputs:
            pipe.set_input("data", ember.nd.array(data))
            pipe.run()
        pipelined = [pipe.get_output(timeout=30)[0].numpy() for _ in inputs]
        assert pipe.in_flight == 0
        if len(cores) >= 2:
            # Each worker thread runs on its own core; kernels on one thread.
            for stage, core in zip(("main_0", "main_1"), cores):
                (worker,) = [t for t in _pipeline_threads() if t.name.endswith(stage)]
                assert os.sched_getaffinity(worker.native_id) == {core}
            assert threads.num_threads() == 1
        for data in inputs:
            pipe.set_input("data", data)
            pipe.run(sync=True)
        sequential = [pipe.get_output()[0].numpy() for _ in inputs]
    assert threads.num_threads() == threads_before  # restored by close()
    weights = [params[n] for n in TINY_PARAMS]
    module, _ = workloads.get("tiny_pipe", dtype)
    tolerance = 1e-5 if dtype == "float32" else 2e-2
    for data, got, again in zip(inputs, pipelined, sequential):
        assert got.dtype == np.dtype(dtype) and got.shape == (1, 1)
        np.testing.assert_array_equal(got, _sequential_baseline(executors, data))
        np.testing.assert_array_equal(got, again)
        reference = ember.interpret(module, "main", data, *weights)[0]
        np.testing.assert_allclose(
            got.astype(np.float32),
            reference.astype(np.float32),
            rtol=tolerance,
            atol=tolerance,
        )


def _allowed() -> set[int]:
    return os.sched_getaffinity(0)


def test_seed_artifact_is_readable_relative_and_loads_in_a_fresh_process(
    seed_flow, tmp_path
):
    dtype, _lib, path, executors, _ = seed_flow
    root = Path(path).parent
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    assert config["format"] == "ember-pipeline"
    assert [s["name"] for s in config["stages"]] == ["main_0", "main_1"]
    assert [s["device"] for s in config["stages"]] == ["cpu:0", "cpu:1"]
    assert config["stages"][1]["inputs"] == [
        {"name": "data_n", "from": {"stage": "main_0", "output": 0}}
    ]
    assert str(root) not in Path(path).read_text(encoding="utf-8")  # every path is relative
    # A moved artifact still loads.
    moved = tmp_path / "moved"
    shutil.copytree(root, moved)
    data = _seed_inputs(dtype, 1, seed=5)[0]
    np.save(tmp_path / "data.npy", data)
    script = (
        "import sys, numpy as np\n"
        "from ember.pipeline import PipelineModule\n"
        "with PipelineModule.load_library(sys.argv[1]) as pipe:\n"
        "    pipe.set_input('data', np.load(sys.argv[2]))\n"
        "    pipe.run()\n"
        "    np.save(sys.argv[3], pipe.get_output(timeout=30)[0].numpy())\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(moved / "pipeline.json"),
            str(tmp_path / "data.npy"),
            str(tmp_path / "out.npy"),
        ],
        check=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    np.testing.assert_array_equal(
        np.load(tmp_path / "out.npy"), _sequential_baseline(executors, data)
    )


def test_build_accepts_the_split_module_directly_and_binds_params_by_name():
    module, params = workloads.get("tiny_pipe")
    split = split_graph(module, ["relu"], [0], target="interp")
    lib = build(
        split, params={"weight": params["weight"], "dweight": params["dweight"]}
    )
    assert [s.name for s in lib.inputs] == [
        "data",
        "bn_gamma",
        "bn_beta",
        "bn_mean",
        "bn_var",
    ]
    assert lib.params == ("weight", "dweight")
    assert [s.target for s in lib.stages] == ["interp", "interp"]
    data = _seed_inputs("float32", 1)[0]
    with PipelineModule(lib) as pipe:
        assert pipe.pinned_cores == [None, None]  # all on cpu:0: the whole host
        pipe.set_input("data", data)
        pipe.set_input(
            **{n: params[n] for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")}
        )
        pipe.run()
        got = pipe.get_output(timeout=30)[0].numpy()
    expected = ember.interpret(module, "main", data, *(params[n] for n in TINY_PARAMS))[
        0
    ]
    np.testing.assert_array_equal(got, expected)


def test_build_func_is_called_with_the_stage_module_target_and_device():
    cfg, mod0, mod1, params = seed_config("float32")
    cfg[mod0].target = cfg[mod1].target = "interp"
    calls = []

    def my_build(stage_module, target, dev):
        calls.append((target, str(dev)))
        return ember.build(stage_module, target)  # the stage function is @main

    cfg[mod1].build_func = my_build
    lib = build(cfg, params=params)
    assert calls == [("interp", "cpu:1")]
    with PipelineModule(lib, pin_cores=False) as pipe:
        data = _seed_inputs("float32", 1)[0]
        pipe.set_input("data", data)
        pipe.run(sync=True)
        got = pipe.get_output()[0].numpy()
    module, _ = workloads.get("tiny_pipe")
    expected = ember.interpret(module, "main", data, *(params[n] for n in TINY_PARAMS))[
        0
    ]
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------
# Soundness on random programs and random cuts
# --------------------------------------------------------------------------


@st.composite
def programs_with_cuts(draw: st.DrawFn):
    program = draw(graph_programs(min_ops=2, max_ops=7, dtypes=("float32", "float16")))
    body = program.op_names[:-1]
    positions = draw(
        st.lists(st.integers(0, len(body) - 2), min_size=1, max_size=3, unique=True)
    )
    ops = [body[p] for p in positions]
    indices = [body[:p].count(body[p]) for p in positions]
    seed = draw(st.integers(0, 2**32 - 1))
    return program, ops, indices, seed


def _shuffled_inputs(inputs, count: int, seed: int) -> list[list[np.ndarray]]:
    """``count`` input sets: the generated arrays with their elements permuted,
    which keeps every value in the range the generator made safe."""
    rng = np.random.default_rng(seed)
    return [
        [rng.permutation(a.reshape(-1)).reshape(a.shape) for a in inputs]
        for _ in range(count)
    ]


@settings(max_examples=30, deadline=None)
@given(programs_with_cuts())
def test_pipelined_equals_sequential_equals_the_interpreter(case):
    program, ops, indices, seed = case
    split = split_graph(program.module, ops, indices, target="interp")
    lib = build(split)
    input_sets = _shuffled_inputs(program.inputs, 6, seed)
    with PipelineModule(lib, capacity=1, max_in_flight=4) as pipe:
        results = []
        for inputs in input_sets:
            for i, array in enumerate(inputs):
                pipe.set_input(i, array)
            if pipe.in_flight == 4:
                results.append(pipe.get_output(timeout=30))
            pipe.run()
        while pipe.in_flight:
            results.append(pipe.get_output(timeout=30))
        assert len(results) == len(input_sets)
        for inputs, pipelined in zip(input_sets, results):
            expected = ember.interpret(program.module, "main", *inputs)
            for i, array in enumerate(inputs):
                pipe.set_input(i, array)
            pipe.run(sync=True)
            sequential = pipe.get_output()
            assert len(pipelined) == len(sequential) == len(expected)
            for p, s, e in zip(pipelined, sequential, expected):
                np.testing.assert_array_equal(p.numpy(), e)
                np.testing.assert_array_equal(s.numpy(), e)


# --------------------------------------------------------------------------
# Executor semantics with interp stages (no compile time)
# --------------------------------------------------------------------------

CHAIN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_extern "test_pipeline.check"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  %2 = graph.call_extern "test_pipeline.slow"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""


def _chain_library(delay: list[float]) -> PipelineLibrary:
    """Two interp stages: the first fails on inputs whose sum is negative,
    the second sleeps ``delay[0]`` seconds."""

    @register_func("test_pipeline.check", override=True)
    def check(x, out):
        values = np.from_dlpack(x)
        if values.sum() < 0:
            raise ValueError(f"negative input {values.tolist()}")
        np.copyto(np.from_dlpack(out), values)

    @register_func("test_pipeline.slow", override=True)
    def slow(x, out):
        time.sleep(delay[0])
        np.copyto(np.from_dlpack(out), np.from_dlpack(x) * 2)

    module = ember.parse(CHAIN)
    return build(split_graph(module, ["relu"], [0], target="interp"))


def test_a_stage_failure_reaches_get_output_with_stage_and_index(pipeline_externs):
    lib = _chain_library([0.0])
    values = [1.0, 2.0, -5.0, 3.0, -1.0, 4.0]
    with PipelineModule(lib) as pipe:
        for v in values:
            pipe.set_input("x", np.full(4, v, np.float32))
            pipe.run()
        for index, v in enumerate(values):
            if v < 0:
                expected = (
                    rf"stage @main_0 \(interp on cpu:0\) failed on input #{index}: "
                    r"external function 'test_pipeline.check' .* ValueError: negative"
                )
                with pytest.raises(StageError, match=expected) as failure:
                    pipe.get_output(timeout=30)
                assert (failure.value.stage, failure.value.index) == ("main_0", index)
                assert (
                    failure.value.__cause__ is None or failure.value.cause is not None
                )
            else:
                np.testing.assert_array_equal(
                    pipe.get_output(timeout=30)[0].numpy(), np.full(4, 2 * v)
                )
        # The sequential mode reports failures the same way.
        pipe.set_input("x", np.full(4, -1.0, np.float32))
        pipe.run(sync=True)
        with pytest.raises(StageError, match=f"input #{len(values)}"):
            pipe.get_output()


def test_get_output_times_out_and_the_result_still_arrives(pipeline_externs):
    delay = [0.5]
    lib = _chain_library(delay)
    with PipelineModule(lib) as pipe:
        pipe.set_input("x", np.ones(4, np.float32))
        pipe.run()
        # run() returned before the 0.5 s stage finished: no result yet.
        with pytest.raises(
            PipelineTimeout, match=r"no result for input #0 within 0\.05 s"
        ) as timeout:
            pipe.get_output(timeout=0.05)
        assert isinstance(timeout.value, TimeoutError)
        np.testing.assert_array_equal(
            pipe.get_output(timeout=30)[0].numpy(), np.full(4, 2.0)
        )


def test_run_waits_when_max_in_flight_inputs_are_unread(pipeline_externs):
    lib = _chain_library([0.0])
    with PipelineModule(lib, max_in_flight=3) as pipe:
        pipe.set_input("x", np.ones(4, np.float32))
        for _ in range(3):
            pipe.run()
        with pytest.raises(
            PipelineTimeout, match=r"3 inputs are in flight \(max_in_flight=3\)"
        ):
            pipe.run(timeout=0.1)
        assert pipe.peak_in_flight == 3
        for _ in range(3):
            pipe.get_output(timeout=30)
        assert pipe.run(timeout=1) == 3  # room again; indices stay consecutive
        pipe.get_output(timeout=30)


def test_close_never_hangs_also_with_a_failed_stage_and_pending_inputs(pipeline_externs):
    delay = [0.2]
    lib = _chain_library(delay)
    pipe = PipelineModule(lib)
    for v in (-1.0, 1.0, 2.0, 3.0):
        pipe.set_input("x", np.full(4, v, np.float32))
        pipe.run()
    closer = threading.Thread(target=pipe.close)
    closer.start()
    closer.join(timeout=60)  # a guard against a hang, not a speed bound
    assert not closer.is_alive(), "close() hangs"
    assert not _pipeline_threads()
    with pytest.raises(PipelineClosedError, match="closed"):
        pipe.run()
    with pytest.raises(PipelineClosedError):
        pipe.get_output(timeout=1)
    pipe.close()  # twice is harmless


def test_close_wakes_a_reader_waiting_in_another_thread(pipeline_externs):
    lib = _chain_library([0.3])
    pipe = PipelineModule(lib)
    pipe.set_input("x", np.ones(4, np.float32))
    pipe.run()
    errors = []

    def read() -> None:
        try:
            pipe.get_output()
        except PipelineError as e:
            errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.05)
    pipe.close()
    reader.join(5)
    assert not reader.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], PipelineClosedError)


def test_an_executor_dropped_without_close_stops_its_threads(pipeline_externs):
    lib = _chain_library([0.0])
    pipe = PipelineModule(lib)
    pipe.set_input("x", np.ones(4, np.float32))
    pipe.run()
    assert _pipeline_threads()
    del pipe
    gc.collect()  # the fixture checks that the threads are gone


EXIT_SCRIPT = (
    "import numpy as np, ember\n"
    "from ember.pipeline import PipelineModule, StageError, build, split_graph\n"
    "\n"
    "@ember.register_func('test_pipeline.check')\n"
    "def check(x, out):\n"
    "    raise ValueError('this stage always fails')\n"
    "\n"
    "@ember.register_func('test_pipeline.slow')\n"
    "def slow(x, out):\n"
    "    np.copyto(np.from_dlpack(out), np.from_dlpack(x))\n"
    "\n"
    f"lib = build(split_graph(ember.parse({CHAIN!r}), ['relu'], [0], target='interp'))\n"
    "pipe = PipelineModule(lib)\n"
    "pipe.set_input('x', np.ones(4, np.float32))\n"
    "for _ in range(5):\n"
    "    pipe.run()\n"
    "try:\n"
    "    pipe.get_output(timeout=30)\n"
    "except StageError:\n"
    "    print('failed as expected')\n"
    "# No close(): the interpreter must still exit promptly.\n"
)


def test_the_process_exits_with_an_executor_left_open_after_a_failure():
    # A hang is subprocess.TimeoutExpired.
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "failed as expected"


def test_inputs_are_checked_and_copied(pipeline_externs):
    lib = _chain_library([0.0])
    with PipelineModule(lib) as pipe:
        with pytest.raises(PipelineError, match=r"run\(\): input\(s\) not set: x"):
            pipe.run()
        with pytest.raises(PipelineError, match="no input is pending"):
            pipe.get_output()
        with pytest.raises(PipelineError, match=r"unknown input 'y'.*x: float32\[4\]"):
            pipe.set_input("y", np.ones(4, np.float32))
        with pytest.raises(
            PipelineError, match=r"expected float32\[4\], got float64\[4\]; convert"
        ):
            pipe.set_input("x", np.ones(4))
        with pytest.raises(
            PipelineError, match=r"expected float32\[4\], got float32\[5\]"
        ):
            pipe.set_input("x", np.ones(5, np.float32))
        with pytest.raises(PipelineError, match="input index 3 out of range"):
            pipe.set_input(3, np.ones(4, np.float32))
        data = np.ones(4, np.float32)
        pipe.set_input("x", data)
        pipe.run()
        data[:] = 7  # changes nothing already queued
        np.testing.assert_array_equal(
            pipe.get_output(timeout=30)[0].numpy(), np.full(4, 2.0)
        )


# --------------------------------------------------------------------------
# Build errors: connections, types, params, placement
# --------------------------------------------------------------------------


def test_bad_and_missing_connections_are_reported_when_building():
    module, _ = workloads.get("tiny_pipe")
    mod0, mod1 = stage_functions(split_graph(module, ["relu"], [0]))
    cfg = PipelineConfig([mod0, mod1])
    with pytest.raises(PipelineConfigError, match="main_1 would feed itself"):
        cfg[mod1]["output"][0].connect(cfg[mod1]["input"]["dweight"])
    with pytest.raises(
        PipelineConfigError,
        match=r"has type tensor<1x1024xf32> but main_0 output 0 gives tensor<1x16x8x8xf32>",
    ):
        cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["dweight"])
    cfg["input"]["data"].connect(cfg[mod0]["input"]["data"])
    with pytest.raises(
        PipelineConfigError, match=r'main_0 input "weight" \(#1\) is not connected'
    ):
        build(cfg)


def test_params_and_stage_builds_fail_naming_what_is_wrong():
    module, params = workloads.get("tiny_pipe")
    split = split_graph(module, ["relu"], [0], target="interp")
    with pytest.raises(
        PipelineError, match=r"params has 'weigth'.*did you mean 'weight'"
    ):
        build(split, params={"weigth": params["weight"]})
    with pytest.raises(
        PipelineError,
        match=r"param 'dweight'.* must be float32\[1, 1024\], got float16\[1, 1024\]",
    ):
        build(split, params={"dweight": params["dweight"].astype(np.float16)})
    with pytest.raises(PipelineError, match="no pipeline.graph @net in the module"):
        build(split, entry="net")
    with pytest.raises(PipelineError, match="expects a PipelineConfig"):
        build(42)
    on_gpu = split_graph(module, ["relu"], [0], target="cuda", device="cuda:0")
    with pytest.raises(
        PipelineError, match=r"stage @main_0 \(cuda on cuda:0\): target 'cuda'"
    ):
        build(on_gpu)
    cfg, mod0, mod1, _ = seed_config("float32")
    cfg[mod0].target = cfg[mod1].target = "interp"
    cfg[mod1].build_func = lambda stage_module, target, dev: "not a module"
    with pytest.raises(PipelineError, match=r"stage @main_1 .*build_func returned str"):
        build(cfg, params=params)
    other = ember.parse(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  func.return %a : tensor<2xf32>\n}\n"
    )
    cfg[mod1].build_func = lambda stage_module, target, dev: ember.build(other, target)
    with pytest.raises(
        PipelineError,
        match=r"stage @main_1 .*returns \(float32\[2\]\) but the stage declares \(float32\[1, 1\]\)",
    ):
        build(cfg, params=params)
    with pytest.raises(
        PipelineError, match=r"stage @main_1 .*takes 1 inputs, but 2 are connected"
    ):
        build(cfg, params={n: params[n] for n in TINY_PARAMS[:-1]})


def test_stage_inputs_with_clashing_names_get_names_of_their_own():
    module = ember.parse(
        """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = graph.relu %x : tensor<3xf32>
  %b = graph.exp %x : tensor<3xf32>
  %c = graph.tanh %b : tensor<3xf32>
  %d = graph.add %a, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %d : tensor<3xf32>
}
"""
    )
    split = split_graph(module, ["exp"], [0], target="interp")
    lib = build(split)
    assert [s.name for s in lib.stages[1].module.input_specs] == ["data_n", "data_n.1"]
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    with PipelineModule(lib) as pipe:
        pipe.set_input("x", x)
        pipe.run()
        np.testing.assert_array_equal(
            pipe.get_output(timeout=30)[0].numpy(),
            ember.interpret(module, "main", x)[0],
        )


HAND_WRITTEN = """
func.func @f(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = graph.exp %x : tensor<3xf32>
  %1 = graph.tanh %x : tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
func.func @g(%a: tensor<3xf32>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = graph.add %a, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = graph.relu %0 : tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
pipeline.graph @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %e, %t = pipeline.stage @f(%x) {target = "interp", device = "cpu:0"} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %s, %r = pipeline.stage @g(%e, %x) {target = "llvm", device = "cpu:0"} : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %e2, %t2 = pipeline.stage @f(%t) {target = "llvm", device = "cpu:0"} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  pipeline.yield %r, %e, %t2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
"""


def test_mixed_targets_shared_functions_and_values_used_twice():
    """A global input feeding two stages, a stage output feeding a later
    stage and a global output, unused outputs, and one function run by two
    stages (named f and f.1), on two targets."""
    lib = build(HAND_WRITTEN)
    assert [s.name for s in lib.stages] == ["f", "g", "f.1"]
    x = np.array([-2.0, 0.5, 1.5], np.float32)
    with PipelineModule(lib) as pipe:
        for scale in (1.0, -1.0, 0.5):
            pipe.set_input("x", x * np.float32(scale))
            pipe.run()
        for scale in (1.0, -1.0, 0.5):
            v = x * np.float32(scale)
            relu, exp, tanh_tanh = (out.numpy() for out in pipe.get_output(timeout=30))
            np.testing.assert_allclose(relu, np.maximum(np.exp(v) + v, 0), rtol=1e-5)
            np.testing.assert_allclose(exp, np.exp(v), rtol=1e-6)
            np.testing.assert_allclose(
                tanh_tanh, np.tanh(np.tanh(v)), rtol=1e-5, atol=1e-6
            )


def test_cpu_devices_name_cores_when_a_pipeline_uses_several():
    module, _ = workloads.get("tiny_pipe")
    split = split_graph(module, ["relu"], [0], target="interp")
    cfg = PipelineConfig.from_module(split)
    cfg["main_1"].dev = "cpu:64"
    lib = build(cfg)
    with pytest.raises(
        PipelineError, match=r"cpu:64 names core 64, but this process may run on"
    ):
        PipelineModule(lib)
    with PipelineModule(lib, pin_cores=False) as pipe:
        assert pipe.pinned_cores == [None, None]
    with pytest.raises(PipelineError, match="capacity must be a positive integer"):
        PipelineModule(lib, capacity=0)


# --------------------------------------------------------------------------
# Damaged artifacts
# --------------------------------------------------------------------------


@pytest.fixture
def exported(tmp_path) -> Path:
    module, params = workloads.get("tiny_pipe")
    split = split_graph(module, ["relu"], [0], target="interp")
    return Path(build(split, params=params).export_library(tmp_path / "pipe"))


def _edit_json(path: Path, change) -> None:
    """Change the config and reseal it, as a forger would."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(seal(data)))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.unlink(), r"has no pipeline\.json"),
        (
            lambda p: p.write_text("{not json"),
            r"corrupt pipeline config .*pipeline\.json",
        ),
        (
            lambda p: _edit_json(p, lambda d: d.update(format_version=99)),
            r"format version 99.*upgrade ember",
        ),
        (
            lambda p: _edit_json(p, lambda d: d.update(format="other")),
            r"is not an ember pipeline config",
        ),
        (
            lambda p: _edit_json(p, lambda d: d.pop("stages")),
            r"pipeline\.json: field stages is missing",
        ),
        (
            lambda p: _edit_json(
                p, lambda d: d["inputs"][0].update(shape=[1, 3, 8, 9])
            ),
            r"input 'data' is float32\[1, 3, 8, 8\] but global input \"data\" gives float32\[1, 3, 8, 9\]",
        ),
        (
            lambda p: _edit_json(
                p, lambda d: d["stages"][1]["inputs"][0]["from"].update(stage="main_1")
            ),
            r"stage number 1 is not an earlier stage",
        ),
        (
            lambda p: _edit_json(
                p, lambda d: d["stages"][0].update(artifact="../elsewhere")
            ),
            r"not a plain directory name",
        ),
        (
            lambda p: (p.parent / "main_1" / "manifest.json").write_text(
                (p.parent / "main_1" / "manifest.json").read_text(encoding="utf-8") + " "
            ),
            r"stage @main_1 .*main_1: manifest\.json does not match the checksum its "
            r"pipeline config records",
        ),
        (
            lambda p: (p.parent / "main_0" / "graph.mlir").write_text("garbage"),
            r"stage @main_0 of pipeline .*graph\.mlir does not match its checksum",
        ),
        (
            lambda p: shutil.rmtree(p.parent / "main_1"),
            r"stage @main_1 has no main_1/manifest\.json",
        ),
    ],
    ids=[
        "no-config",
        "bad-json",
        "version",
        "format",
        "missing-key",
        "type-mismatch",
        "cycle",
        "escaping-path",
        "edited-manifest",
        "edited-payload",
        "missing-stage",
    ],
)
def test_loading_a_damaged_artifact_fails_naming_the_problem(exported, damage, message):
    load_library(exported)  # intact, it loads
    damage(exported)
    with pytest.raises(ArtifactError, match=message):
        PipelineModule.load_library(exported.parent)


def test_export_refuses_a_foreign_directory_and_replaces_an_earlier_export(
    exported, tmp_path
):
    lib = load_library(exported)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(
        ArtifactError, match="not empty and holds no earlier pipeline export"
    ):
        lib.export_library(foreign)
    assert lib.export_library(exported.parent) == str(exported)
    assert load_library(exported).stages[0].name == "main_0"
    with pytest.raises(ArtifactError, match="does not exist"):
        load_library(tmp_path / "nowhere")


# --------------------------------------------------------------------------
# The ember-run entry point
# --------------------------------------------------------------------------


def test_run_pipeline_file_builds_or_loads_and_reports_throughput(exported, tmp_path):
    module, params = workloads.get("tiny_pipe")
    data = _seed_inputs("float32", 1)[0]
    expected = ember.interpret(module, "main", data, *(params[n] for n in TINY_PARAMS))[
        0
    ]
    loaded = run_pipeline_file(exported.parent, {"data": data}, count=5)
    assert loaded.throughput.mode == "pipelined" and loaded.throughput.count == 5
    assert loaded.throughput.per_second > 0
    np.testing.assert_array_equal(loaded.outputs[0], expected)
    source = tmp_path / "split.mlir"
    source.write_text(
        ember.to_text(split_graph(module, ["relu"], [0], target="interp"))
    )
    np.savez(tmp_path / "params.npz", **params)
    built = run_pipeline_file(
        source, {"data": data}, params=tmp_path / "params.npz", sequential=True, count=3
    )
    assert built.throughput.mode == "sequential"
    np.testing.assert_array_equal(built.outputs[0], expected)
    with pytest.raises(PipelineError, match="unknown input 'dat'"):
        run_pipeline_file(exported, {"dat": data})
    with pytest.raises(PipelineError, match="params were bound when it was built"):
        run_pipeline_file(exported, params={})


def test_run_pipeline_file_draws_the_single_module_random_inputs_and_times_latency(
    exported,
):
    from ember.dialects.graph import tensor_type
    from ember.tools.ember_run import Argument, random_array

    module, params = workloads.get("tiny_pipe")
    run = run_pipeline_file(exported, count=2, seed=7, bench=3)
    # What ember-run draws for argument 0 (%data) of the unsplit function.
    data = random_array(Argument("data", tensor_type((1, 3, 8, 8)), 0), 7)
    expected = ember.interpret(module, "main", data, *(params[n] for n in TINY_PARAMS))
    np.testing.assert_array_equal(run.outputs[0], expected[0])
    assert run.latency is not None and len(run.latency.results) == 3
    assert run.latency.number == 1 and run.latency.min > 0
    assert run_pipeline_file(exported, count=1).latency is None


def test_run_pipeline_file_rejects_a_negative_seed(exported):
    with pytest.raises(ember.RuntimeFailure, match="integer seed >= 0, got -1"):
        run_pipeline_file(exported, seed=-1)
