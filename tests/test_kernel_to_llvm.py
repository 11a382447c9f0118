"""Kernels compiled to native code (lower-kernel-to-llvm + JIT) against numpy.

The seed-003 kernels are read from the kernel dialect's round-trip file and
the lowering file's kernels from its filecheck test, so the compiled code is
the code whose text lit checks.  Each compiled result is also compared with
the reference interpreter where the shapes are small enough to interpret.
"""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import ember
from ember.backends.cpu import compile_kernels, compile_llvm
from ember.errors import PassError, RuntimeFailure
from ember.interp.kernel_impls import run_kernel
from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm
from ember.runtime.jit import JitModule, load_object

FILECHECK = Path(__file__).parent / "filecheck"
SEED_FILE = FILECHECK / "dialects" / "kernel" / "seed-003.mlir"
LOWERING_FILE = FILECHECK / "lowering" / "kernel-to-llvm.mlir"


def _random(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def matmul_kernel(m: int, n: int, k: int) -> str:
    """C = A @ B with loop order i, k, j: the inner loop walks rows of B and C
    contiguously, so LLVM vectorises it."""
    return f"""
    func.func @matmul(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>) attributes {{kernel.kernel}} {{
      kernel.for %i = 0 to {m} {{
        kernel.for %k = 0 to {k} {{
          kernel.for %j = 0 to {n} vectorized {{
            kernel.block "C" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {{
              kernel.init {{
                %zero = arith.constant 0.0 : f32
                memref.store %zero, %C[%vi, %vj] : memref<{m}x{n}xf32>
              }}
              %c = memref.load %C[%vi, %vj] : memref<{m}x{n}xf32>
              %a = memref.load %A[%vi, %vk] : memref<{m}x{k}xf32>
              %b = memref.load %B[%vk, %vj] : memref<{k}x{n}xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %c, %p : f32
              memref.store %s, %C[%vi, %vj] : memref<{m}x{n}xf32>
            }}
          }}
        }}
      }}
      func.return
    }}
    """


@pytest.fixture(scope="module")
def seed_module() -> ModuleOp:
    return ember.parse(SEED_FILE.read_text(encoding="utf-8"), name=str(SEED_FILE))


@pytest.fixture(scope="module")
def seed_jit(seed_module: ModuleOp) -> JitModule:
    return compile_kernels(seed_module)


# --------------------------------------------------------------------------
# Numerics
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "units", "inputs"), [("linear0", 128, 784), ("linear1", 10, 128)])
def test_seed_linear_matches_numpy(seed_jit: JitModule, name: str, units: int, inputs: int) -> None:
    x, w, b = _random((1, inputs), 1), _random((units, inputs), 2), _random((units,), 3)
    z = np.full((1, units), np.nan, np.float32)
    seed_jit.run(name, x, w, b, z)
    np.testing.assert_allclose(z, x @ w.T + b, rtol=1e-5, atol=1e-4)


def test_seed_relu_and_tiled_match_interpreter(seed_module: ModuleOp, seed_jit: JitModule) -> None:
    x = _random((1, 128), 4)
    compiled, interpreted = np.zeros_like(x), np.zeros_like(x)
    seed_jit.run("relu0", x, compiled)
    run_kernel(seed_module, "relu0", x, interpreted)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, np.maximum(x, 0))

    a = _random((64,), 5)
    c = np.zeros(64, np.float32)
    seed_jit.run("tiled", a, c)
    np.testing.assert_allclose(c, np.exp(a), rtol=1e-6)


def test_mlp_of_seed_003(seed_jit: JitModule) -> None:
    """The three kernels chained as seed 003's ``main`` chains them."""
    data, w0, b0 = _random((1, 784), 6), _random((128, 784), 7), _random((128,), 8)
    w1, b1 = _random((10, 128), 9), _random((10,), 10)
    lv0, lv1, out = np.empty((1, 128), np.float32), np.empty((1, 128), np.float32), np.empty((1, 10), np.float32)
    seed_jit.run("linear0", data, w0, b0, lv0)
    seed_jit.run("relu0", lv0, lv1)
    seed_jit.run("linear1", lv1, w1, b1, out)
    expected = np.maximum(data @ w0.T + b0, 0) @ w1.T + b1
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)


