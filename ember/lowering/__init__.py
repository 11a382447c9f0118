"""Lowerings from the graph dialect down to the ``llvm`` dialect.

This package's own namespace holds only the defaults that the driver's
options share with the lowerings (:class:`ember.compiler.CompileOptions`):
reading them must not import the lowerings and the xDSL dialects they
build, which a build served from the compilation cache never needs.
"""

MIN_PARALLEL_WORK = 1 << 16
"""Ops (:func:`~ember.lowering.kernel_to_llvm.loop_work`) below which
``ember.build`` keeps a parallel loop serial: ~10-30 µs of work on one core,
where a libgomp team's fork and join costs 1.5-8 µs on a busy 2-core
machine (see :mod:`ember.runtime.threads`)."""

COLD_WORK_FRACTION = 1e-4
"""A kernel doing less than this fraction of its program's work
(:func:`~ember.lowering.kernel_to_llvm.loop_work`, summed over the program's
kernels) is compiled for size (LLVM's ``optsize``): no vectorising or
unrolling, whose compile time it cannot repay.  Even ten times slower it
would cost under 0.1% of a run; ResNet-18's global average pool (1e-5 of
the work) took LLVM 0.2 s, 13% of O3, vectorised across 49-strided rows."""
