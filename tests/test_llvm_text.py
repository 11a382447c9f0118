"""ember's LLVM IR printer (ember/backends/llvm_text.py) against xDSL's translator.

The printer must mean what xDSL's translation means: for every module
ember's lowerings make, LLVM compiles the two texts to the same object,
byte for byte.  Modules with ops it does not print go to xDSL's translator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    Float16Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f32,
    i1,
    i8,
    i64,
)
from xdsl.ir import Block, Region

from ember import driver
from ember.backends.cpu import _xdsl_translate, emit_ir_object, translate
from ember.backends.llvm_text import Printer, Unsupported, module_text
from ember.compiler import CompileOptions
from ember.lowering.kernel_to_llvm import UNROLL_ATTRIBUTE
from ember.runtime.jit import _shared_target_machine
from ember.target import Target
from ember.testing import workloads

TARGET = Target()


def _both_texts(module: ModuleOp) -> tuple[str, str]:
    machine = _shared_target_machine(TARGET)
    mine = module_text(module, machine.triple, str(machine.target_data))
    return mine, _xdsl_translate(module, machine)


def _same_object(module: ModuleOp) -> None:
    # xDSL's translator has no loop metadata: compared without the
    # ``unrolled`` loops' marks (what they add is tested below).
    for op in module.walk():
        op.attributes.pop(UNROLL_ATTRIBUTE, None)
    mine, theirs = _both_texts(module)
    assert emit_ir_object(mine, TARGET)[1] == emit_ir_object(theirs, TARGET)[1]


@pytest.mark.parametrize(
    "workload, options",
    [
        ("mlp", CompileOptions()),
        ("tiny_pipe", CompileOptions(fast_math=True)),
        # Serial: the thread entry points of parallel loops call their body
        # through its address, which xDSL's translator cannot translate.
        ("convbnrelu", CompileOptions(bounds_check=True, min_parallel_work=1 << 60)),
    ],
    ids=["mlp", "tiny_pipe-fast_math", "convbnrelu-bounds_check"],
)
def test_a_workload_compiles_to_the_object_xdsls_translation_makes(workload, options):
    module, params = workloads.get(workload)
    program = driver.lower(module, driver.ARTIFACT_INPUT, params, options)
    _same_object(program.module)


def _function(name: str, result, body: list, args=()) -> llvm.FuncOp:
    block = Block(arg_types=list(args))
    region = Region(block)
    ops = body(block) if callable(body) else body
    block.add_ops(ops)
    return llvm.FuncOp(name, llvm.LLVMFunctionType(list(args), result), body=region)


def _returning_constant(name: str, value: float, t) -> llvm.FuncOp:
    constant = llvm.ConstantOp(FloatAttr(value, t), t)
    return _function(name, t, [constant, llvm.ReturnOp(constant.result)])


def test_special_constants_and_strings_mean_what_xdsl_makes_of_them():
    functions = [
        _returning_constant(f"c{k}", value, t)
        for k, (value, t) in enumerate(
            [
                (-0.0, f32),
                (math.inf, f32),
                (-math.inf, Float64Type()),
                (math.nan, f32),
                (0.1, f32),
                (float(np.float32(3.4e38)), f32),
                (65504.0, Float16Type()),
                (1e-300, Float64Type()),
            ]
        )
    ]
    flag = llvm.ConstantOp(IntegerAttr(-1, i1), i1)
    functions.append(_function("true", i1, [flag, llvm.ReturnOp(flag.result)]))
    text = 'a "quoted" \\ back\tslash é\0'
    data = text.encode()
    site = llvm.GlobalOp(
        llvm.LLVMArrayType(len(data), i8), "site", "private", constant=True, value=StringAttr(text)
    )
    address = llvm.AddressOfOp("site", llvm.LLVMPointerType())
    functions.append(
        _function("site_address", llvm.LLVMPointerType(), [address, llvm.ReturnOp(address.result)])
    )
    _same_object(ModuleOp([site, *functions]))


def test_a_loop_with_block_arguments_becomes_phis():
    # sum = 0; i = 0; do { sum += i; i += 1 } while (i < n); return sum
    def body(entry: Block) -> list:
        loop = Block(arg_types=[i64, i64])
        done = Block(arg_types=[i64])
        zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
        one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
        total = llvm.AddOp(loop.args[1], loop.args[0])
        following = llvm.AddOp(loop.args[0], one.result)
        more = llvm.ICmpOp(following.res, entry.args[0], IntegerAttr(2, i64))  # slt
        loop.add_ops(
            [total, following, more, llvm.CondBrOp(more.res, loop, [following.res, total.res], done, [total.res])]
        )
        done.add_op(llvm.ReturnOp(done.args[0]))
        region = entry.parent
        assert region is not None
        region.add_block(loop)
        region.add_block(done)
        return [zero, one, llvm.BrOp(loop, zero.result, zero.result)]

    function = _function("triangle", i64, body, args=[i64])
    mine, _ = _both_texts(ModuleOp([function]))
    assert "phi i64" in mine
    _same_object(ModuleOp([_function("triangle", i64, body, args=[i64])]))


def test_passthrough_entries_are_function_attributes():
    function = _returning_constant("small", 1.0, f32)
    function.passthrough = ArrayAttr(
        [StringAttr("optsize"), StringAttr("my-flag"), ArrayAttr([StringAttr("key"), StringAttr("v")])]
    )
    mine, _ = _both_texts(ModuleOp([function]))
    assert 'optsize "my-flag" "key"="v"' in mine
    _same_object(ModuleOp([function.clone()]))


def test_an_op_the_printer_does_not_know_goes_to_xdsls_translator():
    asm = llvm.InlineAsmOp("nop", "", [], [], has_side_effects=True)
    function = _function("nop", llvm.LLVMVoidType(), [asm, llvm.ReturnOp()])
    module = ModuleOp([function])
    machine = _shared_target_machine(TARGET)
    with pytest.raises(Unsupported, match="llvm.inline_asm"):
        module_text(module, machine.triple, str(machine.target_data))
    assert 'asm sideeffect "nop"' in translate(module, TARGET)


def test_names_with_quotes_and_spaces_are_escaped():
    odd = 'an "odd" name\\'
    callee = _returning_constant(odd, 2.0, f32)
    call = llvm.CallOp(odd, return_type=f32)
    caller = _function("caller", f32, [call, llvm.ReturnOp(call.returned)])
    module = ModuleOp([callee, caller])
    mine, _ = _both_texts(module)
    assert '@"an \\22odd\\22 name\\5C"' in mine
    _same_object(ModuleOp([callee.clone(), caller.clone()]))


def test_an_indirect_call_calls_through_the_address():
    """What a parallel loop's thread entry point does with its body
    (xDSL's translator has no indirect calls): the numbers come out."""
    from ember.lowering.kernel_to_llvm import _indirect_call

    def body(entry: Block) -> list:
        function, value = entry.args
        call = _indirect_call(function, [value])
        return [call, llvm.ReturnOp()]

    ptr = llvm.LLVMPointerType()
    caller = _function("call_it", llvm.LLVMVoidType(), body, args=[ptr, ptr])
    caller.linkage = llvm.LinkageAttr("external")
    machine = _shared_target_machine(TARGET)
    mine = module_text(ModuleOp([caller]), machine.triple, str(machine.target_data))
    assert "call void %a0(ptr %a1)" in mine

    import ctypes

    from ember.backends.cpu import compile_llvm

    jit = compile_llvm(ModuleOp([caller.clone()]), TARGET)
    seen: list[int] = []
    callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda p: seen.append(p))
    call_it = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(jit.address("call_it"))
    call_it(ctypes.cast(callback, ctypes.c_void_p), 1234)
    assert seen == [1234]