def test_matmul_64_matches_numpy_and_is_vectorised() -> None:
    jit = compile_kernels(ember.parse(matmul_kernel(64, 64, 64)))
    a, b = _random((64, 64), 11), _random((64, 64), 12)
    c = np.full((64, 64), 5.0, np.float32)  # the init must overwrite it
    jit.run("matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    # Vectorised under the IEEE-safe flags alone (reassoc, contract: no nnan/ninf).
    assert re.search(r"fmul reassoc contract <\d+ x float>", jit.llvm_ir)
    features = llvmlite.binding.get_host_cpu_features()
    if features.get("fma") and features.get("avx"):
        # ``contract`` lets the backend fuse the multiply-add.
        assert re.search(r"vfmadd\d+ps\s+%[yz]mm", jit.assembly())


@settings(max_examples=8)
@given(m=st.integers(1, 5), n=st.integers(1, 37), k=st.integers(1, 9))
def test_matmul_any_shape_matches_interpreter(m: int, n: int, k: int) -> None:
    module = ember.parse(matmul_kernel(m, n, k))
    a, b = _random((m, k), 13), _random((k, n), 14)
    compiled, interpreted = np.zeros((m, n), np.float32), np.zeros((m, n), np.float32)
    compile_kernels(module).run("matmul", a, b, compiled)
    run_kernel(module, "matmul", a, b, interpreted)
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-5, atol=1e-5)


def test_lowering_file_kernels_run() -> None:
    """Stack temporary, strided loop, init, tanh (libm) and a malloc'd buffer."""
    module = ember.parse(LOWERING_FILE.read_text(encoding="utf-8"), name=str(LOWERING_FILE))
    jit = compile_kernels(module)
    a = _random((4, 8), 15)
    s = np.zeros(4, np.float32)
    jit.run("rowsum", a, s)
    np.testing.assert_allclose(s, np.tanh(a[:, ::2].sum(axis=1)), rtol=1e-5, atol=1e-6)
    expected = np.zeros(4, np.float32)
    run_kernel(module, "rowsum", a, expected)
    np.testing.assert_allclose(s, expected, rtol=1e-5, atol=1e-6)
    jit.run("big", np.zeros((256, 256), np.float32))  # malloc + free, no crash


# --------------------------------------------------------------------------
# Compiled code as data: object files, assembly
# --------------------------------------------------------------------------


