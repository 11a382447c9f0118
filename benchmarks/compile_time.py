"""Where a cold ``ember.build`` spends its time, stage by stage; and a warm one.

    python benchmarks/compile_time.py --workloads resnet18 [--target "llvm -mattr=-avx512f"]

For each workload, in fresh processes (so that imports a build triggers
are counted, as a user's first build pays them):

* ``cold``: ``ember.build(..., cache=False)``, timed whole;
* the same build taken apart into the driver's stages (``ember.compiler``:
  graph passes, kernel lowering, llvm-dialect lowering, xDSL's translation
  to LLVM IR, LLVM's O2, code generation, linking), each timed, with the
  module translated and compiled whole on one thread (where the CPU goes),
  with Python's automatic garbage collection paused as ``ember.build``
  pauses it (:func:`ember.runtime.memory.collection_paused`);
* the build's own way of running the stages from the kernel stage on:
  each kernel scheduled, lowered, printed as LLVM IR and handed to LLVM in
  parts on ember's thread count while Python schedules and lowers the
  next (``ember.compiler.scheduled_kernels``,
  ``ember.backends.cpu.emit_program_object``), timed together;
* ``warm``: ``ember.build`` served from a fresh on-disk compilation cache
  (``EMBER_CACHE_DIR`` in a temporary directory, filled by one build first;
  a second build that compiles is an error, not a row).

The stages run after their imports, so their sum is below ``cold`` by what
a first build spends importing the compiler (a user's first build pays it).

Both CPU time (``time.process_time``: far less sensitive to a loaded
machine) and wall time are printed.  Nothing is asserted: the goals
(resnet18 cold <= 1.5 s, warm <= 0.3 s) are read from the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

COLD = """
import json, sys, time
import ember
from ember.testing import workloads
module, params = workloads.get(sys.argv[1])
cpu, wall = time.process_time(), time.perf_counter()
ember.build(module, target=sys.argv[2], params=params, cache=False)
print(json.dumps({"cold": [time.process_time() - cpu, time.perf_counter() - wall]}))
"""

STAGES = """
import json, sys, time
import ember
from ember import compiler
from ember.backends import cpu as backend
from ember.backends.cpu import _digest_global
from ember.build import _bind_params
from ember.runtime import jit
from ember.runtime.cpu import pack_constants
from ember.runtime.memory import collection_paused
from ember.runtime.module import signature_of
from ember.target import Target
from ember.testing import workloads
module, params = workloads.get(sys.argv[1])
collection_paused().__enter__()  # as in ember.build
times = {}
clock = [time.process_time(), time.perf_counter()]
def lap(stage):
    cpu, wall = time.process_time(), time.perf_counter()
    times[stage] = [cpu - clock[0], wall - clock[1]]
    clock[:] = [cpu, wall]
options = compiler.CompileOptions().for_target(Target.parse(sys.argv[2]))
bound = _bind_params(signature_of(module, options.entry), params, copy=False)
graph = compiler.to_graph(module, bound, options)
lap("graph passes")
kernel = compiler.to_kernel(graph, options, annotate=True, copy=False)
lap("kernel lowering")
program = compiler.to_llvm_dialect(kernel, options, copy=False)
lap("llvm-dialect lowering")
pack_constants(program.layout, program.constants)
program.module.body.block.add_op(_digest_global(program.layout))
lap("pack constants")
text = backend.translate(program.module, options.target)
lap("translate to LLVM IR")
optimized = backend.optimize(text, options.target)
lap("LLVM O2")
machine = jit._shared_target_machine(options.target)
code = machine.emit_object(jit._llvm().parse_assembly(optimized))
lap("code generation")
jit.load_object(code, optimized, options.target)
lap("link (MCJIT)")
print(json.dumps(times))
"""

PARTS = """
import json, sys, time
from ember import compiler
from ember.backends import cpu as backend
from ember.backends.cpu import _digest_global
from ember.build import _bind_params
from ember.runtime.cpu import pack_constants
from ember.runtime.memory import collection_paused
from ember.runtime.module import signature_of
from ember.target import Target
from ember.testing import workloads
module, params = workloads.get(sys.argv[1])
collection_paused().__enter__()  # as in ember.build
options = compiler.CompileOptions().for_target(Target.parse(sys.argv[2]))
bound = _bind_params(signature_of(module, options.entry), params, copy=False)
graph = compiler.to_graph(module, bound, options)
cpu, wall = time.process_time(), time.perf_counter()
def entry(module):
    compiler.plan_entry(module, options.entry)
    layout, constants = compiler.lower_entry(module, options)
    pack_constants(layout, constants)
    return [_digest_global(layout)]
