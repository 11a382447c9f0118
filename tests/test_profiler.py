"""GraphExecutor.profile(), ember-run --profile and the FMA peak it divides by.

No test asserts a time: only that every kernel has a row, the figures are
consistent with each other (shares sum to 1, GFLOP/s = FLOPs / time), and
the reports round-trip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import RuntimeFailure
from ember.pipeline import op_costs
from ember.runtime import peak
from ember.runtime.profiler import Profile
from ember.testing import workloads
from tests.test_tools import EXAMPLES, assert_user_error, run_tool

TWO_RELUS = """\
func.func @main(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %a = graph.relu %x : tensor<2x8xf32>
  %b = graph.relu %y : tensor<2x8xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The peak is cached here, not in the user's home; measured afresh."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(peak, "_measured", None)
    yield tmp_path / "cache"


@pytest.fixture(scope="module")
def mlp() -> ember.GraphExecutor:
    module, params = workloads.get("mlp")
    executor = ember.GraphExecutor(ember.build(module, target="llvm", params=params))
    spec = executor.module.input_specs[0]
    executor.set_input(spec.name, np.ones(spec.shape, spec.dtype))
    return executor


def _kernel_calls(executor: ember.GraphExecutor) -> list[str]:
    return [site.name for site in executor.module.layout.kernels]


def test_profile_has_a_row_per_kernel_call_with_its_fused_ops(mlp: ember.GraphExecutor) -> None:
    profile = mlp.profile(repeat=3)
    assert [row.name for row in profile.rows] == _kernel_calls(mlp)
    assert len(profile.rows) == 2
    first = profile.rows[0]
    assert first.name == "fused_dense_bias_add_relu"
    assert first.ops == ("graph.dense", "graph.bias_add", "graph.relu")
    assert first.shape == (1, 128)
    assert first.flops == 2 * 784 * 128 + 2 * 128  # dense, then bias_add and relu
    for row in profile.rows:
        assert row.median_ms >= 0
        assert row.gflops == pytest.approx(row.flops / (row.median_ms * 1e6))
        assert row.peak_percent == pytest.approx(100 * row.gflops / profile.peak_gflops)
    assert sum(row.share for row in profile.rows) + profile.overhead_share == pytest.approx(1)
    assert profile.overhead == pytest.approx(profile.overhead_ms / 1e3)
    assert profile.overhead_ms >= 0
    assert profile.threads == ember.runtime.threads.num_threads()


def test_the_profile_leaves_the_outputs_of_a_normal_run(mlp: ember.GraphExecutor) -> None:
    mlp.run()
    expected = mlp.get_output(0).numpy()
    mlp.profile(repeat=2)
    np.testing.assert_array_equal(mlp.get_output(0).numpy(), expected)


def test_the_table_names_every_kernel_and_the_time_outside(mlp: ember.GraphExecutor) -> None:
    text = str(mlp.profile(repeat=2))
    assert text.startswith("Profile of @main:")
    for heading in ("kernel", "ops", "shape", "median ms", "share", "GFLOP/s", "% peak"):
        assert heading in text.splitlines()[1]
    assert "fused_dense_bias_add_relu  dense+bias_add+relu  1x128" in text
    assert "(outside kernels)" in text.splitlines()[-1]


def test_json_is_keyed_by_kernel_and_round_trips() -> None:
    executor = ember.GraphExecutor(ember.build(TWO_RELUS, target="llvm"))
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 8
    profile = executor.profile(repeat=2, x=x, y=-x)
    data = json.loads(profile.to_json())
    assert list(data["kernels"]) == ["relu", "relu#2"]  # one kernel, called twice
    assert data["kernels"]["relu"]["ops"] == ["graph.relu"]
    assert data["overhead_ms"] == profile.overhead_ms
    assert Profile.from_dict(data) == profile
    np.testing.assert_array_equal(executor.get_output(1).numpy(), np.maximum(-x, 0))


def test_a_loaded_artifact_can_be_profiled(tmp_path: Path) -> None:
    lib = ember.build(TWO_RELUS, target="llvm")
    lib.export_library(tmp_path / "relus.ember")
    loaded = ember.GraphExecutor(ember.load_module(tmp_path / "relus.ember"))
    x = np.ones((2, 8), np.float32)
    profile = loaded.profile(repeat=2, x=x, y=x)
    assert [row.name for row in profile.rows] == ["relu", "relu"]


def test_the_profile_says_how_far_apart_the_threads_cores_are(
    mlp: ember.GraphExecutor,
) -> None:
    """Two threads or more: the cores' round trip before and after the runs,
    in the title and the JSON; one thread: none."""
    from ember.runtime import cores, threads

    with threads.limit_threads(1):
        alone = mlp.profile(repeat=2)
    assert alone.round_trip_ns is None and "apart" not in str(alone)
    if cores.cpu_pair() is None or threads.num_threads() < 2:
        pytest.skip("one CPU: no round trip to measure")
    profile = mlp.profile(repeat=2)
    assert profile.round_trip_ns is not None and min(profile.round_trip_ns) > 0
    assert " ns apart, peak " in str(profile).splitlines()[0]
    data = json.loads(profile.to_json())
    assert Profile.from_dict(data) == profile
    del data["round_trip_ns"]  # a profile saved before the field existed
    assert Profile.from_dict(data).round_trip_ns is None


def test_a_move_of_the_cores_during_the_runs_shows_both_round_trips() -> None:
    def title(trip: tuple[float, float]) -> str:
        return str(Profile("main", (), 0.01, 5, 2, 100.0, "znver4", trip)).splitlines()[0]

    assert "2 thread(s) on cores 90 ns apart, peak 100.0" in title((81.0, 90.4))
    assert "2 thread(s) on cores 81 → 352 ns apart, peak" in title((81.0, 351.6))


def test_profile_rejects_what_it_cannot_time() -> None:
    interpreted = ember.GraphExecutor(ember.build(TWO_RELUS, target="interp"))
    with pytest.raises(RuntimeFailure, match="target 'interp' has no timed entry"):
        interpreted.profile(repeat=1)
    compiled = ember.GraphExecutor(ember.build(TWO_RELUS, target="llvm"))
    with pytest.raises(RuntimeFailure, match="profile: repeat must be an integer >= 1"):
        compiled.profile(repeat=0)
    with pytest.raises(RuntimeFailure, match="input\\(s\\) not set: x, y"):
        compiled.profile(repeat=1)
    with pytest.raises(RuntimeFailure, match="not a profile"):
        Profile.from_dict({"entry": "main"})


# --------------------------------------------------------------------------
# Measured costs per graph op, for split-graph{balance=N costs=FILE}
# --------------------------------------------------------------------------

# Two dense+relu groups of one shape share one fused kernel, whose ops the
# second call must not take from the first.
DENSE_CHAIN = """\
func.func @main(%x: tensor<1x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<4x32xf32>) -> tensor<1x4xf32> {
  %h = graph.dense %x, %w0 : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  %r = graph.relu %h : tensor<1x32xf32>
  %g = graph.dense %r, %w1 : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  %s = graph.relu %g : tensor<1x32xf32>
  %y = graph.dense %s, %w2 : (tensor<1x32xf32>, tensor<4x32xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
"""


@pytest.fixture(scope="module")
def chain_profile() -> Profile:
    rng = np.random.default_rng(0)
    executor = ember.GraphExecutor(ember.build(DENSE_CHAIN, target="llvm"))
    inputs = {
        spec.name: rng.uniform(-1, 1, spec.shape).astype(spec.dtype)
        for spec in executor.module.input_specs
    }
    return executor.profile(repeat=3, **inputs)


def test_op_costs_give_each_kernels_time_to_the_ops_it_computes(chain_profile: Profile) -> None:
    from ember.passes.cost import op_cost

    module = ember.parse(DENSE_CHAIN)
    assert [row.name for row in chain_profile.rows] == [
        "fused_dense_relu", "fused_dense_relu", "dense"
    ]
    costs = op_costs(chain_profile, module)
    assert set(costs) == {
        ("graph.dense", 0), ("graph.relu", 0), ("graph.dense", 1), ("graph.relu", 1),
        ("graph.dense", 2),
    }
    first, second, last = (row.median_ms / 1e3 for row in chain_profile.rows)
    assert costs[("graph.dense", 0)] + costs[("graph.relu", 0)] == pytest.approx(first)
    assert costs[("graph.dense", 1)] + costs[("graph.relu", 1)] == pytest.approx(second)
    assert costs[("graph.dense", 2)] == pytest.approx(last)
    # A fused kernel's time is split by the ops' estimated cost.
    ops = list(next(iter(module.ops)).body.block.ops)
    dense, relu = op_cost(ops[0]), op_cost(ops[1])
    assert costs[("graph.dense", 0)] / first == pytest.approx(
        (dense.flops + dense.bytes / 1e6)
        / (dense.flops + dense.bytes / 1e6 + relu.flops + relu.bytes / 1e6)
    )


WINOGRAD_CONV = """
func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.relu %0 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %1 : tensor<1x4x8x8xf32>
}
"""


def test_op_costs_follow_a_kernel_the_schedule_gave_a_workspace() -> None:
    """A Winograd kernel's call is rebuilt with its workspace results by
    kernel-tensorize; it keeps the graph ops' locations, so its time still
    goes to the conv and the relu (this failed on resnet18 once)."""
    module = ember.parse(WINOGRAD_CONV)
    params = {"w": np.random.default_rng(0).standard_normal((4, 4, 3, 3)).astype(np.float32)}
    options = {"schedule": "kernel-pad-input,kernel-tensorize{vector-bits=32 winograd-min-channels=1}"}
    executor = ember.GraphExecutor(ember.build(module, params=params, options=options))
    x = np.zeros((1, 4, 8, 8), np.float32)
    profile = executor.profile(repeat=2, x=x)
    costs = op_costs(profile, module, params=params, options=options)
    assert set(costs) == {("graph.conv2d", 0), ("graph.relu", 0)}
    assert sum(costs.values()) == pytest.approx(profile.rows[0].median_ms / 1e3)


def test_the_costs_file_moves_split_graphs_cut(chain_profile: Profile, tmp_path: Path) -> None:
    """What the profiler writes, split-graph reads; making one op the heavy
    one (as a slow kernel would) moves the balanced cut next to it."""
    from ember.pipeline import load_op_costs, save_op_costs, stage_functions

    module = ember.parse(DENSE_CHAIN)
    path = tmp_path / "costs.json"
    written = op_costs(chain_profile, module)
    save_op_costs(path, written)
    assert load_op_costs(path) == pytest.approx(written)
    for heavy, last_of_stage_0 in ((("graph.dense", 0), "graph.dense"), (("graph.dense", 2), "graph.relu")):
        inflated = dict(written)
        inflated[heavy] = 100 * sum(written.values())
        save_op_costs(path, inflated)
        split = ember.apply_passes(module, f"split-graph{{balance=2 costs={path}}}")
        stage_0, stage_1 = stage_functions(split)
        ops_0 = [op.name for op in stage_0.body.block.ops][:-1]
        ops_1 = [op.name for op in stage_1.body.block.ops][:-1]
        assert ops_0[-1] == last_of_stage_0
        # The heavy op is alone in its stage.
        assert (ops_0 if heavy[1] == 0 else ops_1) == ["graph.dense"]


def test_op_costs_need_the_module_the_profile_was_built_from(chain_profile: Profile) -> None:
    with pytest.raises(RuntimeFailure, match="lowers to 2 kernel calls but the profile has 3"):
        op_costs(chain_profile, ember.parse(TWO_RELUS))
    with pytest.raises(RuntimeFailure, match="no function @nope"):
        op_costs(chain_profile, ember.parse(DENSE_CHAIN), entry="nope")
    with pytest.raises(RuntimeFailure, match="only a profile of target 'llvm'"):
        op_costs(chain_profile, ember.parse(DENSE_CHAIN), target="llvm -libs=blas")


def test_ember_run_writes_the_costs_file(tmp_path: Path) -> None:
    from ember.passes.split_graph import load_op_costs

    source = tmp_path / "chain.mlir"
    source.write_text(DENSE_CHAIN)
    costs = tmp_path / "costs.json"
    result = run_tool(
        "ember-run", source, "--random-inputs", "--profile", "2", "--threads", "1",
        "--costs-out", costs,
    )
    assert result.returncode == 0, result.stderr
    assert "1 thread(s)" in result.stdout
    assert f"saved the measured times of 5 ops of @main to {costs}" in result.stdout
    assert len(load_op_costs(costs)) == 5
    assert_user_error(
        run_tool("ember-run", source, "--random-inputs", "--costs-out", costs),
        "--costs-out writes what --profile measures",
    )
    assert_user_error(
        run_tool("ember-run", source, "--random-inputs", "--threads", "0"),
        "--threads needs a positive number, got 0",
    )


# --------------------------------------------------------------------------
# The peak
# --------------------------------------------------------------------------


def test_the_peak_is_measured_once_and_cached_under_ember_cache_dir(cache_dir: Path) -> None:
    first = peak.peak()
    assert first.gflops_per_core > 0 and first.lanes >= 4
    assert first.gflops(2) == 2 * first.gflops_per_core
    cached = json.loads((cache_dir / peak.CACHE_FILE).read_text(encoding="utf-8"))
    (entry,) = cached.values()
    # A later process reads the file: here, a forged figure proves it is read.
    entry["gflops_per_core"] = 12345.0
    (cache_dir / peak.CACHE_FILE).write_text(json.dumps(cached))
    peak._measured = None
    assert peak.peak().gflops_per_core == 12345.0


def test_a_damaged_cache_is_measured_again(cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True)
    (cache_dir / peak.CACHE_FILE).write_text("{not json")
    assert peak.peak().gflops_per_core > 0
    assert json.loads((cache_dir / peak.CACHE_FILE).read_text(encoding="utf-8"))  # rewritten whole


# --------------------------------------------------------------------------
# ember-run --profile
# --------------------------------------------------------------------------


def test_ember_run_profile_prints_the_table() -> None:
    result = run_tool("ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--profile", "3")
    assert result.returncode == 0, result.stderr
    assert "Profile of @main:" in result.stdout
    assert "fused_dense_bias_add_relu" in result.stdout
    assert "(outside kernels)" in result.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--profile", "0"], "--profile needs a positive number of runs, got 0"),
        (["--profile", "--interpret"], "--profile times compiled kernels"),
        (["--profile", "x"], "invalid int value"),
    ],
)
def test_ember_run_profile_rejects_bad_arguments(extra: list[str], message: str) -> None:
    result = run_tool("ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", *extra)
    if extra[-1] == "x":  # argparse's own usage error: status 2, no traceback
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert message in result.stderr
    else:
        assert_user_error(result, message)