def test_object_file_loads_without_recompiling(seed_jit: JitModule) -> None:
    obj = seed_jit.emit_object()
    assert obj[:4] == b"\x7fELF"
    loaded = load_object(obj)
    x = _random((1, 128), 16)
    y = np.zeros_like(x)
    loaded.run("relu0", x, y)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_code_is_generated_once_and_is_what_mcjit_would_make(
    seed_jit: JitModule, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compile_llvm links the object it exports: MCJIT's own code generation
    from the same IR gives the same bytes, and exporting generates nothing."""
    from ember.runtime.jit import _llvm, _resolve_runtime_symbols, host_target_machine

    llvm = _llvm()
    _resolve_runtime_symbols()
    made: list[bytes] = []
    engine = llvm.create_mcjit_compiler(
        llvm.parse_assembly(seed_jit.llvm_ir), host_target_machine()
    )
    engine.set_object_cache(lambda module, data: made.append(data), lambda module: None)
    engine.finalize_object()

    def no_codegen(*args: object) -> bytes:
        raise AssertionError("code generated a second time")

    monkeypatch.setattr(llvmlite.binding.TargetMachine, "emit_object", no_codegen)
    assert made == [seed_jit.emit_object()]


def test_assembly_defines_every_kernel(seed_jit: JitModule) -> None:
    asm = seed_jit.assembly()
    for name in ("linear0", "relu0", "linear1", "tiled"):
        assert re.search(rf"^{name}:", asm, re.MULTILINE)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_unsupported_op_fails_before_changing_the_module() -> None:
    module = ember.parse(
        """
        func.func @ok(%Y: memref<4xf32>) attributes {kernel.kernel} {
          func.return
        }
        func.func @bad(%X: memref<4xf32>, %Y: memref<4xi32>) attributes {kernel.kernel} {
          kernel.for %i = 0 to 4 {
            kernel.block "B" (%vi = spatial %i) {
              %x = memref.load %X[%vi] : memref<4xf32>
              %n = arith.fptoui %x : f32 to i32
              memref.store %n, %Y[%vi] : memref<4xi32>
            }
          }
          func.return
        }
        """
    )
    before = ember.to_text(module)
    with pytest.raises(PassError, match=r"cannot lower arith.fptoui in kernel @bad: no lowering"):
        lower_kernels_to_llvm(module)
    assert ember.to_text(module) == before


def test_a_strided_memref_is_named_with_its_kernel() -> None:
    module = ember.parse(
        """
        func.func @strided(%X: memref<4xf32, strided<[2]>>) attributes {kernel.kernel} {
          func.return
        }
        """
    )
    with pytest.raises(
        PassError,
        match=r"kernel @strided: argument of type memref<4xf32, strided<\[2\]>>: "
        r"only statically shaped row-major memrefs are supported",
    ):
        lower_kernels_to_llvm(module)


def test_gpu_loops_are_rejected() -> None:
    module = ember.parse(
        """
        func.func @g(%Y: memref<4xf32>) attributes {kernel.kernel} {
          kernel.for %t = 0 to 4 gpu.thread.x {
          }
          func.return
        }
        """
    )
    with pytest.raises(PassError, match="bound to gpu.thread.x needs the CUDA backend"):
        lower_kernels_to_llvm(module)


def test_jit_rejects_unlowered_ops_and_strided_arrays(seed_module: ModuleOp, seed_jit: JitModule) -> None:
    with pytest.raises(RuntimeFailure, match="cannot compile func.func to native code"):
        compile_llvm(seed_module)
    x = np.zeros((1, 256), np.float32)[:, ::2]
    with pytest.raises(RuntimeFailure, match="argument #0 must be a C-contiguous numpy array"):
        seed_jit.run("relu0", x, np.zeros((1, 128), np.float32))
    with pytest.raises(RuntimeFailure, match="no function @nope"):
        seed_jit.address("nope")


def test_each_constant_is_made_once_per_function() -> None:
    """A function's constants are made once, in its entry block (matmul's
    loop bounds and strides repeat), and -0.0 stays apart from 0.0."""
    from xdsl.dialects import llvm

    text = matmul_kernel(8, 16, 8).replace(
        "%s = arith.addf %c, %p : f32",
        "%n = arith.constant -0.0 : f32\n"
        "              %q = arith.addf %p, %n : f32\n"
        "              %s = arith.addf %c, %q : f32",
    )
    module = ember.parse(text)
    lower_kernels_to_llvm(module)
    for function in module.ops:
        if not isinstance(function, llvm.FuncOp) or not function.body.blocks:
            continue
        constants = [op for op in function.body.walk() if isinstance(op, llvm.ConstantOp)]
        values = [(op.result.type, str(op.value)) for op in constants]
        assert len(values) == len(set(values)), values
        assert all(op.parent_block() is function.body.blocks.first for op in constants)
        assert {"0.000000e+00 : f32", "-0.000000e+00 : f32"} <= {v for _, v in values}
    jit = compile_llvm(module)
    a, b, c = _random((8, 8)), _random((8, 16), 1), np.empty((8, 16), np.float32)
    jit.run("matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_constant_indices_fold_into_the_address() -> None:
    """``Y[1, i]`` of a 2x4 buffer is ``Y + (i + 4)``: the constant index
    becomes part of one constant offset, not a multiply and an add of its own."""
    from xdsl.dialects import llvm

    module = ember.parse(
        """
        func.func @row1(%X: memref<4xf32>, %Y: memref<2x4xf32>) attributes {kernel.kernel} {
          kernel.for %i = 0 to 4 {
            kernel.block "Y" (%vi = spatial %i) {
              %one = arith.constant 1 : index
              %x = memref.load %X[%vi] : memref<4xf32>
              memref.store %x, %Y[%one, %vi] : memref<2x4xf32>
            }
          }
          func.return
        }
        """
    )
    lower_kernels_to_llvm(module)
    (function,) = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks]
    assert not [op for op in function.body.walk() if isinstance(op, llvm.MulOp)]
    (store,) = [op for op in function.body.walk() if isinstance(op, llvm.StoreOp)]
    address = store.operands[1].owner
    assert isinstance(address, llvm.GEPOp)
    offset = address.ssa_indices[0].owner
    assert isinstance(offset, llvm.AddOp)
    constant = offset.operands[1].owner
    assert isinstance(constant, llvm.ConstantOp) and constant.value.value.data == 4
    x, y = _random((4,)), np.zeros((2, 4), np.float32)
    compile_llvm(module).run("row1", x, y)
    np.testing.assert_array_equal(y, np.stack([np.zeros(4, np.float32), x]))


def test_access_and_overflow_attributes_are_made_once() -> None:
    """Every access's ``getelementptr`` and every ``nsw`` add and multiply
    share attributes made once (xDSL makes and verifies them anew for each
    op it constructs: most of the lowering's time on ResNet-18), and the
    address is the op xDSL's own constructor builds."""
    from xdsl.dialects import llvm

    module = ember.parse(matmul_kernel(8, 16, 8))
    lower_kernels_to_llvm(module)
    (function,) = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks]
    addresses = [op for op in function.body.walk() if isinstance(op, llvm.GEPOp)]
    flags = [
        op.properties["overflowFlags"]
        for op in function.body.walk()
        if isinstance(op, llvm.AddOp | llvm.MulOp)
    ]
    assert len(addresses) > 1 and len(flags) > 1
    for key in ("rawConstantIndices", "noWrapFlags", "inbounds"):
        assert all(op.properties[key] is addresses[0].properties[key] for op in addresses), key
    assert all(flag is flags[0] for flag in flags)
    address = addresses[0]
    address.verify()
    reference = llvm.GEPOp(
        address.ptr,
        [llvm.GEP_USE_SSA_VAL],
        address.elem_type,
        ssa_indices=list(address.ssa_indices),
        inbounds=True,
    )
    assert reference.is_structurally_equivalent(address)


