"""``kernel-bind-gpu``: bind kernel loops to the CUDA grid and blocks.

A schedule pass of the kernel dialect (TensorIR's ``bind``): it changes loop
kinds and splits loops, never what a kernel computes, so the kernel
interpreter gives the same result before and after (a property test checks
it). For each top-level loop nest of every kernel:

* the nest is entered through loops of one iteration (a batch of 1) down to
  the first ``parallel`` or ``vectorized`` loop — the first loop whose
  iterations the lowering promised are independent;
* if that loop's body is a single ``parallel``/``vectorized`` loop (with
  constants beside it), the outer loop is bound to ``gpu.block.x`` and the
  inner one to ``gpu.thread.x``;
* otherwise the loop is split: ``i = io * T + ii`` with ``T`` the largest
  divisor of its trip count that is at most ``max-threads``, ``io`` bound to
  ``gpu.block.x`` and ``ii`` to ``gpu.thread.x``.

Anything else (a nest whose first independent loop sits under a serial loop
of several iterations, code outside loops) is left serial: it runs on one
thread, correctly and slowly, and the CUDA renderer launches it as one.
Binding reads the promise made by the loop kinds; it does not prove
independence itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ember.dialects.kernel import ForOp, kernel_functions
from ember.errors import PassError

__all__ = ["KernelBindGpuPass", "bind_gpu"]

_INDEPENDENT = ("parallel", "vectorized")


def _only_loop(block: Block) -> ForOp | None:
    """The single loop of ``block`` when everything else in it is a constant."""
    loops = [op for op in block.ops if isinstance(op, ForOp)]
    others = [op for op in block.ops if not isinstance(op, (ForOp, arith.ConstantOp))]
    return loops[0] if len(loops) == 1 and not others else None


def _first_independent(loop: ForOp) -> ForOp | None:
    """Down through one-iteration loops to the first independent loop."""
    while loop.kind.data not in _INDEPENDENT:
        if loop.trip_count != 1:
            return None
        inner = _only_loop(loop.body.block)
        if inner is None:
            return None
        loop = inner
    return loop


def _largest_divisor(n: int, most: int) -> int:
    for d in range(min(n, most), 0, -1):
        if n % d == 0:
            return d
    return 1


def _split(loop: ForOp, threads: int) -> None:
    """``for i in lb..ub step s`` → ``for io (gpu.block.x) { for ii
    (gpu.thread.x) { i = lb + (io * T + ii) * s; body } }``."""
    trips = loop.trip_count
    lb, step = loop.lb, loop.step_value
    outer = ForOp(0, trips // threads, 1, "gpu.block.x")
    inner = ForOp(0, threads, 1, "gpu.thread.x")
    outer.body.block.add_op(inner)
    body = inner.body.block
    io, ii = outer.induction_var, inner.induction_var
    name = loop.induction_var.name_hint or "i"
    io.name_hint, ii.name_hint = f"{name}_o", f"{name}_i"
    t = arith.ConstantOp.from_int_and_width(threads, IndexType())
    scaled = arith.MuliOp(io, t)
    flat = arith.AddiOp(scaled, ii)
    ops: list[Operation] = [t, scaled, flat]
    index = flat
    if step != 1:
        s = arith.ConstantOp.from_int_and_width(step, IndexType())
        index = arith.MuliOp(index, s)
        ops += [s, index]
    if lb != 0:
        b = arith.ConstantOp.from_int_and_width(lb, IndexType())
        index = arith.AddiOp(index, b)
        ops += [b, index]
    for op in ops:
        body.add_op(op)
    index.results[0].name_hint = name
    loop.induction_var.replace_all_uses_with(index.results[0])
    for op in list(loop.body.block.ops):
        op.detach()
        body.add_op(op)
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(outer, loop)
    parent.erase_op(loop)


def _set_kind(loop: ForOp, kind: str) -> None:
    loop.kind = type(loop.kind)(kind)


def bind_gpu(module: ModuleOp, max_threads: int = 256) -> None:
    """Bind the loops of every kernel of ``module`` in place (see the module doc)."""
    for func in kernel_functions(module):
        for top in [op for op in func.body.block.ops if isinstance(op, ForOp)]:
            loop = _first_independent(top)
            if loop is None:
                continue
            inner = _only_loop(loop.body.block)
            if inner is not None and inner.kind.data in _INDEPENDENT and inner.trip_count <= 1024:
                _set_kind(loop, "gpu.block.x")
                _set_kind(inner, "gpu.thread.x")
            else:
                _split(loop, _largest_divisor(loop.trip_count, max_threads))


@dataclass(frozen=True)
class KernelBindGpuPass(ModulePass):
    """Bind independent kernel loops to CUDA blocks and threads (gpu.block.x / gpu.thread.x)."""

    name = "kernel-bind-gpu"

    max_threads: int = 256
    """The most threads of a block a split loop gets (1 to 1024)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 1 <= self.max_threads <= 1024:
            raise PassError(
                f"kernel-bind-gpu: max-threads must be 1 to 1024, got {self.max_threads}"
            )
        bind_gpu(op, self.max_threads)
