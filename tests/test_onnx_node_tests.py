"""ONNX's node conformance tests against ember, through its ONNX backend.

``onnx.backend.test.case.node.collect_testcases()`` generates ~1,900 small
models with inputs and expected outputs.  Each runs through
:class:`ember.frontends.onnx_backend.EmberBackend` (reference interpreter
target) and is compared as ONNX's own runner does (``rtol``/``atol`` of the
case, same dtype and shape).

Every case has one expected outcome:

* **pass** — the numbers match;
* **expected failure** — ember reports a clean :class:`ember.OnnxImportError`
  at import (never a wrong answer), for a reason in :func:`expected_failure`:
  an operator ember does not convert (non-CNN operators: sequences, RNNs,
  string ops, quantisation, …), a data type ember does not have (float64,
  bool, int8, bfloat16, float8, strings, …), or one of the named cases in
  :data:`KNOWN_FAILURES` with its reason.

A case that fails without being expected to, or that passes while listed
as expected to fail, fails the test: the list stays exact.

CI runs a representative subset (every case of the CNN operators, and every
7th case of the rest); ``EMBER_ONNX_FULL=1`` runs them all.  Run this file as
a script for a summary of the whole set::

    EMBER_ONNX_FULL=1 python tests/test_onnx_node_tests.py
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from ember.errors import OnnxImportError  # noqa: E402
from ember.frontends.onnx import IMPORT_TIME_INPUTS, converters_table  # noqa: E402
from ember.frontends.onnx_backend import EmberBackend  # noqa: E402

FULL = os.environ.get("EMBER_ONNX_FULL") == "1"
SUBSET_STRIDE = 7

# Element types of ember tensors (onnx.TensorProto numbering).
EMBER_ELEM_TYPES = {1: "FLOAT", 6: "INT32", 7: "INT64", 10: "FLOAT16"}

CNN_OPERATORS = frozenset({
    "Conv", "ConvTranspose", "BatchNormalization", "Gemm", "MatMul", "Add", "Sub",
    "Mul", "Div", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "HardSigmoid",
    "HardSwish", "Sigmoid", "Tanh", "Clip", "Softmax", "LogSoftmax", "MaxPool",
    "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LRN", "Concat", "Reshape",
    "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Pad", "Slice", "Split",
    "Gather", "Resize", "Upsample", "ReduceMean", "ReduceSum", "ReduceMax",
    "Identity", "Dropout", "Constant", "ConstantOfShape", "Shape", "Cast",
})
"""The operators the ONNX import must cover (issue 14)."""

_THREE_D = "3-D windows (ember's convolutions and pools are 1-D and 2-D)"

KNOWN_FAILURES: dict[str, str] = {
    "test_averagepool_3d_default": _THREE_D,
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False": _THREE_D,
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True": _THREE_D,
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False": _THREE_D,
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True": _THREE_D,
    "test_averagepool_3d_dilations_small": _THREE_D,
    "test_maxpool_3d_default": _THREE_D,
    "test_maxpool_3d_dilations": _THREE_D,
    "test_maxpool_3d_dilations_use_ref_impl": _THREE_D,
    "test_maxpool_3d_dilations_use_ref_impl_large": _THREE_D,
    "test_convtranspose_3d": _THREE_D,
    "test_maxpool_with_argmax_2d_precomputed_pads": "MaxPool's argmax output (Indices)",
    "test_maxpool_with_argmax_2d_precomputed_strides": "MaxPool's argmax output (Indices)",
    "test_batchnorm_epsilon_training_mode": "training-mode BatchNormalization",
    "test_batchnorm_example_training_mode": "training-mode BatchNormalization",
    "test_div_int32_trunc": "integer division (graph.divide is for floats)",
    "test_rotary_embedding_no_position_ids_expanded": "empty tensors (a Split part of size 0)",
    "test_rotary_embedding_no_position_ids_interleaved_expanded": "empty tensors (a Split part of size 0)",
}
"""Cases of converted operators with supported types that ember rejects,
each with the reason (an attribute value or input form it does not convert)."""


@dataclass(frozen=True)
class Outcome:
    passed: bool
    detail: str = ""
    clean: bool = True  # a failure that is an OnnxImportError at import


def _elem_types(case: Any) -> set[int]:
    types: set[int] = set()
    graph = case.model.graph
    for value in [*graph.input, *graph.output]:
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            types.add(-1)  # sequences, maps, optionals
        else:
            types.add(value.type.tensor_type.elem_type)
    return types


def expected_failure(case: Any) -> str | None:
    """Why ``case`` is expected to fail, or ``None`` if it must pass."""
    if case.name in KNOWN_FAILURES:
        return KNOWN_FAILURES[case.name]
    opset = next(
        (o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), 0
    )
    table = converters_table()
    graph = case.model.graph
    # What the importer folds: nodes on constants only (and Shape/Size of a
    # static tensor) need no converter.
    constants = {init.name for init in graph.initializer} | {""}
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            return f"operator domain {node.domain} (not the default ONNX domain)"
        if node.op_type in ("Shape", "Size") or set(node.input) <= constants:
            constants.update(node.output)
            continue
        ranges = table.get(node.op_type)
        if ranges is None:
            return f"operator {node.op_type} is not converted (not a CNN operator)"
        if not any(a <= opset <= b for a, b in ranges):
            return f"operator {node.op_type} is not converted at opset {opset}"
        for index in IMPORT_TIME_INPUTS.get(node.op_type, ()):
            if index < len(node.input) and node.input[index] not in constants:
                return (
                    f"input {index} of {node.op_type} is fed at run time "
                    "(ember's shapes and attributes are fixed at import)"
                )
    unsupported = _elem_types(case) - set(EMBER_ELEM_TYPES)
    if unsupported:
        names = sorted(
            "non-tensor" if t == -1 else onnx.TensorProto.DataType.Name(t) for t in unsupported
        )
        return f"data type {', '.join(names)} (ember has float32, float16, int32, int64)"
    return None


def _as_array(value: Any) -> np.ndarray:
    """Case data is numpy arrays, or TensorProtos for types numpy lacks."""
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value)


def run_case(case: Any) -> Outcome:
    """Run ``case`` through ember's backend and compare as ONNX's runner does."""
    try:
        rep = EmberBackend.prepare(case.model, "CPU")
    except OnnxImportError as error:
        return Outcome(False, f"OnnxImportError: {error}", clean=True)
    except Exception as error:  # any other failure at import or build is a bug
        return Outcome(False, f"{type(error).__name__} at build: {error}", clean=False)
    for inputs, expected in case.data_sets:
        inputs = [_as_array(value) for value in inputs]
        expected = [_as_array(value) for value in expected]
        try:
            outputs = rep.run(inputs)
        except Exception as error:
            return Outcome(False, f"{type(error).__name__} at run: {error}", clean=False)
        if len(outputs) != len(expected):
            return Outcome(False, f"{len(outputs)} outputs, expected {len(expected)}", clean=False)
        for index, (got, want) in enumerate(zip(outputs, expected)):
            want = np.asarray(want)
            if got.dtype != want.dtype or got.shape != want.shape:
                return Outcome(
                    False,
                    f"output {index}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}",
                    clean=False,
                )
            try:
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
            except AssertionError as error:
                first = str(error).strip().splitlines()
                return Outcome(False, f"output {index} differs: {' '.join(first[:4])}", clean=False)
    return Outcome(True)


@cache
def all_cases() -> list[Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(collect_testcases(), key=lambda c: c.name)


def _op_types(case: Any) -> set[str]:
    return {node.op_type for node in case.model.graph.node}


def selected_cases() -> list[Any]:
    """Every case in full mode; else CNN operators' cases and every k-th other."""
    cases = all_cases()
    if FULL:
        return cases
    return [
        case
        for index, case in enumerate(cases)
        if _op_types(case) & CNN_OPERATORS or index % SUBSET_STRIDE == 0
    ]


