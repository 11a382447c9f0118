"""``KernelPass``: a schedule pass that rewrites each kernel on its own.

Most schedule passes (``kernel-pad-input``, ``kernel-tensorize``,
``kernel-parallelize``, ...) look at one kernel at a time: what they do to
a kernel depends on that kernel (and, for ``kernel-tensorize``, the
constants its calls pass), not on the other kernels.  Such a pass says so
by subclassing :class:`KernelPass` and writing :meth:`KernelPass.rewrite_kernel`
(or :meth:`KernelPass.kernel_step`, when the kernels share state, as the
weights ``kernel-tensorize`` packs once for every kernel that reads them):
as a ``ModulePass`` it rewrites every kernel in order, and a build can
take each kernel through the whole schedule before the next
(:func:`ember.compiler.scheduled_kernels`), so that LLVM compiles the first
kernels while Python schedules the others.  Both orders make the same
kernels (``tests/test_schedule.py``).

```python
from dataclasses import dataclass

from ember.passes.kernel_pass import KernelPass


@dataclass(frozen=True)
class CountLoops(KernelPass):
    name = "count-loops"

    def rewrite_kernel(self, kernel):
        ...  # change `kernel` (and what it alone reads), nothing else
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from ember.dialects.kernel import kernel_functions

KernelStep = Callable[[FuncOp], None]
"""The rewrite of one kernel (:meth:`KernelPass.kernel_step`)."""


@dataclass(frozen=True)
class KernelPass(ModulePass):
    """A schedule pass applied to the kernels one by one (module docstring)."""

    def kernel_step(self, ctx: Context, module: ModuleOp) -> KernelStep:
        """Check the options (a bad one raises before any kernel changes),
        then the rewrite of one kernel of ``module``: what the module's
        kernels share (a cache of packed weights) lives in it."""
        return self.rewrite_kernel

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        """Rewrite ``kernel`` in place (see :meth:`kernel_step`)."""
        raise NotImplementedError(f"{type(self).__name__} rewrites no kernel")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        step = self.kernel_step(ctx, op)
        for kernel in kernel_functions(op):
            step(kernel)
