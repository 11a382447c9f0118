"""The Ray pipeline executor (ember.pipeline.RayPipelineExecutor) on a local
two-node cluster.

One cluster for the module (``ray.cluster_utils.Cluster``: a head node
offering resource ``node_a``, a second node offering ``node_b``, two CPUs
each (one for the executor shared by several tests, one for a test's own), every process on 127.0.0.1), and a two-stage llvm pipeline whose
stages are pinned one to each node.  Checked: 1,000 inputs come out in
order, on two different nodes; an actor killed mid-stream (by its own
process exiting while it holds an input, and by ``ray.kill``) is replaced
and nothing is lost or repeated; a stage that raises gives a StageError
naming it; a stage out of restarts stops the pipeline with an error naming
it, without hanging; a placement no node offers fails at start; a damaged
shipped module does not load; and ember without the Ray executor never
imports Ray.

These tests are marked ``ray``: ``pytest -m "not ray"`` deselects them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# Every node, the GCS and this driver bind to loopback (see XDSL_NOTES.md):
# set before Ray is imported.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

import numpy as np
import pytest
import ray
from ray.cluster_utils import Cluster

import ember
from ember.pipeline import (
    PipelineClosedError,
    PipelineError,
    PipelineLibrary,
    StageError,
    build,
    split_graph,
)
from ember.pipeline.ray_executor import (
    RayPipelineExecutor,
    RayPlacement,
    load_shipped_module,
    ship_module,
)
from ember.runtime import ArtifactError, register_func

REPO_ROOT = Path(__file__).resolve().parent.parent

ray_cluster = pytest.mark.ray

# Stage main_0: guard0, relu.  Stage main_1: guard1, x + x.
CHAIN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_extern "test_ray.guard0"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  %2 = graph.call_extern "test_ray.guard1"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.add %2, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
"""

RAISES = -1.0
"""guard0 raises on a negative input (stage main_0 fails)."""
DIES_ONCE_IN_1 = 13.0
"""guard1 ends its process the first time it sees 13 (stage main_1 dies)."""
ALWAYS_DIES = 666.0
"""guard1 ends its process whenever it sees 666."""


def register_guards(marker_dir: str) -> None:
    """The extern functions of CHAIN, registered in each actor (``setup=``).

    "The first time" is a file in ``marker_dir``, which outlives the process
    that dies, so the re-sent input passes on the replacement."""

    def guard0(x, out):
        values = np.from_dlpack(x)
        if values[0] < 0:
            raise ValueError(f"negative input {values.tolist()}")
        np.copyto(np.from_dlpack(out), values)

    def guard1(x, out):
        values = np.from_dlpack(x)
        marker = Path(marker_dir) / "died"
        if values[0] == ALWAYS_DIES or (
            values[0] == DIES_ONCE_IN_1 and not marker.exists()
        ):
            marker.touch()
            os._exit(1)
        np.copyto(np.from_dlpack(out), values)

    register_func("test_ray.guard0", guard0, override=True)
    register_func("test_ray.guard1", guard1, override=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """A two-node cluster on this machine; yields resource name -> node id."""
    local = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "resources": {"node_a": 2},
            "include_dashboard": False,
        },
    )
    try:
        local.add_node(num_cpus=2, resources={"node_b": 2})
        ray.init(address=local.address, log_to_driver=False)
        nodes = {
            name: node["NodeID"]
            for node in ray.nodes()
            for name in ("node_a", "node_b")
            if name in node["Resources"]
        }
        yield nodes
    finally:
        ray.shutdown()
        local.shutdown()


@pytest.fixture(scope="module")
def chain() -> PipelineLibrary:
    register_guards("/nonexistent")  # the driver builds; only actors run them
    return build(split_graph(ember.parse(CHAIN), ["relu"], [0]))


PINNED = {"main_0": {"resources": {"node_a": 1}}, "main_1": {"resources": {"node_b": 1}}}


def executor(lib: PipelineLibrary, markers: Path, **options) -> RayPipelineExecutor:
    return RayPipelineExecutor(
        lib,
        placement=PINNED,
        setup=functools.partial(register_guards, str(markers)),
        **options,
    )


@pytest.fixture(scope="module")
def pipe(cluster, chain, tmp_path_factory) -> Iterator[RayPipelineExecutor]:
    """One executor for the tests that kill no actor (starting one costs seconds)."""
    with executor(chain, tmp_path_factory.mktemp("markers"), max_in_flight=64) as shared:
        yield shared