kernels = compiler.scheduled_kernels(graph, options, annotate=True)
backend.emit_program_object(graph, options, entry, kernels)
times = [time.process_time() - cpu, time.perf_counter() - wall]
print(json.dumps({"parts": times}))
"""

WARM = """
import json, sys, time
import ember
from ember.backends import cpu as backend
from ember.testing import workloads
module, params = workloads.get(sys.argv[1])
compiled = []
emit = backend._compile_parts
backend._compile_parts = lambda *args, **kwargs: compiled.append(1) or emit(*args, **kwargs)
cpu, wall = time.process_time(), time.perf_counter()
ember.build(module, target=sys.argv[3], params=params)
times = [time.process_time() - cpu, time.perf_counter() - wall]
print(json.dumps({sys.argv[2]: times, "compiled": len(compiled)}))
"""


def measure(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, list[float]]:
    """Run ``code`` in a fresh interpreter; its last output line is JSON."""
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        raise SystemExit(f"compile_time.py: {args[0]} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def rows(workload: str, target: str) -> list[tuple[str, float, float]]:
    """(what, CPU s, wall s) for one workload built for ``target``."""
    table = [("cold ember.build", *measure(COLD, workload, target)["cold"])]
    stages = measure(STAGES, workload, target)
    table += [(f"  {stage}", cpu, wall) for stage, (cpu, wall) in stages.items()]
    table.append(
        ("  sum of stages", sum(c for c, _ in stages.values()), sum(w for _, w in stages.values()))
    )
    # Not in the sum: the stages from the kernel stage on again, as the build runs them.
    streamed = measure(PARTS, workload, target)["parts"]
    table.append(("  the build's way: streamed, threads", *streamed))
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "EMBER_CACHE": "1", "EMBER_CACHE_DIR": directory}
        measure(WARM, workload, "fill", target, env=env)
        warm = measure(WARM, workload, "warm", target, env=env)
        if warm["compiled"]:
            raise SystemExit(f"compile_time.py: the second build of {workload} compiled: no cache hit")
        table.append(("warm ember.build (cache hit)", *warm["warm"]))
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="resnet18", help="comma-separated names")
    parser.add_argument(
        "--target",
        default="llvm",
        help='what ember.build compiles for (default "llvm", this CPU; e.g. '
        '"llvm -mattr=-avx512f" for AVX2 code)',
    )
    args = parser.parse_args(argv)
    from ember.errors import EmberError
    from ember.target import Target
    from ember.testing import workloads

    try:
        Target.parse(args.target)
    except EmberError as error:
        parser.error(str(error))

    for workload in args.workloads.split(","):
        if workload not in workloads.NAMES:
            parser.error(f"unknown workload {workload!r} (known: {', '.join(workloads.NAMES)})")
    for workload in args.workloads.split(","):
        title = f"{workload} ({args.target}):"
        print(f"{title:<36} {'CPU s':>8} {'wall s':>8}")
        for what, cpu, wall in rows(workload, args.target):
            print(f"  {what:<34} {cpu:8.3f} {wall:8.3f}")


if __name__ == "__main__":
    main()
