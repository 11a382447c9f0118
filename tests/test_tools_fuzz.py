"""Fuzz the three tools with damaged copies of the example files.

(And of one more program, :data:`MANY_OPS`, with the ops they lack.)

Each example is mutated byte-wise (bytes replaced, deleted, inserted,
repeated) or token-wise (a number such as a dimension changed, a name or
punctuation replaced by another of the file, tokens deleted, repeated,
swapped, or replaced by one known to be awkward: a NUL, a BOM, a dynamic or
empty shape, an unsupported element type, a huge number…), and
``ember-opt``, ``ember-run --interpret`` and ``ember-translate`` run on it in
process through their ``main(argv)``.  The only allowed outcomes are
success (exit code 0) or a diagnostic (exit code 1, an ``error:`` on
stderr); an exception escaping ``main``, another exit code or a traceback
in the output fails the test.

The allocation limit is lowered so that a mutated shape cannot make a run
allocate gigabytes; the limit's diagnostic is one of the allowed outcomes.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import string
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.tools.ember_opt import main as opt_main
from ember.tools.ember_run import main as run_main
from ember.tools.ember_translate import main as translate_main

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.mlir"))

# Besides the examples: constants (list and splat), integers, and the
# layout and pooling ops the examples do not use.
MANY_OPS = """\
func.func @main(%x: tensor<1x4x6x6xf32>, %k: tensor<3xi32>) -> (tensor<1x10xf32>, tensor<4x3xi32>) {
  %w = graph.constant {value = dense<0.5> : tensor<4x4x3x3xf32>} : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %p = graph.max_pool2d %c {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
  %f = graph.batch_flatten %p : (tensor<1x4x3x3xf32>) -> tensor<1x36xf32>
  %d = graph.constant {value = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>} : tensor<1x4xf32>
  %r = graph.reshape %d : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %j = graph.concatenate %f, %r {axis = 1} : (tensor<1x36xf32>, tensor<1x4xf32>) -> tensor<1x40xf32>
  %m = graph.reshape %j : (tensor<1x40xf32>) -> tensor<4x10xf32>
  %t = graph.transpose %m : (tensor<4x10xf32>) -> tensor<10x4xf32>
  %s = graph.global_avg_pool2d %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x1x1xf32>
  %g = graph.batch_flatten %s : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %o = graph.dense %g, %t : (tensor<1x4xf32>, tensor<10x4xf32>) -> tensor<1x10xf32>
  %l = graph.clip %o {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x10xf32>
  %y = graph.softmax %l {axis = -1} : (tensor<1x10xf32>) -> tensor<1x10xf32>
  %b = graph.constant {value = dense<[[1], [2], [3], [4]]> : tensor<4x1xi32>} : tensor<4x1xi32>
  %z = graph.subtract %b, %k : (tensor<4x1xi32>, tensor<3xi32>) -> tensor<4x3xi32>
  func.return %y, %z : tensor<1x10xf32>, tensor<4x3xi32>
}
"""

SEEDS = [path.read_bytes() for path in EXAMPLES] + [MANY_OPS.encode()]

TOOLS: list[tuple[Callable[[Sequence[str] | None], int], tuple[str, ...]]] = [
    (opt_main, ()),
    (opt_main, ("-p", "canonicalize,cse,fold-constants,fuse-ops")),
    (run_main, ("--interpret", "--random-inputs")),
    (translate_main, ("--emit=kernel",)),
]

# Words without digits and digit runs apart, so that "1x784xf32" is six
# tokens and a mutation can change a dimension or f32 into f64.
TOKEN = re.compile(rb'\s+|"(?:[^"\\\n]|\\.)*"|[%@^#!]?[A-Za-z_][A-Za-z_.$]*|\d+|->|.')
NUMBERS = [b"0", b"1", b"2", b"3", b"4", b"8", b"16", b"64", b"100", b"1000", b"99999"]

AWKWARD_TOKENS = [
    b"{", b"}", b"(", b")", b"<", b">", b"[", b"]", b":", b",", b"->", b"=",
    b"%", b"@", b"0", b"-1", b"1.5", b"99999999999999999999", b"1e400",
    b"f64", b"i8", b"bf16", b"i1", b"index", b"tensor<?x4xf32>",
    b"tensor<0x3xf32>", b"tensor<f32>", b"dense<1.0>", b'dense<"0xFF">',
    b"graph.relu", b"graph.constant", b"func.return", b"func.call @main",
    b"\x00", b"\xef\xbb\xbf", b"\xff", b'"', b"//", b"loc(", b"#map", b"^bb0:",
    b"builtin.module {", b"{value = dense<2.0> : tensor<3xf32>}",
]


@st.composite
def byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    length = draw(st.integers(0, 16))
    kind = draw(st.sampled_from(["replace", "delete", "insert", "repeat"]))
    # Mostly text: raw bytes stop every tool at the input gate.
    new = draw(
        st.one_of(
            st.text(string.printable, min_size=1, max_size=4).map(str.encode),
            st.binary(min_size=1, max_size=4),
        )
    )
    if kind == "replace":
        return data[:at] + new + data[at + 1 :]
    if kind == "delete":
        return data[:at] + data[at + length :]
    if kind == "insert":
        return data[:at] + new + data[at:]
    return data[: at + length] + data[at : at + length] + data[at + length :]


@st.composite
def token_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    tokens = TOKEN.findall(data)
    at = draw(st.integers(0, len(tokens) - 1))
    # Mostly changes that keep the text parseable, so that the verifiers,
    # passes, lowering and execution get to see the damage.
    kinds = ["number"] * 4 + ["same-kind", "delete", "repeat", "swap", "awkward"]
    kind = draw(st.sampled_from(kinds))
    if kind == "number":
        numbers = [i for i, token in enumerate(tokens) if token.isdigit()]
        tokens[draw(st.sampled_from(numbers))] = draw(st.sampled_from(NUMBERS))
    elif kind == "same-kind":
        # A name for a name, punctuation for punctuation: text that still
        # mostly parses, so that verifiers, passes and lowering get to run.
        like = [t for t in tokens if t[:1].isalpha() == tokens[at][:1].isalpha()]
        tokens[at] = draw(st.sampled_from(like))
    elif kind == "delete":
        del tokens[at]
    elif kind == "repeat":
        tokens.insert(at, tokens[at])
    elif kind == "swap":
        other = draw(st.integers(0, len(tokens) - 1))
        tokens[at], tokens[other] = tokens[other], tokens[at]
    else:
        tokens[at] = draw(st.sampled_from(AWKWARD_TOKENS))
    return b"".join(tokens)


@st.composite
def damaged_examples(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        mutation = draw(st.sampled_from([token_mutation, token_mutation, byte_mutation]))
        data = draw(mutation(data))
    return data


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(damaged_examples())
def test_tools_succeed_or_diagnose_on_damaged_examples(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory, _allocation_limit("67108864"):
        path = Path(directory) / "damaged.mlir"
        path.write_bytes(data)
        for main, options in TOOLS:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([str(path), *options])
            output = out.getvalue() + err.getvalue()
            assert code in (0, 1), f"{main.__module__} {options}: exit code {code}"
            assert "Traceback" not in output, output[-3000:]
            if code == 1:
                assert "error:" in err.getvalue(), f"no diagnostic: {output[-3000:]}"


@contextlib.contextmanager
def _allocation_limit(limit: str):  # type: ignore[no-untyped-def]
    """``EMBER_MAX_ALLOC_BYTES=limit`` while the tools run (64 MiB here)."""
    saved = os.environ.get("EMBER_MAX_ALLOC_BYTES")
    os.environ["EMBER_MAX_ALLOC_BYTES"] = limit
    try:
        yield
    finally:
        if saved is None:
            del os.environ["EMBER_MAX_ALLOC_BYTES"]
        else:
            os.environ["EMBER_MAX_ALLOC_BYTES"] = saved