def one(value: float) -> np.ndarray:
    return np.full(4, value, np.float32)


def expected(value: float) -> np.ndarray:
    return np.full(4, 2 * max(value, 0.0), np.float32)


# --------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------


@ray_cluster
def test_a_thousand_inputs_come_out_in_order_from_stages_on_two_nodes(cluster, pipe):
    values = [i + 0.5 for i in range(1000)]  # no value a guard acts on
    assert pipe.stage_nodes == {
        "main_0": cluster["node_a"],
        "main_1": cluster["node_b"],
    }
    for value, outputs in zip(values, pipe.map(one(v) for v in values), strict=True):
        np.testing.assert_array_equal(outputs[0].numpy(), expected(value))
    # run/get_output and futures, interleaved, keep their own orders.
    future = pipe.submit(one(3.5))
    for value in (1.5, 2.5):
        pipe.set_input("x", one(value))
        pipe.run()
    assert [pipe.get_output(timeout=60)[0].numpy()[0] for _ in range(2)] == [3, 5]
    np.testing.assert_array_equal(future.result(timeout=60)[0].numpy(), expected(3.5))
    assert pipe.peak_in_flight <= 64
    assert pipe.restarts == {"main_0": 0, "main_1": 0}
    assert pipe.in_flight == 0


# --------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------


@ray_cluster
def test_an_actor_that_dies_holding_inputs_is_replaced_and_nothing_is_lost(
    cluster, chain, tmp_path
):
    values = [i + 0.5 for i in range(120)]
    values[40] = DIES_ONCE_IN_1  # main_1's process exits while it holds this input
    with executor(chain, tmp_path) as pipe:
        got = [out[0].numpy() for out in pipe.map((one(v) for v in values), window=24)]
        assert len(got) == len(values)
        for value, output in zip(values, got):
            np.testing.assert_array_equal(output, expected(value))
        assert pipe.restarts == {"main_0": 0, "main_1": 1}
        # The replacement keeps the placement: on the same node.
        assert pipe.stage_nodes["main_1"] == cluster["node_b"]


@ray_cluster
def test_an_actor_killed_with_ray_kill_mid_stream_loses_nothing(cluster, chain, tmp_path):
    values = [i + 0.5 for i in range(100)]
    with executor(chain, tmp_path) as pipe:
        for value in values[:50]:
            pipe.set_input("x", one(value))
            pipe.run()
        outputs = [pipe.get_output(timeout=60) for _ in range(10)]
        ray.kill(pipe.stage_actor("main_0"), no_restart=False)
        for value in values[50:]:
            pipe.set_input("x", one(value))
            pipe.run()
        outputs += [pipe.get_output(timeout=120) for _ in range(90)]
        for value, output in zip(values, outputs, strict=True):
            np.testing.assert_array_equal(output[0].numpy(), expected(value))
        assert pipe.restarts["main_0"] == 1
    with pytest.raises(PipelineClosedError, match="closed"):
        pipe.get_output(timeout=1)
    with pytest.raises(PipelineClosedError, match="closed"):
        pipe.run()


@ray_cluster
def test_a_stage_that_raises_gives_a_stage_error_naming_it(pipe):
    indices = []
    for value in (1.5, RAISES, 2.5):
        pipe.set_input("x", one(value))
        indices.append(pipe.run())
    np.testing.assert_array_equal(pipe.get_output(timeout=60)[0].numpy(), expected(1.5))
    message = (
        rf"stage @main_0 \(llvm on cpu:0\) failed on input #{indices[1]}: "
        r".*ValueError: negative input \[-1.0, -1.0, -1.0, -1.0\]"
    )
    with pytest.raises(StageError, match=message) as failure:
        pipe.get_output(timeout=60)
    assert (failure.value.stage, failure.value.index) == ("main_0", indices[1])
    # The pipeline goes on.
    np.testing.assert_array_equal(pipe.get_output(timeout=60)[0].numpy(), expected(2.5))
    assert pipe.restarts == {"main_0": 0, "main_1": 0}


