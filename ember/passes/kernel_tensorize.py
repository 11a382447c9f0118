"""``kernel-tensorize``: naive contractions become register-tiled micro-kernels.

TVM's schedule rules for conv2d, dense and batch_matmul (dlight's
``Matmul`` rule) as a kernel pass: ``lower-graph-to-kernel`` emits a
``graph.conv2d``, ``graph.dense`` or ``graph.matmul`` anchor as its naive
contraction — per result element a
one-float accumulator, a ``reduce`` block named after the op adding
``a · b`` in order, and a ``{op}_store`` block that hands the sum to the
fused epilogue (:func:`~ember.lowering.graph_to_kernel._gen_contraction`) —
and this pass rewrites that nest into today's micro-kernel::

    kernel-tensorize{ops=conv2d,dense,matmul vector-bits=256}

```mlir
kernel.for %i = 0 to 4 {                        kernel.for %pt = 0 to 2 parallel {
  kernel.for %j = 0 to 10 {                       %acc = memref.alloc() : memref<4x8xf32>
    %acc = memref.alloc() : memref<1xf32>         kernel.for %l = 0 to 8 vectorized { ... = 0 }
    kernel.block "dense_init" (...)        -->    kernel.for %k = 0 to 8 {
    kernel.for %k = 0 to 8 {                        kernel.for %l_1 = 0 to 8 vectorized {
      kernel.block "dense" (..., reduce %k)            kernel.block "dense" (...) { 4 FMAs }
    kernel.block "dense_store" (...)              kernel.for %l_2 = 0 to 8 vectorized {
                                                    kernel.block "dense_store" (...) { epilogue x4 }
```

* ``conv2d`` (one group, over its padded input — ``kernel-pad-input``
  makes the naive kernel read one: ``out[n, o, y, x] =
  Σ in[n, c, y·sh + i·dh, x·sw + j·dw] · w[o, c, i, j]``): Winograd
  F(2×2, 3×3) for a 3×3 stride-1 layer of at least ``winograd-min-channels``
  channels that :func:`~ember.lowering.winograd.winograd_transform`'s rule
  takes (:mod:`ember.lowering.winograd`, the weight transformed into ``U``);
  else tiles of output
  pixels × a panel of output channels over the weight in panels
  (OIHW → O/L·I·H·W·L), or row tiles (:mod:`ember.lowering.conv_rows`;
  a strided layer over its input's column phases) for a short reduction
  over wide rows (:func:`~ember.lowering.microkernels.in_rows`).
* grouped ``conv2d`` (depthwise too: A read at channel
  ``(o // O_g)·I_g + c``, ``O_g``/``I_g`` the output/input channels per
  group): the row-vectorised nest of
  :func:`~ember.lowering.conv_rows.emit_grouped_conv2d_rows`, weight read
  in place.
* ``conv2d_transpose`` (over its input spread at stride steps — made by
  ``kernel-pad-input`` — ``out[n, o, y, x] = Σ spread[n, c, y + i·dh +
  t, x + j·dw + l] · w[c, o mod O_g, KH-1-i, KW-1-j]``): the gather nest,
  output channels in parallel, one accumulator per output pixel.
* ``dense`` (``out[i, j] = Σ_k x[i, k] · w[j, k]``): tiles of rows × a
  panel of units over the weight in panels (OI → O/L·I·L, the layout of
  :class:`~ember.lowering.graph_to_kernel.WeightPacking`), tile shape from
  the vector width (:func:`~ember.lowering.graph_to_kernel.product_tile`).
* ``matmul`` (``out[b…, i, j] = Σ_k A[b…, i, k] · B[b…, k, j]``): tiles of
  rows × columns over B in column panels
  (:mod:`ember.lowering.gemm`), or B in place for a short A over a B that
  is not bound.

How the pass knows what it rewrites: the reduce block's name says which
contraction the lowering meant, and the pass checks it against the nest
before changing anything — the loops, the accumulator, the
multiply-accumulate of two kernel inputs and the index each of them is read
at must be exactly the op's; a nest that differs is left as it is.  The
fused epilogue is the naive store block's own ops, cloned at every element
of a tile, not regenerated from the graph.

The weight (conv2d in panels or Winograd's ``U``, dense) or B (matmul) is repacked where it is bound, like
``kernel-pack-layout``: when every ``graph.call_kernel`` of the kernel
passes a ``graph.constant`` there and the kernel reads it only in the
product, each constant is replaced by its packed copy (once per constant)
and the kernel reads the packed argument; otherwise the kernel packs it
into scratch at every call.  The tiles' products are exactly the naive
kernel's: each sum adds the same products in the same order, so results
are bit for bit the same — except Winograd's, which round differently
within the bound docs/kernel-dialect.md gives ("Winograd convolution").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ember import remarks
from ember.analysis.index_terms import ONE, Index, Variable, index_terms, is_zero_index
from ember.analysis.loop_nests import loop_nests
from ember.dialects.graph import CallKernelOp, ConstantOp, numpy_dtype
from ember.dialects.kernel import (
    REDUCE,
    SPATIAL,
    BlockOp,
    ForOp,
    is_kernel,
)
from ember.errors import PassError
from ember.lowering import gemm
from ember.lowering import graph_to_kernel as g2k
from ember.lowering import microkernels as mk
from ember.lowering.winograd import (
    WinogradConv,
    WinogradPacking,
    WinogradTransform,
    emit_conv2d_winograd,
    winograd_transform,
    workspace_shapes,
)
from ember.passes.kernel_pass import KernelPass, KernelStep
from ember.passes.lower_graph_to_kernel import Packing, WeightPacker


def linear(**terms: int) -> Index:
    """The index ``sum(factor * variable)``: ``linear(s2=2, r1=1)``."""
    return tuple(sorted(((name[0], int(name[1:])), f) for name, f in terms.items() if f))


@dataclass(frozen=True)
class Operand:
    """A buffer read in the product at ``indices``: kernel argument ``arg``,
    or (``arg`` ``None``) a scratch buffer the kernel fills before the nest."""

    buffer: SSAValue
    arg: int | None
    indices: tuple[Index, ...]


@dataclass(frozen=True)
class Contraction:
    """A naive contraction nest, as :func:`match_contraction` read it."""

    name: str
    """The reduce block's name: which op the lowering emitted."""
    nest: ForOp
    """The nest's outermost loop."""
    spatial: tuple[int, ...]
    reduction: tuple[int, ...]
    a: Operand
    b: Operand
    store: BlockOp
    """The store block: its ops after the accumulator's load are the epilogue."""
    total: SSAValue
    """The accumulator's value in the store block (the epilogue's input)."""