def check_case(case: Any) -> None:
    reason = expected_failure(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            outcome = run_case(case)
    if reason is None:
        assert outcome.passed, f"{case.name}: {outcome.detail}"
    else:
        assert not outcome.passed, f"{case.name} passes but is listed as failing: {reason}"
        assert outcome.clean, (
            f"{case.name} (expected to fail: {reason}) must fail with an import error, "
            f"not: {outcome.detail}"
        )


def _case_ids() -> list[str]:
    return [case.name for case in selected_cases()]


@pytest.fixture(scope="module")
def cases_by_name() -> dict[str, Any]:
    return {case.name: case for case in selected_cases()}


def pytest_generate_tests(metafunc: Any) -> None:  # pragma: no cover - pytest hook
    if "node_case" in metafunc.fixturenames:
        metafunc.parametrize("node_case", _case_ids())


def test_node_case(node_case: str, cases_by_name: dict[str, Any]) -> None:
    check_case(cases_by_name[node_case])


def _reason_class(reason: str) -> str:
    if reason.startswith("data type"):
        return "data type ember does not have"
    if reason.startswith("operator domain"):
        return "operator of another domain"
    if reason.startswith("operator") and "not converted (" in reason:
        return "operator not converted (not a CNN operator)"
    if reason.startswith("operator"):
        return "operator not converted at this opset"
    if "fed at run time" in reason:
        return "shape/attribute input fed at run time"
    return "named case: " + reason


def summary() -> int:
    """Run the selected cases and print counts (the numbers in docs/onnx.md)."""
    counts: Counter[str] = Counter()
    problems = []
    reasons: Counter[str] = Counter()
    for case in selected_cases():
        reason = expected_failure(case)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outcome = run_case(case)
        if reason is None and outcome.passed:
            counts["passed"] += 1
        elif reason is not None and not outcome.passed and outcome.clean:
            counts["expected failure"] += 1
            reasons[_reason_class(reason)] += 1
        else:
            counts["unexpected"] += 1
            problems.append(f"{case.name}: expected {'pass' if reason is None else 'clean failure'}; {outcome.detail[:300]}")
    for line in problems:
        print(line)
    print(dict(counts), "of", sum(counts.values()))
    for reason, n in reasons.most_common(40):
        print(f"  {n:5d}  {reason}")
    return 1 if counts["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(summary())
