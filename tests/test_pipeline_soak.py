"""Soak test of the pipeline executor: 10,000 inputs through 3 compiled stages.

A producer thread submits as fast as it can while the test reads results:
every result must arrive, in input order, with the right value (each input
encodes its index, so a lost, duplicated or reordered result shows), the
number of inputs in flight must never exceed ``max_in_flight``, and the
process's resident memory must not grow with the number of inputs.
Nothing is timed: on a loaded machine a duration proves nothing.  The
per-call timeouts only turn a hang into a failure.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

import ember
from ember.pipeline import PipelineConfig, PipelineModule, build, split_graph

COUNT = 10_000
WIDTH = 1024  # 4 KiB per value: a leak of one value per input would be ~40 MB
MAX_IN_FLIGHT = 32

NETWORK = f"""
func.func @main(%x: tensor<1x{WIDTH}xf32>, %b: tensor<1x{WIDTH}xf32>, %w: tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32> {{
  %0 = graph.add %x, %b : (tensor<1x{WIDTH}xf32>, tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32>
  %1 = graph.relu %0 : tensor<1x{WIDTH}xf32>
  %2 = graph.multiply %1, %w : (tensor<1x{WIDTH}xf32>, tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32>
  %3 = graph.relu %2 : tensor<1x{WIDTH}xf32>
  %4 = graph.subtract %3, %b : (tensor<1x{WIDTH}xf32>, tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32>
  func.return %4 : tensor<1x{WIDTH}xf32>
}}
"""


def _resident_bytes() -> int:
    pages = int(Path("/proc/self/statm").read_text(encoding="utf-8").split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def test_ten_thousand_inputs_through_three_stages_none_lost_or_reordered():
    split = split_graph(ember.parse(NETWORK), ["relu"], [0, 1])
    cfg = PipelineConfig.from_module(split)
    cores = len(os.sched_getaffinity(0))
    for stage, dev in zip(cfg.stages, ("cpu:0", "cpu:1", "cpu:0")):
        stage.dev = dev if cores >= 2 else "cpu:0"
    params = {
        "b": np.ones((1, WIDTH), np.float32),
        "w": np.full((1, WIDTH), 2, np.float32),
    }
    lib = build(cfg, params=params)
    assert len(lib.stages) == 3
    lanes = np.arange(WIDTH, dtype=np.float32)  # exact in float32: integers < 2**24

    def expected(index: int) -> np.ndarray:
        return (index + lanes + 1) * 2 - 1  # relu never clips: everything is >= 0

    with PipelineModule(lib, max_in_flight=MAX_IN_FLIGHT) as pipe:
        failures: list[BaseException] = []
        submitted: list[int] = []

        def produce() -> None:
            try:
                for index in range(COUNT):
                    pipe.set_input("x", (index + lanes)[None, :])
                    assert pipe.run(timeout=30) == index
                    submitted.append(index)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                failures.append(e)

        producer = threading.Thread(target=produce)
        producer.start()
        baseline = 0
        for index in range(COUNT):
            out = pipe.get_output(timeout=30)[0].numpy()[0]
            if not np.array_equal(out, expected(index)):
                raise AssertionError(
                    f"result {index} is wrong or out of order: starts {out[:3]}"
                )
            if index == 1000:
                baseline = _resident_bytes()  # after warm-up: allocator pools are full
        producer.join(30)
        assert not producer.is_alive(), "the producer is stuck after all results"
        assert not failures, failures
        assert len(submitted) == COUNT
        assert pipe.in_flight == 0
        assert 1 <= pipe.peak_in_flight <= MAX_IN_FLIGHT
    growth = _resident_bytes() - baseline
    assert growth < 24 * 2**20, (
        f"resident memory grew by {growth / 2**20:.1f} MiB over {COUNT} inputs"
    )