# --------------------------------------------------------------------------
# Recognising the naive nest
# --------------------------------------------------------------------------


def _plain(loop: ForOp) -> bool:
    return loop.kind.data == "serial" and loop.lb == 0 and loop.step_value == 1


def _binds(block: BlockOp, ivs: Sequence[SSAValue], kinds: Sequence[str]) -> bool:
    return list(block.bindings) == list(ivs) and list(block.kinds) == list(kinds)


def _read(value: SSAValue, variables: dict[SSAValue, Variable], buffers: Sequence[SSAValue]) -> Operand | None:
    """The buffer ``value`` loads (through an ``extf``) and where, or ``None``."""
    if isinstance(value.owner, arith.ExtFOp):
        value = value.owner.input
    load = value.owner
    if not isinstance(load, memref.LoadOp) or load.memref not in buffers:
        return None
    indices: list[Index] = []
    for index in load.indices:
        terms = index_terms(index, variables)
        if terms is None:
            return None
        indices.append(tuple(sorted((v, f) for v, f in terms.items() if f)))
    args = list(load.memref.owner.args) if isinstance(load.memref.owner, Block) else []
    arg = args.index(load.memref) if load.memref in args else None
    return Operand(load.memref, arg, tuple(indices))


def _accumulates(block: BlockOp, acc: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """``(a, b)`` if ``block`` is exactly ``acc[0] = acc[0] + a * b``."""
    ops = [op for op in block.body.block.ops if not isinstance(op, arith.ConstantOp)]
    if not ops or not isinstance(ops[-1], memref.StoreOp):
        return None
    store = ops[-1]
    total = store.value.owner
    if store.memref is not acc or not isinstance(total, arith.AddfOp):
        return None
    old, product = total.lhs.owner, total.rhs.owner
    if not (
        isinstance(old, memref.LoadOp)
        and old.memref is acc
        and isinstance(product, arith.MulfOp)
        and all(is_zero_index(i) for i in (*old.indices, *store.indices))
    ):
        return None
    a, b = product.lhs, product.rhs
    loads = {v.owner for v in (a, b)} | {
        v.owner.input.owner for v in (a, b) if isinstance(v.owner, arith.ExtFOp)
    }
    index_ops = (arith.AddiOp, arith.MuliOp, arith.DivSIOp, arith.RemSIOp)
    rest = set(ops) - {store, total, old, product, *loads}
    if not all(isinstance(op, index_ops) for op in rest):
        return None
    return a, b


def match_contraction(kernel: FuncOp) -> Contraction | None:
    """The naive contraction ``kernel`` computes, or ``None`` when its body
    is anything else (:func:`~ember.lowering.graph_to_kernel._gen_contraction`
    says what the nest looks like).  The nest is the kernel's last loop
    nest; before it the kernel may fill scratch buffers the product reads
    (conv2d's padded input), after it only free them."""
    top = list(kernel.body.block.ops)
    nests = loop_nests(kernel)
    if not nests or not isinstance(top[-1], ReturnOp):
        return None
    outer = nests[-1]
    after = top[top.index(outer[0]) + 1 : -1]
    if not all(isinstance(op, memref.DeallocOp) for op in after):
        return None
    body = list(outer[-1].body.block.ops)
    if len(body) != 5 or not all(_plain(loop) for loop in outer):
        return None
    alloc, init, red, store, dealloc = body
    if not (
        isinstance(alloc, memref.AllocOp)
        and isinstance(init, BlockOp)
        and isinstance(red, ForOp)
        and isinstance(store, BlockOp)
        and isinstance(dealloc, memref.DeallocOp)
        and dealloc.memref is alloc.memref
        and alloc.memref.type == MemRefType(f32, [1])
    ):
        return None
    acc = alloc.memref
    inner = [red]
    while True:
        ops = list(inner[-1].body.block.ops)
        if len(ops) == 1 and isinstance(ops[0], ForOp):
            inner.append(ops[0])
            continue
        break
    if len(ops) != 1 or not isinstance(ops[0], BlockOp) or not all(_plain(loop) for loop in inner):
        return None
    block = ops[0]
    name = block.block_name.data
    ivs = [loop.induction_var for loop in outer]
    red_ivs = [loop.induction_var for loop in inner]
    if not (
        init.block_name.data == f"{name}_init"
        and store.block_name.data == f"{name}_store"
        and _binds(init, ivs, [SPATIAL] * len(ivs))
        and _binds(store, ivs, [SPATIAL] * len(ivs))
        and _binds(block, ivs + red_ivs, [SPATIAL] * len(ivs) + [REDUCE] * len(red_ivs))
        and _zeroes(init, acc)
    ):
        return None
    products = _accumulates(block, acc)
    if products is None:
        return None
    variables: dict[SSAValue, Variable] = {
        v: ("s", d) for d, v in enumerate(block.iter_vars[: len(ivs)])
    }
    variables |= {v: ("r", d) for d, v in enumerate(block.iter_vars[len(ivs) :])}
    args = kernel.body.block.args
    scratch = [op.memref for op in top if isinstance(op, memref.AllocOp)]
    a, b = (_read(v, variables, [*args, *scratch]) for v in products)
    total = _epilogue_input(store, acc, args)
    if a is None or b is None or total is None:
        return None
    return Contraction(
        name,
        outer[0],
        tuple(loop.ub for loop in outer),
        tuple(loop.ub for loop in inner),
        a,
        b,
        store,
        total,
    )


def _zeroes(init: BlockOp, acc: SSAValue) -> bool:
    ops = list(init.body.block.ops)
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    if len(stores) != 1 or any(not isinstance(op, arith.ConstantOp | memref.StoreOp) for op in ops):
        return False
    value = stores[0].value.owner
    return (
        stores[0].memref is acc
        and isinstance(value, arith.ConstantOp)
        and isinstance(value.value, FloatAttr)
        and value.value.value.data == 0.0
    )


def _epilogue_input(store: BlockOp, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue | None:
    """The load of ``acc`` that starts the store block, if every other op of
    the block reads only the block's values, its variables and kernel inputs."""
    loads = [use.operation for use in acc.uses if store.is_ancestor(use.operation)]
    if len(loads) != 1 or not isinstance(loads[0], memref.LoadOp):
        return None
    known = {*store.iter_vars, *args, acc}
    for op in store.body.block.ops:
        if any(v not in known for v in op.operands) or op.regions:
            return None
        known.update(op.results)
    return loads[0].res


# --------------------------------------------------------------------------
# The epilogue, cloned into the micro-kernel's store block
# --------------------------------------------------------------------------


class _Epilogue:
    """What the naive store block does with the sum, replayed at an index.

    ``emit_result`` is the one method of the lowering's ``_Lowering`` that
    the micro-kernel generators call: it clones the store block's ops after
    the accumulator's load with the sum and the index given; constants go
    through the emitter's per-block cache."""

    def __init__(self, contraction: Contraction) -> None:
        block = contraction.store.body.block
        load = contraction.total.owner
        self.total = contraction.total
        self.variables = list(contraction.store.iter_vars)
        ops = [op for op in block.ops if op is not load]
        used = {v for op in ops if not isinstance(op, arith.ConstantOp) for v in op.operands}
        self.ops = [
            op for op in ops if not isinstance(op, arith.ConstantOp) or op.result in used
        ]

    def emit_result(self, em: g2k._Emitter, value: SSAValue, indices: Sequence[SSAValue]) -> None:
        mapping: dict[SSAValue, SSAValue] = {self.total: value}
        mapping.update(zip(self.variables, indices))
        for op in self.ops:
            if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr | FloatAttr):
                mapping[op.result] = em.const(op.value.value.data, op.result.type)
                continue
            em.add(op.clone(value_mapper=mapping))


# --------------------------------------------------------------------------
# Packing at bind time
# --------------------------------------------------------------------------


def _read_only_in_product(kernel: FuncOp, contraction: Contraction) -> bool:
    """Whether ``b`` is read by the product alone (the epilogue needs it as it is)."""
    value = kernel.body.block.args[contraction.b.arg]
    return contraction.a.arg != contraction.b.arg and len(list(value.uses)) == 1


def _bound_callers(module: ModuleOp, kernel: FuncOp, arg: int) -> list[CallKernelOp] | None:
    """The calls of ``kernel``, if there is one and each passes a
    ``graph.constant`` as argument ``arg``; else ``None``."""
    calls = _calls_of(module, kernel.sym_name.data)
    if not calls or not all(isinstance(call.operands[arg].owner, ConstantOp) for call in calls):
        return None
    return calls


def _calls_of(module: ModuleOp, callee: str) -> list[CallKernelOp]:
    """The ``graph.call_kernel`` ops of ``module`` that call ``callee``, in
    order.  They are in the program's functions: the kernels' bodies (most
    of the module's ops) are memref code, and are not walked."""
    return [
        op
        for function in module.ops
        if not is_kernel(function)
        for op in function.walk()
        if isinstance(op, CallKernelOp) and op.callee == callee
    ]


def _bind_packed(
    packer: WeightPacker, calls: Sequence[CallKernelOp], arg: int, packing: Packing
) -> None:
    """Pass the constant each of ``calls`` binds to ``arg`` packed (each
    constant once per layout); the originals go once nothing reads them."""
    for call in calls:
        constant = call.operands[arg].owner
        assert isinstance(constant, ConstantOp)  # checked by _bound_callers
        call.operands[arg] = packer.pack(constant, packing)
    packer.erase_unused_originals()


# --------------------------------------------------------------------------
# The rules: one per contraction the pass knows
# --------------------------------------------------------------------------

Rule = Callable[["_Rewrite"], str | None]


@dataclass
class _Rewrite:
    """One kernel being rewritten: its contraction, target and buffers."""

    kernel: FuncOp
    contraction: Contraction
    target: g2k.VectorTarget
    bound: list[CallKernelOp] | None
    """The calls of the kernel when each binds a constant to ``b``, else ``None``."""
    packable: bool
    """Whether ``b`` may change layout (:func:`_read_only_in_product`)."""
    packer: WeightPacker
    module: ModuleOp

    def arg(self, n: int) -> SSAValue:
        return self.kernel.body.block.args[n]

    def load(self, em: g2k._Emitter, operand: Operand, at: dict[Variable, SSAValue]) -> SSAValue:
        """``operand`` at its indices, the variables bound by ``at`` (f32)."""
        return em.load_widened(operand.buffer, [_emit_index(em, i, at) for i in operand.indices])

    def packed_b(self, packing: Packing) -> SSAValue | None:
        """The packed ``b`` argument, when its callers bind it (repacked now)."""
        if self.bound is None or not self.packable:
            return None
        arg = self.contraction.b.arg
        _bind_packed(self.packer, self.bound, arg, packing)
        old = self.arg(arg)
        shape = packing.shape(old.type.get_shape())  # type: ignore[attr-defined]
        return Rewriter.replace_value_with_new_type(old, MemRefType(f32, shape))


def _memref_bytes(value: SSAValue) -> int:
    shape = value.type.get_shape()  # type: ignore[attr-defined]
    return math.prod(shape) * numpy_dtype(value.type.element_type).itemsize  # type: ignore[attr-defined]


def _emit_index(em: g2k._Emitter, index: Index, at: dict[Variable, SSAValue]) -> SSAValue:
    if len(index) == 1 and index[0][1] == 1:
        return at[index[0][0]]
    return em.affine([(at[v], factor) for v, factor in index])


def _dense(rw: _Rewrite, em: g2k._Emitter) -> str:
    """``out[i, j] = Σ_k x[i, k] · w[j, k]``: row tiles × unit panels."""
    c = rw.contraction
    rows, units = c.spatial
    (depth,) = c.reduction
    # x's rows, a tile's one element of each per step, lie a row apart.
    x_type = c.a.buffer.type
    row_bytes = x_type.get_shape()[-1] * numpy_dtype(x_type.element_type).itemsize  # type: ignore[attr-defined]
    lanes, tile = mk.product_tile(units, rows, rw.target, row_bytes)
    packing = g2k.WeightPacking(lanes)
    shape = rw.arg(c.b.arg).type.get_shape()  # type: ignore[attr-defined]
    panels = rw.packed_b(packing)
    when = "at bind time" if panels is not None else "per call"
    if panels is None:
        panels = mk.weight_panels(em, rw.arg(c.b.arg), shape, packing)

    def read(em: g2k._Emitter, row: SSAValue, red: Sequence[SSAValue]) -> SSAValue:
        return rw.load(em, c.a, {S0: row, R0: red[0]})

    def result_at(em: g2k._Emitter, unit: SSAValue, row: SSAValue) -> list[SSAValue]:
        return [row, unit]

    vector_lanes = rw.target.vector_lanes
    product = mk.Product(
        "dense", rows, units, (("k", depth),), panels, lanes, tile, read, result_at,
        vector_lanes, _memref_bytes(c.a.buffer),
    )
    mk.emit_product(em, _Epilogue(c), product)  # type: ignore[arg-type]
    return f"register tile {tile} rows x {lanes} units, weight packed in panels of {lanes} ({when})"


def _matmul(rw: _Rewrite, em: g2k._Emitter) -> str:
    """``out[b…, i, j] = Σ_k A[b…, i, k] · B[b…, k, j]``: row × column tiles."""
    c = rw.contraction
    *batch, rows, columns = c.spatial
    (depth,) = c.reduction
    b_shape = rw.arg(c.b.arg).type.get_shape()  # type: ignore[attr-defined]
    packing = gemm.matmul_packing(rw.bound is not None, rows, rw.target)
    epilogue = _Epilogue(c)

    def batch_at(batch_ivs: Sequence[SSAValue]) -> dict[Variable, SSAValue]:
        return {("s", d): v for d, v in enumerate(batch_ivs)}

    def b_batch(em: g2k._Emitter, batch_ivs: Sequence[SSAValue]) -> list[SSAValue]:
        return [_emit_index(em, i, batch_at(batch_ivs)) for i in c.b.indices[:-2]]

    if packing is None:
        b = rw.arg(c.b.arg)
        describe = "B read in place"

        def b_at(em, batch_ivs, red, first, lane):  # type: ignore[no-untyped-def]
            at = [*b_batch(em, batch_ivs), red[0]]
            return em.load_widened(b, [*at, em.add_index(first, lane)])

    else:
        packed = rw.packed_b(packing)
        when = "at bind time" if packed is not None else "per call"
        describe = f"B packed in column panels of {packing.width} ({when})"
        panels = packed if packed is not None else gemm.column_panels(em, rw.arg(c.b.arg), b_shape, packing)
        width = packing.width

        def b_at(em, batch_ivs, red, first, lane):  # type: ignore[no-untyped-def]
            panel = em.add(arith.DivSIOp(first, em.index(width)))
            return em.load(panels, [*b_batch(em, batch_ivs), panel, red[0], lane])

    def a_at(em, batch_ivs, row, red):  # type: ignore[no-untyped-def]
        at = batch_at(batch_ivs) | {("s", len(batch)): row, R0: red[0]}
        return rw.load(em, c.a, at)

    def store(em, batch_ivs, row, column, value):  # type: ignore[no-untyped-def]
        epilogue.emit_result(em, value, [*batch_ivs, row, column])

    product = gemm.RowProduct(
        "matmul", tuple(batch), rows, columns, (("k", depth),), a_at, b_at, store, columns_outer=True
    )
    gemm.emit_row_product(em, product, rw.target)
    most_rows, width = gemm.tile_shape(rw.target)
    return f"register tile {most_rows} rows x {width} columns, {describe}"


S0: Variable = ("s", 0)
R0: Variable = ("r", 0)


def _is_dense(c: Contraction) -> bool:
    return (
        len(c.spatial) == 2
        and len(c.reduction) == 1
        and c.a.indices == (linear(s0=1), linear(r0=1))
        and c.b.indices == (linear(s1=1), linear(r0=1))
        and c.b.arg is not None
    )


def _is_matmul(c: Contraction) -> bool:
    batch = len(c.spatial) - 2
    if batch < 0 or len(c.reduction) != 1:
        return False

    def batch_ok(indices: tuple[Index, ...]) -> bool:
        # Broadcast batch axes read 0; the rest are the result's trailing ones.
        offset = batch - len(indices)
        return offset >= 0 and all(
            i in ((), ((("s", offset + d), 1),)) for d, i in enumerate(indices)
        )

    return (
        c.a.indices[-2:] == ((((("s", batch), 1),)), (((R0, 1),)))
        and c.b.indices[-2:] == (((R0, 1),), ((("s", batch + 1), 1),))
        and batch_ok(c.a.indices[:-2])
        and batch_ok(c.b.indices[:-2])
        and c.b.arg is not None
    )


def _group_out(c: Contraction, channel: Index) -> int | None:
    """The output channels per group of a convolution that reads input
    channel ``channel``: 0 for ``ic`` (one group), ``q`` for ``(oc // q)·IC
    + ic`` (``IC`` the reduction's input channels, ``q`` dividing the
    output channels); ``None`` for any other index."""
    if channel == linear(r0=1):
        return 0
    terms = dict(channel)
    groups = [v for v in terms if v[:2] == ("s//", 1)]
    if len(groups) != 1 or terms != {groups[0]: c.reduction[0], R0: 1}:
        return None
    group_out: int = groups[0][2]  # type: ignore[misc]
    return None if c.spatial[1] % group_out else group_out


def _conv_params(c: Contraction) -> tuple[int, int, int, int, int] | None:
    """``(sh, sw, dh, dw, group_out)`` of a conv2d nest over NCHW / OIHW,
    or ``None``: A read at ``[n, ic, oh·sh + kh·dh, ow·sw + kw·dw]`` (one
    group: ``group_out`` 0) or, with groups of ``group_out`` output
    channels, at channel ``(oc // group_out)·IC + ic`` (``IC`` the input
    channels per group); the weight at ``[oc, ic, kh, kw]``."""
    if len(c.spatial) != 4 or len(c.reduction) != 3 or c.b.arg is None:
        return None
    a, b = c.a.indices, c.b.indices
    if b != (linear(s1=1), linear(r0=1), linear(r1=1), linear(r2=1)):
        return None
    if len(a) != 4 or a[0] != linear(s0=1):
        return None
    group_out = _group_out(c, a[1])
    if group_out is None:
        return None
    y, x = dict(a[2]), dict(a[3])
    if set(y) != {("s", 2), ("r", 1)} or set(x) != {("s", 3), ("r", 2)}:
        return None
    return y[("s", 2)], x[("s", 3)], y[("r", 1)], x[("r", 2)], group_out


def _is_conv2d(c: Contraction) -> bool:
    return _conv_params(c) is not None


def _conv2d(rw: _Rewrite, em: g2k._Emitter) -> str:
    """Winograd when its rule chooses the layer (:func:`_winograd`), else
    direct convolution: register tiles of output pixels × a panel of
    output channels over the weight in panels; a short reduction over wide
    rows keeps the vector along the output row (row tiles,
    :mod:`ember.lowering.conv_rows`); groups the row-vectorised nest."""
    c = rw.contraction
    params = _conv_params(c)
    assert params is not None  # checked by _is_conv2d
    sh, sw, dh, dw, group_out = params
    n, out_channels, oh, ow = c.spatial
    in_channels, kh, kw = c.reduction
    transform = None if group_out else winograd_transform(
        in_channels, out_channels, (kh, kw), (sh, sw), (dh, dw), (oh, ow), rw.target
    )
    if transform is not None:
        return _winograd(rw, em, transform)
    source = c.a.buffer
    weight = rw.arg(c.b.arg)  # type: ignore[arg-type]
    epilogue = _Epilogue(c)
    if group_out:
        from ember.lowering.conv_rows import emit_grouped_conv2d_rows

        emit_grouped_conv2d_rows(
            em, source, weight, (n, out_channels, oh, ow), (in_channels, kh, kw),
            group_out, (sh, sw), (dh, dw), epilogue.emit_result,
        )
        return (
            f"grouped convolution ({out_channels // group_out} groups): output channels "
            "in parallel, the output row vectorized, weight read in place"
        )
    if mk.in_rows(in_channels * kh * kw, ow, rw.target):
        from ember.lowering.conv_rows import emit_conv2d_row_tiles

        emit_conv2d_row_tiles(
            em, source, weight, (n, out_channels, oh, ow), (in_channels, kh, kw),
            (sh, sw), (dh, dw), epilogue.emit_result, rw.target,
        )
        rows, width = gemm.tile_shape(rw.target)
        return f"direct convolution in row tiles of {rows} channels x {width} columns, weight read in place"
    lanes, tile = mk.product_tile(out_channels, 0, rw.target)
    packing = g2k.WeightPacking(lanes)
    shape = weight.type.get_shape()  # type: ignore[attr-defined]
    panels = rw.packed_b(packing)
    when = "at bind time" if panels is not None else "per call"
    if panels is None:
        panels = mk.weight_panels(em, weight, shape, packing)
    out_shape = [n, oh, ow]

    def read(em: g2k._Emitter, pixel: SSAValue, red: Sequence[SSAValue]) -> SSAValue:
        vic, vkh, vkw = red
        vn, voh, vow = g2k._unflatten(em, pixel, out_shape)
        y = em.affine([(voh, sh), (vkh, dh)])
        x = em.affine([(vow, sw), (vkw, dw)])
        return em.load_widened(source, [vn, vic, y, x])

    def result_at(em: g2k._Emitter, channel: SSAValue, pixel: SSAValue) -> list[SSAValue]:
        vn, voh, vow = g2k._unflatten(em, pixel, out_shape)
        return [vn, channel, voh, vow]

    product = mk.Product(
        "conv2d",
        n * oh * ow,
        out_channels,
        (("ic", in_channels), ("kh", kh), ("kw", kw)),
        panels,
        lanes,
        tile,
        read,
        result_at,
        rw.target.vector_lanes,
        _memref_bytes(source),
    )
    mk.emit_product(em, epilogue, product)  # type: ignore[arg-type]
    return (
        f"direct convolution, register tile {tile} pixels x {lanes} channels, "
        f"weight packed in panels of {lanes} ({when})"
    )


def _winograd(rw: _Rewrite, em: g2k._Emitter, transform: WinogradTransform) -> str:
    """A 3×3 stride-1 conv2d by Winograd (:mod:`ember.lowering.winograd`),
    its weight transformed into ``U`` where it is bound."""
    c = rw.contraction
    packed = rw.packed_b(WinogradPacking(transform))
    weight = packed if packed is not None else rw.arg(c.b.arg)  # type: ignore[arg-type]
    in_channels = c.reduction[0]
    shapes = workspace_shapes(transform, in_channels, c.spatial, rw.target)
    workspace = _workspace(rw, shapes, ("winograd_input", "winograd_products"))
    conv = WinogradConv(
        c.a.buffer, weight, packed is not None, c.spatial, _Epilogue(c).emit_result, workspace  # type: ignore[arg-type]
    )
    emit_conv2d_winograd(em, conv, transform, rw.target)
    when = "at bind time" if packed is not None else "per call"
    m = transform.m
    how = "the whole layer in a planned workspace" if workspace else "in bands of one tile row"
    return f"Winograd F({m}x{m}, 3x3) convolution, {how}, weight transformed {when}"


def _workspace(
    rw: _Rewrite, shapes: Sequence[Sequence[int]], names: Sequence[str]
) -> tuple[SSAValue, ...]:
    """Scratch buffers of ``shapes`` the kernel takes as extra output
    arguments: every call of it gets as many more results, which nothing
    reads, so ``plan-memory`` places them in the program's workspace like
    any intermediate (allocated once, not per call) and reuses the bytes
    once the call is done."""
    if not shapes:
        return ()
    block = rw.kernel.body.block
    types = [MemRefType(f32, list(shape)) for shape in shapes]
    args = []
    for t, name in zip(types, names):
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = name
        args.append(arg)
    callee = rw.kernel.sym_name.data
    for call in _calls_of(rw.module, callee):
        extra = [TensorType(f32, list(shape)) for shape in shapes]
        new = CallKernelOp(callee, call.operands, [*(r.type for r in call.results), *extra])
        new.attributes.update(call.attributes)
        new.location = call.location  # the graph ops it computes: remarks, op costs
        for old, result in zip(call.results, new.results):
            result.name_hint = old.name_hint
        Rewriter.replace_op(call, new, new.results[: len(call.results)])
    return tuple(args)


def _conv_transpose_params(c: Contraction) -> tuple[int, int, int, int, int] | None:
    """``(dh, dw, top, left, group_out)`` of a conv2d_transpose nest over
    its input spread at stride steps (``kernel-pad-input``), or ``None``:
    A read at ``[n, ic, oh + kh·dh + top, ow + kw·dw + left]``, the weight
    (I × O/groups × KH × KW) at ``[ic, oc, KH-1-kh, KW-1-kw]``; with groups
    of ``group_out`` output channels (else 0) the channel is ``(oc //
    group_out)·IC + ic`` and the weight's second index ``oc % group_out``."""
    if len(c.spatial) != 4 or len(c.reduction) != 3 or c.b.arg is None:
        return None
    a, b = c.a.indices, c.b.indices
    _, kh, kw = c.reduction
    if len(a) != 4 or len(b) != 4 or a[0] != linear(s0=1) or a[1] != b[0]:
        return None
    group_out = _group_out(c, a[1])
    if group_out is None or b[1] != (((("s%", 1, group_out), 1),) if group_out else linear(s1=1)):
        return None

    def flipped(r: Variable, taps: int) -> Index:
        return tuple(sorted(t for t in ((ONE, taps - 1), (r, -1)) if t[1]))

    if b[2:] != (flipped(("r", 1), kh), flipped(("r", 2), kw)):
        return None
    y, x = dict(a[2]), dict(a[3])
    if set(y) - {ONE} != {("s", 2), ("r", 1)} or set(x) - {ONE} != {("s", 3), ("r", 2)}:
        return None
    if y[("s", 2)] != 1 or x[("s", 3)] != 1 or y.get(ONE, 0) < 0 or x.get(ONE, 0) < 0:
        return None
    return y[("r", 1)], x[("r", 2)], y.get(ONE, 0), x.get(ONE, 0), group_out


def _is_conv2d_transpose(c: Contraction) -> bool:
    return _conv_transpose_params(c) is not None


def _conv2d_transpose(rw: _Rewrite, em: g2k._Emitter) -> str:
    """The gather loop nest over the spread input: output channels in
    parallel, per output pixel the reduction over the group's input
    channels and the flipped taps into a one-float accumulator."""
    c = rw.contraction
    params = _conv_transpose_params(c)
    assert params is not None  # checked by _is_conv2d_transpose
    dh, dw, top, left, group_out = params
    n, out_channels, oh, ow = c.spatial
    in_group, kh, kw = c.reduction
    spread, weight = c.a.buffer, rw.arg(c.b.arg)  # type: ignore[arg-type]
    epilogue = _Epilogue(c)
    with em.loop("n", n) as i_n, em.loop("o", out_channels, "parallel") as i_o:
        acc = em.alloc([1])
        acc.name_hint = "acc"
        with em.loop("oh", oh) as i_y, em.loop("ow", ow) as i_x:
            pixel = g2k._spatial([i_n, i_o, i_y, i_x])
            with em.kblock("conv2d_transpose_init", pixel):
                em.store(em.const(0.0, f32), acc, [em.index(0)])
            with (
                em.loop("ic", in_group) as i_c,
                em.loop("kh", kh) as i_kh,
                em.loop("kw", kw) as i_kw,
            ):
                bindings = pixel + [(i_c, REDUCE), (i_kh, REDUCE), (i_kw, REDUCE)]
                with em.kblock("conv2d_transpose", bindings) as (vn, vo, vy, vx, vc, vkh, vkw):
                    group = em.add(arith.DivSIOp(vo, em.index(group_out))) if group_out else None
                    local_o = em.add(arith.RemSIOp(vo, em.index(group_out))) if group_out else vo
                    channel = em.affine([(group, in_group), (vc, 1)]) if group is not None else vc
                    x = em.load_widened(
                        spread,
                        [vn, channel, em.affine([(vy, 1), (vkh, dh)], top),
                         em.affine([(vx, 1), (vkw, dw)], left)],
                    )
                    w = em.load_widened(
                        weight,
                        [channel, local_o, em.affine([(vkh, -1)], kh - 1),
                         em.affine([(vkw, -1)], kw - 1)],
                    )
                    zero = em.index(0)
                    total = em.add(arith.AddfOp(em.load(acc, [zero]), em.add(arith.MulfOp(x, w))))
                    em.store(total, acc, [zero])
            with em.kblock("conv2d_transpose_store", pixel) as vs:
                epilogue.emit_result(em, em.load(acc, [em.index(0)]), vs)
        em.add(memref.DeallocOp.get(acc))
    return "gather form over the spread input, output channels in parallel, weight read in place"


RULES: dict[str, tuple[Callable[[Contraction], bool], Callable[[_Rewrite, g2k._Emitter], str]]] = {
    "conv2d": (_is_conv2d, _conv2d),
    "conv2d_transpose": (_is_conv2d_transpose, _conv2d_transpose),
    "dense": (_is_dense, _dense),
    "matmul": (_is_matmul, _matmul),
}
"""Contraction name → (does the nest compute it, the micro-kernel rewrite)."""


@dataclass(frozen=True)
class KernelTensorizePass(KernelPass):
    """Rewrite naive conv2d/conv2d_transpose/dense/matmul contractions into micro-kernels."""

    name = "kernel-tensorize"

    ops: tuple[str, ...] = tuple(RULES)
    """The contractions rewritten (``conv2d``, ``conv2d_transpose``, ``dense``, ``matmul``)."""

    vector_bits: int = 0
    """Vector register width the tiles are shaped for; 0: this host's."""

    winograd_min_channels: int = 0
    """3×3 stride-1 conv2d nests with at least this many input and output
    channels become Winograd kernels, where the rule of
    :func:`~ember.lowering.winograd.winograd_transform` takes them; 0: none."""

    def kernel_step(self, ctx: Context, module: ModuleOp) -> KernelStep:
        unknown = [name for name in self.ops if name not in RULES]
        if unknown:
            raise PassError(
                f"kernel-tensorize: unknown op '{unknown[0]}' in ops=; "
                f"expected some of {', '.join(RULES)}"
            )
        if self.vector_bits < 0 or self.vector_bits % 32:
            raise PassError(
                "kernel-tensorize: vector-bits must be a positive multiple of 32 "
                f"(0: this host's), got {self.vector_bits}"
            )
        if self.winograd_min_channels < 0:
            raise PassError(
                "kernel-tensorize: winograd-min-channels must be 0 (off) or a "
                f"positive channel count, got {self.winograd_min_channels}"
            )
        bits = self.vector_bits or g2k.VectorTarget.host().bits
        target = g2k.VectorTarget(bits, winograd_min_channels=self.winograd_min_channels)
        packer = WeightPacker()  # a weight that kernels share is packed once

        def step(kernel: FuncOp) -> None:
            contraction = match_contraction(kernel)
            if contraction is None or contraction.name not in self.ops:
                return
            computes, rewrite = RULES[contraction.name]
            if computes(contraction):
                bound = _bound_callers(module, kernel, contraction.b.arg)
                packable = _read_only_in_product(kernel, contraction)
                rw = _Rewrite(kernel, contraction, target, bound, packable, packer, module)
                _replace_body(rw, rewrite)

        return step


def with_winograd_min_channels(
    schedule: Sequence[ModulePass], minimum: int
) -> list[ModulePass]:
    """``schedule`` with the ``winograd-min-channels`` of each
    ``kernel-tensorize`` set to ``minimum`` (the build option
    ``winograd_min_channels``)."""
    if minimum < 0:
        raise PassError(
            "winograd_min_channels must be 0 (off) or a positive channel count, "
            f"got {minimum}"
        )
    return [
        replace(p, winograd_min_channels=minimum) if isinstance(p, KernelTensorizePass) else p
        for p in schedule
    ]


def _replace_body(rw: _Rewrite, rewrite: Callable[[_Rewrite, g2k._Emitter], str]) -> None:
    """Build the micro-kernel in place of the naive nest (kept, detached,
    until the epilogue has been cloned from it), and say so; the ops before
    the nest stay, and so do those after it (deallocs, the return)."""
    kernel = rw.kernel
    block = kernel.body.block
    nest = rw.contraction.nest
    after = []
    while block.last_op is not nest:
        after.insert(0, block.last_op)
        block.last_op.detach()  # type: ignore[union-attr]
    nest.detach()
    em = g2k._Emitter(block)
    schedule = rewrite(rw, em)
    block.add_ops(after)
    nest.erase(safe_erase=False)
    kernel.update_function_type()
    name = kernel.sym_name.data
    remarks.applied(
        KernelTensorizePass.name,
        f"kernel @{name}: {rw.contraction.name} as a micro-kernel: {schedule}",
        [kernel],
        kernel=name,
        vector_bits=rw.target.bits,
    )