def test_kernels_with_a_negligible_share_of_the_work_are_compiled_for_size() -> None:
    """A kernel doing less than ``cold_work_fraction`` of the program's work
    gets LLVM's ``optsize`` (no vectorising and unrolling it cannot repay),
    as do the functions outlined from it; the others keep full O3, and a
    kernel alone in its program is never cold."""
    from xdsl.dialects import llvm

    from ember.backends.cpu import optimize, translate
    from ember.lowering import COLD_WORK_FRACTION
    from ember.lowering.kernel_to_llvm import kernel_work, set_vector_width

    def attributes(module: ModuleOp) -> dict[str, set[str]]:
        """Each defined function's attributes after O3 (names and keys)."""
        set_vector_width(module, 256)
        parsed = llvmlite.binding.parse_assembly(optimize(translate(module)))
        return {
            f.name: {
                word.split("=")[0]
                for attribute in f.attributes
                for word in attribute.decode().split()
            }
            for f in parsed.functions
            if not f.is_declaration
        }

    tiny = matmul_kernel(1, 8, 1).replace("@matmul", "@tiny")
    module = ember.parse(matmul_kernel(64, 64, 64) + tiny)
    works = {f.sym_name.data: kernel_work(f) for f in module.ops if hasattr(f, "sym_name")}
    assert works["tiny"] < COLD_WORK_FRACTION * sum(works.values())
    lower_kernels_to_llvm(module, cold_work_fraction=COLD_WORK_FRACTION)
    passthrough = {
        op.sym_name.data: op.passthrough
        for op in module.ops
        if isinstance(op, llvm.FuncOp) and op.body.blocks
    }
    assert str(passthrough["tiny"]) == '["optsize"]' and passthrough["matmul"] is None
    compiled = attributes(module)
    assert "optsize" in compiled["tiny"] and "optsize" not in compiled["matmul"]
    assert '"prefer-vector-width"' in compiled["tiny"]

    alone = ember.parse(tiny)
    lower_kernels_to_llvm(alone, cold_work_fraction=COLD_WORK_FRACTION)
    assert "optsize" not in attributes(alone)["tiny"]