def test_a_malformed_passthrough_entry_is_named():
    from ember.errors import RuntimeFailure

    function = _returning_constant("bad", 1.0, f32)
    function.passthrough = ArrayAttr([IntegerAttr(3, i64)])
    with pytest.raises(RuntimeFailure, match=r'passthrough entry .*3.* must be "key" or \["key", "value"\]'):
        translate(ModuleOp([function]), TARGET)


def _counting_loop(name: str, unroll: str | None, trips: int = 8) -> llvm.FuncOp:
    """``void name()``: ``tick(i)`` for i in 0..trips, a loop whose latch
    carries ``ember.unroll = unroll`` (none if None)."""

    def body(entry: Block) -> list:
        loop = Block(arg_types=[i64])
        done = Block()
        zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
        one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
        bound = llvm.ConstantOp(IntegerAttr(trips, i64), i64)
        tick = llvm.CallOp("tick", loop.args[0])
        following = llvm.AddOp(loop.args[0], one.result)
        more = llvm.ICmpOp(following.res, bound.result, IntegerAttr(2, i64))  # slt
        latch = llvm.CondBrOp(more.res, loop, [following.res], done, [])
        if unroll is not None:
            latch.attributes[UNROLL_ATTRIBUTE] = StringAttr(unroll)
        loop.add_ops([tick, following, more, latch])
        done.add_op(llvm.ReturnOp())
        region = entry.parent
        assert region is not None
        region.add_block(loop)
        region.add_block(done)
        return [zero, one, bound, llvm.BrOp(loop, zero.result)]

    return _function(name, llvm.LLVMVoidType(), body)


def _tick() -> llvm.FuncOp:
    return llvm.FuncOp(
        "tick", llvm.LLVMFunctionType([i64]), linkage=llvm.LinkageAttr("external")
    )


def test_an_unrolled_loops_latch_carries_full_unroll_metadata():
    """Each marked latch gets a distinct loop node of its own, numbered
    apart across the printer's symbols; functions that differ only in
    those numbers have the same body (they merge)."""
    printer = Printer()
    first, second = (printer.symbol(_counting_loop(n, "full")) for n in ("first", "second"))
    assert ", !llvm.loop !0" in first.text and ", !llvm.loop !2" in second.text
    assert first.metadata == ("!0 = distinct !{!0, !1}", '!1 = !{!"llvm.loop.unroll.full"}')
    assert second.metadata[0] == "!2 = distinct !{!2, !3}"
    assert first.body() == second.body()
    assert first.body() != printer.symbol(_counting_loop("third", None)).body()


def test_llvm_unrolls_a_marked_loop_fully():
    """A loop of 200 calls: LLVM's pipeline keeps it a loop, and unrolls
    it into 200 calls when its latch is marked."""
    from ember.backends.cpu import optimize

    machine = _shared_target_machine(TARGET)
    calls = {}
    for unroll in (None, "full"):
        module = ModuleOp([_tick(), _counting_loop("ticks", unroll, trips=200)])
        text = optimize(module_text(module, machine.triple, str(machine.target_data)), TARGET)
        calls[unroll] = (text.count("call void @tick("), "phi i64" in text)
    assert calls == {None: (1, True), "full": (200, False)}


def test_an_unknown_unroll_request_goes_to_xdsls_translator():
    module = ModuleOp([_tick(), _counting_loop("odd", "twice")])
    machine = _shared_target_machine(TARGET)
    with pytest.raises(Unsupported, match="ember.unroll"):
        module_text(module, machine.triple, str(machine.target_data))
    assert "!llvm.loop" not in translate(module, TARGET)
