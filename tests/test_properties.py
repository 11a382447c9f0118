"""Property tests over random graph programs: text round trips and pass soundness.

Two families, as in xDSL's and MLIR's own test suites, run on programs from
:func:`ember.testing.strategies.graph_programs`:

- **Round trip**: printing, parsing and printing again gives the same text,
  in custom and in generic form, and the re-parsed module computes bitwise
  the same results (so constants survive the trip through decimal text).
- **Soundness**: ``canonicalize``, ``cse`` and ``dce`` (alone and as one
  pipeline) leave IR that verifies and that the reference interpreter
  evaluates to the same results as before.  The comparison tolerance is
  per dtype but tight: these passes only remove work or merge equal values,
  none reassociates arithmetic, so results should match to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

import ember
from ember.context import make_context
from ember.testing import assert_same_values
from ember.testing.strategies import GraphProgram, graph_programs

PROGRAMS = graph_programs(dtypes=("float32", "float16", "int32"))

# (rtol, atol) by result dtype.  Ints must match exactly.
TOLERANCES = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (1e-2, 1e-3),
}


def assert_same_results(
    before: Sequence[np.ndarray], after: Sequence[np.ndarray], program: GraphProgram
) -> None:
    assert len(after) == len(before)
    for i, (b, a) in enumerate(zip(before, after)):
        rtol, atol = TOLERANCES.get(b.dtype, (0.0, 0.0))
        where = f"result {i} of\n{program.source}"
        assert_same_values(a, b, rtol=rtol, atol=atol, what=where)


# -- round trip ----------------------------------------------------------------------


@given(PROGRAMS)
def test_custom_text_round_trips(program: GraphProgram) -> None:
    text = ember.to_text(program.module)
    reparsed = ember.parse(text)
    assert ember.to_text(reparsed) == text
    before = ember.interpret(program.module, program.entry, *program.inputs)
    after = ember.interpret(reparsed, program.entry, *program.inputs)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


@given(PROGRAMS)
def test_generic_text_round_trips(program: GraphProgram) -> None:
    generic = ember.to_text(program.module, generic=True)
    reparsed = ember.parse(generic)
    assert ember.to_text(reparsed, generic=True) == generic
    # Both syntaxes describe the same module.
    assert ember.to_text(reparsed) == ember.to_text(program.module)


# -- soundness of the generic cleanup passes ----------------------------------------

PIPELINES: dict[str, tuple[ModulePass, ...]] = {
    "canonicalize": (CanonicalizePass(),),
    "cse": (CommonSubexpressionElimination(),),
    "dce": (DeadCodeElimination(),),
    "canonicalize,cse,dce": (
        CanonicalizePass(),
        CommonSubexpressionElimination(),
        DeadCodeElimination(),
    ),
}


@pytest.mark.parametrize("pipeline", list(PIPELINES))
@given(program=PROGRAMS)
def test_cleanup_passes_preserve_semantics(
    pipeline: str, program: GraphProgram
) -> None:
    before = ember.interpret(program.module, program.entry, *program.inputs)
    ctx = make_context()
    for module_pass in PIPELINES[pipeline]:
        module_pass.apply(ctx, program.module)
    ember.verify_module(program.module)
    after = ember.interpret(program.module, program.entry, *program.inputs)
    assert_same_results(before, after, program)
    # What the passes left must still survive a round trip through text.
    text = program.text
    assert ember.to_text(ember.parse(text)) == text


# The ops that have canonicalization patterns (and constants, for ``x * 1``).
PATTERN_OPS = [
    "relu", "negative", "clip", "cast", "add", "subtract", "multiply", "divide",
    "reshape", "transpose", "constant",
]  # fmt: skip


# Small programs run in milliseconds: take more of them than the profile's
# default, since each pattern needs a specific pair of ops to fire.
@settings(max_examples=5 * settings.default.max_examples)
@given(graph_programs(ops=PATTERN_OPS, dtypes=("float32", "float16", "int32")))
def test_canonicalize_is_sound_where_patterns_fire(program: GraphProgram) -> None:
    """Programs made only of ops with patterns, so that ``x * 1``,
    ``transpose(transpose(x))`` or ``clip(clip(x))`` are common."""
    before = ember.interpret(program.module, program.entry, *program.inputs)
    CanonicalizePass().apply(make_context(), program.module)
    ember.verify_module(program.module)
    after = ember.interpret(program.module, program.entry, *program.inputs)
    assert_same_results(before, after, program)