# --------------------------------------------------------------------------
# Small kernels stay off the thread pool; the pool's wait policy
# --------------------------------------------------------------------------


def test_small_parallel_loops_stay_serial_unless_asked() -> None:
    from ember.runtime.cpu import OBJECT_FILE

    small = ember.build(TWO_RELUS, target="llvm")
    assert b"GOMP_parallel" not in small.payload()[OBJECT_FILE]  # no team is forked
    forced = ember.build(TWO_RELUS, target="llvm", options={"min_parallel_work": 0})
    assert b"GOMP_parallel" in forced.payload()[OBJECT_FILE]
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    outputs = []
    for lib in (small, forced):
        executor = ember.GraphExecutor(lib)
        executor.run(x=x, y=x)
        outputs.append(executor.get_output(0).numpy())
    np.testing.assert_array_equal(outputs[0], outputs[1])
    with pytest.raises(RuntimeFailure, match="'min_parallel_work' must be a int"):
        ember.build(TWO_RELUS, target="llvm", options={"min_parallel_work": 1.5})


def test_the_spin_count_reaches_libgomp_but_not_the_environment() -> None:
    script = textwrap.dedent(
        """
        import ctypes, os
        from ember.runtime import threads
        runtime = threads.ensure_runtime()
        getenv = ctypes.CDLL(None).getenv
        getenv.restype = ctypes.c_char_p
        print("environ", "GOMP_SPINCOUNT" in os.environ, getenv(b"GOMP_SPINCOUNT"))
        if runtime.parallel and runtime.spin_count is not None:
            gomp = ctypes.CDLL(runtime.library)
            if hasattr(gomp, "omp_display_env"):
                gomp.omp_display_env(1)
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "environ False None" in result.stdout
    if "OPENMP DISPLAY ENVIRONMENT" in result.stdout + result.stderr:
        assert "GOMP_SPINCOUNT = '1000'" in result.stdout + result.stderr


KERNEL_CALLS = """\
func.func @scale(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      memref.store %x, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.call_kernel @scale(%x) {ember.ops = ["graph.relu"], ember.flops = 4 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.call_kernel @scale(%a) {ember.ops = [1, 2], ember.flops = -5 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
"""


def test_the_layout_takes_only_well_formed_kernel_annotations() -> None:
    from ember.lowering.program_to_llvm import KernelSite, lower_program_to_llvm

    layout, _ = lower_program_to_llvm(ember.parse(KERNEL_CALLS))
    assert layout.kernels == [
        KernelSite("scale", ("graph.relu",), (4,), 4),
        KernelSite("scale", (), (4,), 0),  # hand-written nonsense is not reported
    ]
    assert type(layout).from_json(json.loads(json.dumps(layout.to_json()))) == layout


# --------------------------------------------------------------------------
# The run path: Module.bind
# --------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["llvm", "interp"])
def test_a_bound_run_reads_and_writes_the_buffers_it_was_bound_to(target: str) -> None:
    lib = ember.build(TWO_RELUS, target=target)
    inputs = [ember.nd.array(np.full((2, 8), v, np.float32)) for v in (-1.0, 2.0)]
    outputs = [ember.nd.empty((2, 8), "float32") for _ in range(2)]
    run = lib.bind(inputs, outputs)
    run()
    np.testing.assert_array_equal(outputs[1].numpy(), np.full((2, 8), 2.0, np.float32))
    np.copyto(np.asarray(inputs[1]), np.full((2, 8), 5.0, np.float32))  # new values, same buffer
    run()
    np.testing.assert_array_equal(outputs[1].numpy(), np.full((2, 8), 5.0, np.float32))
    np.testing.assert_array_equal(outputs[0].numpy(), np.zeros((2, 8), np.float32))