def test_ops_made_directly_are_the_ops_their_constructors_make() -> None:
    """The lowering makes its most common ops with ``_made`` (no argument
    lists rebuilt and verified for each): each must print as the op its
    constructor makes."""
    from xdsl.dialects import llvm
    from xdsl.dialects.builtin import IntegerAttr, f32, i1, i64
    from xdsl.ir import Block

    from ember.lowering import kernel_to_llvm as k

    block = Block(arg_types=[i64, i64, llvm.LLVMPointerType(), f32, f32])
    x, y, pointer, a, b = block.args
    slt = llvm.ICmpPredicateFlag.SLT
    pairs = [
        (llvm.AddOp(x, y, overflow=k.NSW), k._made(llvm.AddOp, [x, y], [i64], k._NSW)),
        (llvm.MulOp(x, y, overflow=k.NSW), k._made(llvm.MulOp, [x, y], [i64], k._NSW)),
        (llvm.SDivOp(x, y), k._made(llvm.SDivOp, [x, y], [i64], {})),
        (
            llvm.FAddOp(a, b, k.IEEE_SAFE),
            k._made(llvm.FAddOp, [a, b], [f32], {"fastmathFlags": k.IEEE_SAFE}),
        ),
        (llvm.LoadOp(pointer, f32), k._made(llvm.LoadOp, [pointer], [f32], k._NOT_ATOMIC)),
        (llvm.StoreOp(a, pointer), k._made(llvm.StoreOp, [a, pointer], [], k._NOT_ATOMIC)),
        (
            llvm.ICmpOp(x, y, k._ICMP_PREDICATES[slt]),
            k._made(llvm.ICmpOp, [x, y], [i1], {"predicate": k._ICMP_PREDICATES[slt]}),
        ),
        (
            llvm.ConstantOp(IntegerAttr(7, i64), i64),
            k._made(llvm.ConstantOp, [], [i64], {"value": IntegerAttr(7, i64)}),
        ),
    ]
    for constructed, made in pairs:
        block.add_ops([constructed, made])
        assert str(made) == str(constructed)
        made.verify()


def test_an_unrolled_loop_is_unrolled_fully_by_llvm() -> None:
    """A kernel loop of kind ``unrolled`` marks its latch, ember's printer
    writes ``llvm.loop.unroll.full`` for it, and LLVM unrolls it whole (a
    loop of 400 ``exp``s, which LLVM otherwise vectorises and keeps a
    loop); the other loops' latches carry nothing."""
    from xdsl.dialects import llvm

    from ember.backends.cpu import optimize, translate
    from ember.lowering.kernel_to_llvm import UNROLL_ATTRIBUTE

    def kernel(kind: str) -> str:
        return f"""
        func.func @exps(%x: memref<400xf32>, %y: memref<400xf32>) attributes {{kernel.kernel}} {{
          kernel.for %i = 0 to 400 {kind} {{
            kernel.block "e" (%vi = spatial %i) {{
              %a = memref.load %x[%vi] : memref<400xf32>
              %e = math.exp %a : f32
              memref.store %e, %y[%vi] : memref<400xf32>
            }}
          }}
          func.return
        }}"""

    shapes = {}
    for kind in ("", "unrolled"):
        module = ember.parse(kernel(kind))
        lower_kernels_to_llvm(module)
        marks = [op for op in module.walk() if UNROLL_ATTRIBUTE in op.attributes]
        assert [type(op) for op in marks] == ([llvm.CondBrOp] if kind else [])
        text = optimize(translate(module))
        shapes[kind] = (len(re.findall(r"call .*@llvm\.exp", text)), "phi i64" in text)
        jit = compile_llvm(module)
        x, y = _random((400,)), np.empty(400, np.float32)
        jit.run("exps", x, y)
        np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
    assert shapes["unrolled"] == (400, False)
    assert shapes[""][0] < 400 and shapes[""][1]  # a loop of vectors


