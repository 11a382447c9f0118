"""Tests of the program generator in :mod:`ember.testing.strategies`.

The generator is only useful if what it produces is valid and varied: every
program verifies, inputs match the entry function's signature, the reference
interpreter gives finite results on finite inputs, IEEE special values
(NaN, ±inf, -0.0, denormals) occur in inputs unless ``finite=True``, every
graph op can be generated,
and the structures that passes trip over (values used several times,
broadcasting, several results, f16, constants, rank-0 tensors) all occur.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, target
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.vendor.pretty import pretty
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp

import ember
from ember.dialects import graph
from ember.dialects.graph import GRAPH_OPS, numpy_dtype
from ember.testing.strategies import (
    DTYPES,
    GraphProgram,
    arrays_for,
    graph_programs,
    tensor_types,
)

# Ops that accept integer tensors; the generator may give them i32 operands.
INT_CAPABLE = {
    "graph.negative",
    "graph.add",
    "graph.subtract",
    "graph.multiply",
    "graph.maximum",
    "graph.minimum",
    "graph.batch_flatten",
    "graph.reshape",
    "graph.transpose",
    "graph.concatenate",
    "graph.cast",
    "graph.constant",
}


def entry_function(program: GraphProgram) -> FuncOp:
    (func,) = [op for op in program.module.ops if isinstance(op, FuncOp)]
    assert func.sym_name.data == program.entry
    return func


def check_inputs_match_signature(program: GraphProgram, finite: bool = True) -> None:
    func = entry_function(program)
    arg_types = func.function_type.inputs.data
    assert len(program.inputs) == len(arg_types)
    for array, t in zip(program.inputs, arg_types):
        assert isinstance(t, TensorType)
        assert isinstance(array, np.ndarray)
        assert array.shape == tuple(t.get_shape())
        assert array.dtype == numpy_dtype(t.element_type)
        if finite:
            assert np.all(np.isfinite(array))


def check_outputs_finite(program: GraphProgram) -> list[np.ndarray]:
    outputs = ember.interpret(program.module, program.entry, *program.inputs)
    for i, out in enumerate(outputs):
        assert np.all(np.isfinite(out)), f"output {i} is not finite:\n{program!r}"
    return outputs


@given(graph_programs(dtypes=DTYPES, max_ops=10, finite=True))
def test_programs_verify_match_inputs_and_run_finite(program: GraphProgram) -> None:
    ember.verify_module(program.module)
    check_inputs_match_signature(program)
    outputs = check_outputs_finite(program)
    assert 1 <= len(outputs) <= 3
    for name in set(program.op_names):
        event(name)
    target(float(len(program.op_names)), label="ops in the program")


ALL_OP_NAMES = [op.name for op in GRAPH_OPS]


@pytest.mark.parametrize("op_name", ALL_OP_NAMES)
@settings(max_examples=6)
@given(data=st.data())
def test_each_op_is_generated(op_name: str, data: st.DataObject) -> None:
    dtypes = DTYPES if op_name in INT_CAPABLE else ("float32", "float16")
    program = data.draw(
        graph_programs(ops=[op_name], dtypes=dtypes, max_ops=3, finite=True)
    )
    names = [n for n in program.op_names if n != "func.return"]
    assert op_name in names
    # Only the requested op appears, apart from constants when allowed.
    assert set(names) == {op_name}
    ember.verify_module(program.module)
    check_inputs_match_signature(program)
    check_outputs_finite(program)


@given(graph_programs(ops=["conv2d", graph.ReluOp, "graph.add"], dtypes=("float16",)))
def test_ops_restrict_the_program_and_dtype_is_respected(program: GraphProgram) -> None:
    names = set(program.op_names) - {"func.return"}
    assert names <= {"graph.conv2d", "graph.relu", "graph.add"}
    assert all(a.dtype == np.float16 for a in program.inputs)


def _special_kinds(array: np.ndarray) -> set[str]:
    if array.dtype.kind != "f":
        return set()
    tiny = np.finfo(array.dtype).tiny  # the smallest normal number
    kinds = {
        "nan": np.isnan(array).any(),
        "+inf": (array == np.inf).any(),
        "-inf": (array == -np.inf).any(),
        "-0.0": ((array == 0) & np.signbit(array)).any(),
        "denormal": ((array != 0) & (np.abs(array) < tiny)).any(),
    }
    return {k for k, present in kinds.items() if present}


def test_special_values_occur_and_only_finite_inputs_give_finite_results() -> None:
    seen: set[str] = set()

    @FIND_SETTINGS
    @given(graph_programs(dtypes=DTYPES, max_ops=6))
    def sweep(program: GraphProgram) -> None:
        ember.verify_module(program.module)
        check_inputs_match_signature(program, finite=False)
        kinds = set().union(*map(_special_kinds, program.inputs))
        seen.update(kinds)
        outputs = ember.interpret(program.module, program.entry, *program.inputs)
        if all(np.isfinite(a).all() for a in program.inputs):
            assert all(np.isfinite(out).all() for out in outputs), repr(program)
        else:
            seen.add("special input")
        if not all(np.isfinite(out).all() for out in outputs):
            seen.add("special output")

    sweep()
    assert seen >= {
        "nan", "+inf", "-inf", "-0.0", "denormal", "special input", "special output"
    }


@settings(max_examples=20)
@given(data=st.data(), positive=st.booleans())
def test_arrays_for_special_values(data: st.DataObject, positive: bool) -> None:
    t = data.draw(tensor_types(dtypes=("float32", "float16"), min_rank=1, max_dim=4))
    low, high = (0.5, 2.0) if positive else (-2.0, 2.0)
    array = data.draw(arrays_for(t, low=low, high=high, special_values=True))
    outside = ~((array >= low) & (array <= high))
    if positive:  # only NaN and ±inf where the values must be positive
        assert 1 <= outside.sum() <= 3
        assert not np.isfinite(array[outside]).any()
    else:  # hypothesis' own edge cases may add -0.0 and denormals
        assert 1 <= (outside | (np.abs(array) < np.finfo(array.dtype).tiny)).sum()
        assert outside.sum() <= 3


# -- the structures passes care about occur -------------------------------------

FIND_SETTINGS = settings(
    max_examples=150, database=None, suppress_health_check=list(HealthCheck)
)


def uses(program: GraphProgram) -> dict[object, int]:
    counts: dict[object, int] = {}
    for op in entry_function(program).body.block.ops:
        for operand in op.operands:
            counts[operand] = counts.get(operand, 0) + 1
    return counts


def has_broadcast(program: GraphProgram) -> bool:
    return any(
        op.name in ("graph.add", "graph.subtract", "graph.multiply", "graph.divide")
        and op.operands[0].type != op.operands[1].type
        for op in entry_function(program).body.block.ops
    )


def has_scalar_operand(program: GraphProgram) -> bool:
    return any(
        isinstance(o.type, TensorType) and not o.type.get_shape()
        for op in entry_function(program).body.block.ops
        for o in op.operands
    )


STRUCTURES = {
    "a value with several consumers": lambda p: max(uses(p).values(), default=0) >= 2,
    "broadcasting between different shapes": has_broadcast,
    "a rank-0 operand": has_scalar_operand,
    "three results": lambda p: len(entry_function(p).function_type.outputs.data) == 3,
    "several arguments": lambda p: len(p.inputs) >= 3,
    "a constant": lambda p: "graph.constant" in p.op_names,
    "f16 and f32 in one program": lambda p: (
        {"f16", "f32"}
        <= {
            str(r.type.element_type)
            for op in entry_function(p).body.block.ops
            for r in op.results
        }
    ),
    "an i32 value": lambda p: any(
        str(r.type.element_type) == "i32"
        for op in entry_function(p).body.block.ops
        for r in op.results
    ),
    "eight ops": lambda p: len(p.op_names) >= 9,
}


def test_every_structure_occurs() -> None:
    # One deterministic sweep (the ci profile derandomizes) rather than a
    # ``find`` per structure: shrinking each found example costs seconds.
    seen: set[str] = set()

    @FIND_SETTINGS
    @given(graph_programs(dtypes=DTYPES))
    def sweep(program: GraphProgram) -> None:
        seen.update(d for d, holds in STRUCTURES.items() if holds(program))

    sweep()
    assert seen == set(STRUCTURES)


# -- the program object ------------------------------------------------------------


@given(graph_programs())
def test_program_is_fresh_and_remembers_its_source(program: GraphProgram) -> None:
    source = program.source
    assert program.text == source
    copy = program.fresh_module()
    assert copy is not program.module
    assert ember.to_text(copy) == source
    # Mutating the module (as a pass does) changes neither the source nor copies.
    func = entry_function(program)
    func.body.block.erase_op(func.body.block.last_op, safe_erase=False)
    assert program.text != source
    assert program.source == source
    assert ember.to_text(program.fresh_module()) == source
    assert source in repr(program)
    # hypothesis prints examples with its pretty printer: it must show the IR.
    assert "func.func @main" in pretty(program)


@given(data=st.data())
def test_two_draws_never_share_ir(data: st.DataObject) -> None:
    strategy = graph_programs()
    first, second = data.draw(strategy), data.draw(strategy)
    assert first.module is not second.module
    first_ops = set(map(id, first.module.walk()))
    assert first_ops.isdisjoint(map(id, second.module.walk()))


# -- low-level strategies -----------------------------------------------------------


@given(data=st.data())
def test_tensor_types_and_arrays_for(data: st.DataObject) -> None:
    t = data.draw(tensor_types(dtypes=DTYPES, min_rank=1, max_rank=3, max_dim=4))
    shape = tuple(t.get_shape())
    assert 1 <= len(shape) <= 3 and all(1 <= d <= 4 for d in shape)
    array = data.draw(arrays_for(t, low=-1.5, high=3.0))
    assert array.shape == shape
    assert array.dtype == numpy_dtype(t.element_type)
    assert np.all(array >= -1.5) and np.all(array <= 3.0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: graph_programs(ops=["no_such_op"]),
        lambda: graph_programs(ops=[]),
        lambda: graph_programs(dtypes=("float64",)),
        lambda: graph_programs(dtypes=("int32",), ops=["conv2d"]),
        lambda: graph_programs(min_ops=3, max_ops=2),
        lambda: graph_programs(max_outputs=0),
        lambda: tensor_types(min_rank=3, max_rank=2),
        lambda: arrays_for(graph.tensor_type([2]), low=1.0, high=0.0),
    ],
)
def test_bad_arguments_are_rejected(make) -> None:
    with pytest.raises(InvalidArgument):
        make()


@settings(max_examples=10)
@given(graph_programs(dtypes=("int32",), ops=["add", "transpose", "cast", "constant"]))
def test_int_only_programs(program: GraphProgram) -> None:
    # Special values are float values: integer programs stay finite by default.
    assert all(a.dtype == np.int32 for a in program.inputs)
    ember.verify_module(program.module)
    check_outputs_finite(program)