@ray_cluster
def test_a_stage_out_of_restarts_stops_the_pipeline_naming_it(cluster, chain, tmp_path):
    with executor(chain, tmp_path, max_restarts=1) as pipe:
        future = pipe.submit(one(ALWAYS_DIES))
        pipe.set_input("x", one(0.5))
        pipe.run()
        # Two deaths (the first actor and its one replacement): the pipeline stops.
        message = r"stage @main_1 \(llvm on cpu:0\) failed.*1 restart\(s\) \(max_restarts\) are used up"
        with pytest.raises(StageError, match=message) as failure:
            future.result(timeout=120)
        assert failure.value.stage == "main_1"
        with pytest.raises(StageError, match=message):
            pipe.get_output(timeout=120)
        with pytest.raises(StageError, match=message):
            pipe.run()


@ray_cluster
def test_a_placement_no_node_offers_fails_at_start_naming_the_stage(cluster, chain, tmp_path):
    placement = {"main_1": {"resources": {"node_c": 1}}}
    with pytest.raises(
        PipelineError,
        match=r"stage @main_1 .* did not start within 2 s: no node of the cluster offers "
        r".*'node_c': 1.*nodes offer: CPU=2, node_[ab]=2; CPU=2, node_[ab]=2",
    ):
        RayPipelineExecutor(
            chain,
            placement=placement,
            start_timeout=2,
            setup=functools.partial(register_guards, str(tmp_path)),  # main_0 starts
        )


def test_placements_are_checked_before_anything_starts(chain):
    with pytest.raises(PipelineError, match=r"'main_2'.*stages: main_0, main_1.*'main_1'"):
        RayPipelineExecutor(chain, placement={"main_2": {}})
    with pytest.raises(PipelineError, match=r"unknown setting\(s\) 'cpus'.*num_cpus"):
        RayPipelineExecutor(chain, placement={"main_0": {"cpus": 2}})
    with pytest.raises(PipelineError, match="num_gpus must be a number >= 0"):
        RayPipelineExecutor(chain, placement={"main_0": {"num_gpus": -1}})


def test_a_stage_on_a_cuda_device_asks_ray_for_a_gpu(chain):
    on_cpu = chain.stages[0]
    on_gpu = dataclasses.replace(on_cpu, device=ember.cuda(0))
    assert RayPlacement().actor_options(on_cpu)["num_gpus"] == 0
    assert RayPlacement().actor_options(on_gpu)["num_gpus"] == 1
    assert RayPlacement(num_gpus=0.5).actor_options(on_gpu)["num_gpus"] == 0.5
    assert RayPlacement(resources={"a": 1}).actor_options(on_cpu) == {
        "num_cpus": 1.0,
        "num_gpus": 0,
        "resources": {"a": 1},
    }


# --------------------------------------------------------------------------
# What is shipped, and what imports Ray
# --------------------------------------------------------------------------


def test_a_shipped_module_is_checked_when_it_loads(chain, tmp_path):
    module = chain.stages[1].module
    files, digest = ship_module(module)
    (tmp_path / "ok").mkdir()
    loaded = load_shipped_module(files, digest, tmp_path / "ok")
    assert loaded.output_specs == module.output_specs
    payload = max((name for name in files if name != "manifest.json"), key=lambda n: len(files[n]))
    data = bytes(files[payload])  # the object code: never empty
    damaged = dict(files)
    damaged[payload] = data[:-1] + bytes([data[-1] ^ 1])
    (tmp_path / "damaged").mkdir()
    with pytest.raises(ArtifactError, match=f"{payload} does not match its checksum"):
        load_shipped_module(damaged, digest, tmp_path / "damaged")
    (tmp_path / "digest").mkdir()
    with pytest.raises(ArtifactError, match="manifest.json does not match the checksum"):
        load_shipped_module(files, "0" * 64, tmp_path / "digest")
    (tmp_path / "names").mkdir()
    with pytest.raises(ArtifactError, match="not a plain file name"):
        load_shipped_module({**files, "../x": b""}, digest, tmp_path / "names")


def test_ember_without_the_ray_executor_never_imports_ray():
    script = (
        "import sys, numpy as np, ember\n"
        "from ember.pipeline import PipelineModule, build, split_graph\n"
        "module = ember.parse('''func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = graph.relu %x : tensor<4xf32>\n"
        "  %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return %1 : tensor<4xf32>\n"
        "}''')\n"
        "lib = build(split_graph(module, ['relu'], [0], target='interp'))\n"
        "with PipelineModule(lib) as pipe:\n"
        "    pipe.set_input('x', np.ones(4, np.float32)); pipe.run()\n"
        "    assert pipe.get_output(timeout=30)[0].numpy().tolist() == [2.0] * 4\n"
        "import ember.pipeline, ember.runtime, ember.tools.ember_run\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if 'ray' in m)\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