def _two_kernels(first_scale: str, second_scale: str, epilogue: str = "") -> str:
    """Kernels @a and @b: the same parallel loop ``y = x * scale`` (with
    the scales given) — @b also adds 1 to ``y[0]`` after it."""

    def kernel(name: str, scale: str, after: str) -> str:
        return f"""
        func.func @{name}(%x: memref<64x64xf32>, %y: memref<64x64xf32>) attributes {{kernel.kernel}} {{
          %s = arith.constant {scale} : f32
          kernel.for %i = 0 to 64 parallel {{
            kernel.for %j = 0 to 64 vectorized {{
              kernel.block "scale" (%vi = spatial %i, %vj = spatial %j) {{
                %a = memref.load %x[%vi, %vj] : memref<64x64xf32>
                %b = arith.mulf %a, %s : f32
                memref.store %b, %y[%vi, %vj] : memref<64x64xf32>
              }}
            }}
          }}
          {after}
          func.return
        }}"""

    bump = """
          kernel.block "bump" () {
            %c0 = arith.constant 0 : index
            %one = arith.constant 1.0 : f32
            %v = memref.load %y[%c0, %c0] : memref<64x64xf32>
            %w = arith.addf %v, %one : f32
            memref.store %w, %y[%c0, %c0] : memref<64x64xf32>
          }"""
    return kernel("a", first_scale, "") + kernel("b", second_scale, epilogue or bump)


def _bodies(module: ModuleOp) -> dict[str, list[str]]:
    """Each defined function → the outlined bodies it calls or takes the address of."""
    from xdsl.dialects import llvm

    def symbol(op: llvm.Operation) -> str:
        if isinstance(op, llvm.CallOp) and op.callee is not None:
            return op.callee.string_value()
        return op.global_name.string_value() if isinstance(op, llvm.AddressOfOp) else ""

    return {
        op.sym_name.data: [symbol(inner) for inner in op.walk() if "_body" in symbol(inner)]
        for op in module.ops
        if isinstance(op, llvm.FuncOp) and op.body.blocks
    }


def test_a_parallel_loop_like_an_earlier_one_reuses_its_outlined_body() -> None:
    """@b's loop is @a's but for the names: @b calls @a's body, outlined
    once (resnet18's Winograd layers share their transforms and products
    this way); the results are each kernel's own."""
    module = ember.parse(_two_kernels("2.0", "2.0"))
    lower_kernels_to_llvm(module)
    bodies = _bodies(module)
    assert set(bodies["b"]) == {"a__parallel0_body"}
    assert "b__parallel0_body" not in bodies
    jit = compile_llvm(module)
    x = _random((64, 64), 3)
    for name, bump in (("a", 0.0), ("b", 1.0)):
        y = np.empty((64, 64), np.float32)
        jit.run(name, x, y)
        want = x * 2
        want[0, 0] += bump
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("second", ["3.0", "-0.0"])
def test_loops_that_differ_in_a_captured_constant_keep_their_own_bodies(second: str) -> None:
    """A constant from outside the loop is part of it: 2.0 against 3.0,
    and 0.0 against -0.0 (equal as floats, not as IEEE values)."""
    first = "0.0" if second == "-0.0" else "2.0"
    module = ember.parse(_two_kernels(first, second))
    lower_kernels_to_llvm(module)
    assert set(_bodies(module)["b"]) == {"b__parallel0_body"}
    x = np.full((64, 64), -1.0, np.float32)
    y = np.empty((64, 64), np.float32)
    compile_llvm(module).run("b", x, y)
    want = x * np.float32(float(second))
    want[0, 0] += 1
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))  # -1 * -0.0 is +0.0


def test_bounds_checked_and_cold_loops_keep_their_own_bodies() -> None:
    """A bounds-checked body names its kernel in its errors, and a cold
    kernel's body is compiled for size: neither is shared."""
    module = ember.parse(_two_kernels("2.0", "2.0"))
    lower_kernels_to_llvm(module, bounds_check=True)
    assert set(_bodies(module)["b"]) == {"b__parallel0_body"}

    from ember.lowering.kernel_to_llvm import KernelLowering

    module = ember.parse(_two_kernels("2.0", "2.0"))
    lowering = KernelLowering(module, cold_work_fraction=0.5)
    lowering.works["a"] = 1  # @a cold, @b hot
    lowered = {kernel.sym_name.data: functions for kernel, functions in lowering}
    assert [f.sym_name.data for f in lowered["b"]] == ["b", "b__parallel0_body"]
