"""``ember-run``: run a function of an IR file on .npy or random inputs.

The counterpart of ``mlir-cpu-runner`` and TVM's ``tvmc run``::

    ember-run examples/mlp.mlir --random-inputs --seed 0 --output out.npz
    ember-run net.mlir --input data=image.npy --input weight=random
    ember-run model.onnx --random-inputs --bench 20

An ``.onnx`` file is imported with ``ember.from_onnx`` and its initializers
are bound as constants, so only the model's real inputs are arguments, named
as in the model (``--input input.1=x.npy``).

Inputs are named by the entry function's argument names (``%data`` is
``data``; an unnamed argument ``%0`` is ``arg0``).  ``NAME=random`` draws a
seeded array of the argument's type; ``--random-inputs`` does so for every
argument not given.  Each output's type and a min/max/mean summary are
printed; ``--output`` saves them to an .npz file as ``output0``,
``output1``, …

By default the function is compiled to native code (``ember.build(...,
target="llvm")``) and run once; ``--interpret`` runs the reference
interpreter instead, and ``--bench N`` also reports the latency of N runs.
``--check-bounds`` compiles a debug build that tests every kernel index not
proven in bounds (``options={"bounds_check": True}``).  ``--target`` takes a
target string (``"llvm -mattr=-avx"``, ``"llvm -libs=blas"``, ``"interp"``):
``ember.build(..., target=…)``; code for a CPU this one is not fails with
the features it lacks.  ``--profile N``
prints ``GraphExecutor.profile``'s table: one row per kernel call (fused
ops, shape, median time, share, GFLOP/s, % of this machine's peak) and the
per-inference time outside kernels; ``--costs-out FILE`` also writes each
graph op's measured seconds, the file ``split-graph{balance=N costs=FILE}``
balances (``--threads N``: kernels on N threads, e.g. a stage's share).
Execution sits behind :func:`prepare` and the table :data:`ENGINES`, so
input handling and reporting do not depend on how a function runs.

A file with a ``pipeline.graph @entry``, or an exported pipeline, streams
``--count`` inputs through the pipeline executor and reports the
throughput (``--sequential``: stage after stage); ``--bench N`` adds the
latency line as for a function.  Inputs are gathered the same way, the
pipeline's global inputs being the arguments, so ``--random-inputs --seed S``
gives a pipeline the same arrays as a function with its signature.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute

from ember.dialects.graph import argument_name, numpy_dtype, tensor_type, type_str
from ember.driver import checked_stage_names, print_after
from ember.errors import EmberError
from ember.target import Target
from ember.limits import check_array
from ember.tools import read_module, remark_arguments, run_tool

if TYPE_CHECKING:
    from ember.runtime.graph_executor import BenchmarkResult, GraphExecutor

TOOL = "ember-run"

RANDOM = "random"
"""The input value that asks for random data instead of a file."""

Runner = Callable[[Sequence[np.ndarray]], list[np.ndarray]]
"""A prepared function: inputs in argument order -> one array per result."""

Engine = Callable[[ModuleOp, str, Mapping[str, Any] | None, str], Runner]
"""Prepares ``entry`` of a module once (e.g. compiles it for a target string,
with ``ember.build`` options) and returns a runner."""


def _interpreter(
    module: ModuleOp, entry: str, options: Mapping[str, Any] | None, target: str
) -> Runner:
    # No build option applies: the interpreter checks every index itself.
    from ember.interp import interpret

    return lambda inputs: interpret(module, entry, *inputs)


@dataclass
class CompiledRunner:
    """A :data:`Runner` over a ``GraphExecutor``, which ``--profile`` uses."""

    executor: GraphExecutor

    def __call__(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        executor = self.executor
        for name, value in zip(executor.input_names, inputs, strict=True):
            executor.set_input(name, value)
        executor.run()
        return [executor.get_output(i).numpy() for i in range(executor.num_outputs)]


def _compiled(
    module: ModuleOp, entry: str, options: Mapping[str, Any] | None, target: str
) -> Runner:
    from ember.build import build
    from ember.runtime.graph_executor import GraphExecutor

    lib = build(module, target=target, entry=entry, options=options)
    return CompiledRunner(GraphExecutor(lib))


ENGINES: dict[str, Engine] = {"llvm": _compiled, "interpret": _interpreter}
"""How a function can be executed, by name; the first one is the default."""


def prepare(
    module: ModuleOp,
    entry: str,
    engine: str = "llvm",
    options: Mapping[str, Any] | None = None,
    target: str = "llvm",
) -> Runner:
    """Get function ``entry`` of ``module`` ready to run on ``engine``
    (``options`` and ``target``: ``ember.build``'s, for the compiled engine)."""
    if engine not in ENGINES:
        raise EmberError(f"unknown engine '{engine}' (known: {', '.join(ENGINES)})")
    return ENGINES[engine](module, entry, options, target)


def bench(runner: Runner, inputs: Sequence[np.ndarray], repeat: int) -> str:
    """Median/min/mean latency of ``repeat`` runs after one warm-up run.

    Each run sets every input and reads every output, as a caller of the
    tool would; ``GraphExecutor.benchmark`` times ``run`` alone."""
    from ember.runtime.graph_executor import BenchmarkResult

    return describe_latency(BenchmarkResult.measure(lambda: runner(inputs), repeat))


def describe_latency(result: BenchmarkResult) -> str:
    """The ``--bench`` line, for a function and for a pipeline alike."""
    return (
        f"latency over {len(result.results)} runs: median {result.median_ms:.3f} ms, "
        f"min {result.min_ms:.3f} ms, mean {result.mean_ms:.3f} ms "
        "(end to end: inputs copied in, outputs copied out)"
    )


# --------------------------------------------------------------------------
# The entry function and its arguments
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Argument:
    """One argument of the entry function: its name, type and position."""

    name: str
    type: TensorType
    index: int

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.type.element_type)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())


def find_function(module: ModuleOp, entry: str, source: str) -> FuncOp:
    """The function ``@entry`` of ``module``; an error lists the ones there are."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
    if entry not in functions:
        known = ", ".join(f"@{name}" for name in functions) or "none"
        raise EmberError(f"no function @{entry} in {source} (functions: {known})")
    func = functions[entry]
    if func.is_declaration:
        raise EmberError(f"@{entry} in {source} is a declaration without a body")
    return func


def function_arguments(func: FuncOp) -> list[Argument]:
    """The arguments of ``func``, named by their SSA names (``arg<i>`` if unnamed)."""
    arguments = []
    for index, (block_arg, arg_type) in enumerate(
        zip(func.args, func.function_type.inputs.data)
    ):
        name = argument_name(func, index)
        arguments.append(Argument(name, _tensor_type(func, name, arg_type), index))
    return arguments


def _tensor_type(func: FuncOp, name: str, arg_type: Attribute) -> TensorType:
    if not isinstance(arg_type, TensorType):
        raise EmberError(
            f"argument '{name}' of @{func.sym_name.data} has type {arg_type}; "
            f"ember-run feeds tensors only"
        )
    try:
        numpy_dtype(arg_type.element_type)
    except ValueError as error:
        raise EmberError(
            f"argument '{name}' of @{func.sym_name.data}: {error}"
        ) from None
    return arg_type


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


def parse_input_specs(
    specs: Sequence[str], arguments: Sequence[Argument]
) -> dict[str, str]:
    """``["data=x.npy", "w=random"]`` as ``{"data": "x.npy", "w": "random"}``."""
    names = [a.name for a in arguments]
    given: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise EmberError(f"--input '{spec}' must be NAME=FILE.npy or NAME={RANDOM}")
        if name not in names:
            raise EmberError(
                f"--input '{spec}': the function has no argument '{name}' "
                f"(arguments: {', '.join(names) or 'none'})"
            )
        if name in given:
            raise EmberError(f"--input '{name}' is given twice")
        given[name] = value
    return given


def random_array(argument: Argument, seed: int) -> np.ndarray:
    """A reproducible array of the argument's type, drawn by
    :func:`ember.runtime.random_inputs.random_input` from ``seed`` and the
    argument's position: the same arrays for a function and for a pipeline
    with the same signature."""
    from ember.runtime.random_inputs import random_input

    what = f"random input '{argument.name}' ({type_str(argument.type)})"
    check_array(argument.shape, argument.dtype, what)
    return random_input(argument.shape, argument.dtype, seed, argument.index)


def load_array(path: str, what: str | None = None) -> np.ndarray:
    """The one array in .npy file ``path``."""
    what = what or f"input {path}"
    try:
        loaded = np.load(path, allow_pickle=False)
    except OSError as error:
        raise EmberError(f"{what}: cannot read: {error.strerror or error}") from None
    except ValueError as error:
        raise EmberError(f"{what}: not a .npy array file: {error}") from None
    if not isinstance(loaded, np.ndarray):
        loaded.close()
        raise EmberError(f"{what}: expected one .npy array, got an .npz archive")
    return loaded


def load_input(argument: Argument, path: str) -> np.ndarray:
    """The .npy file ``path``; it must have exactly the argument's shape and dtype."""
    what = f"input '{argument.name}' ({path})"
    loaded = load_array(path, what)
    expected = type_str(argument.type)
    if loaded.dtype != argument.dtype:
        raise EmberError(
            f"{what} has dtype {loaded.dtype}, expected {argument.dtype} ({expected})"
        )
    if loaded.shape != argument.shape:
        raise EmberError(
            f"{what} has shape {loaded.shape}, expected {argument.shape} ({expected})"
        )
    return loaded


def gather_inputs(
    arguments: Sequence[Argument],
    given: dict[str, str],
    random_rest: bool,
    seed: int,
) -> tuple[list[np.ndarray], list[str]]:
    """One array per argument, and a line describing where each came from."""
    missing = [a for a in arguments if a.name not in given and not random_rest]
    if missing:
        listed = ", ".join(f"{a.name} ({type_str(a.type)})" for a in missing)
        raise EmberError(
            f"missing input{'s' if len(missing) > 1 else ''}: {listed}; give "
            f"--input NAME=FILE.npy or NAME={RANDOM}, or --random-inputs"
        )
    arrays, origins = [], []
    for argument in arguments:
        source = given.get(argument.name, RANDOM)
        if source == RANDOM:
            arrays.append(random_array(argument, seed))
            origin = f"random, seed {seed}"
        else:
            arrays.append(load_input(argument, source))
            origin = source
        origins.append(f"input {argument.name}: {type_str(argument.type)} ({origin})")
    return arrays, origins


# --------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------


def output_name(index: int) -> str:
    """The key of output ``index`` in the printed summary and the .npz file."""
    return f"output{index}"


def summarize(name: str, array: np.ndarray) -> str:
    """``output0: tensor<1x10xf32>  min … max … mean …``."""
    text = f"{name}: {type_str(tensor_type(array.shape, array.dtype))}"
    if array.size == 0:
        return text + "  (empty)"
    values = array.astype(np.float64)
    return (
        f"{text}  min {values.min():.6g}  max {values.max():.6g}  "
        f"mean {values.mean():.6g}"
    )


def save_outputs(path: str, outputs: Sequence[np.ndarray]) -> None:
    try:
        # Through a file object: given a name, numpy would append ".npz" to it.
        with open(path, "wb") as stream:
            np.savez(stream, **{output_name(i): out for i, out in enumerate(outputs)})
    except OSError as error:
        raise EmberError(f"cannot write '{path}': {error.strerror or error}") from None


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=TOOL,
        description="Compile a function of an ember IR file to native code and "
        "run it (--interpret: the reference interpreter).",
        parents=[remark_arguments()],
    )
    parser.add_argument("input_file", help="the .mlir file ('-' reads stdin)")
    parser.add_argument(
        "--entry", default="main", help="function to run (default: main)"
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy|NAME=random",
        help="value of the argument %%NAME: an .npy file or 'random' (repeatable)",
    )
    parser.add_argument(
        "--random-inputs",
        action="store_true",
        help="fill every argument not given with --input with random data",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for random inputs, >= 0 (default 0)"
    )
    parser.add_argument(
        "--output", metavar="OUT.npz", help="save the outputs to an .npz file"
    )
    parser.add_argument(
        "--interpret",
        action="store_true",
        help="run with the reference interpreter instead of compiled code",
    )
    parser.add_argument(
        "--target",
        default="llvm",
        help="target string to build for, e.g. 'llvm -mattr=-avx' or "
        "'llvm -libs=blas' (default: llvm, this CPU)",
    )
    parser.add_argument(
        "--check-bounds",
        action="store_true",
        help="debug build: test every kernel index not proven in bounds at run "
        "time and report kernel, buffer and index (the interpreter always checks)",
    )
    parser.add_argument(
        "--print-after",
        default="",
        metavar="STAGE[,STAGE...]",
        help="print the IR after these compiler driver stages to stderr "
        "(parse, bind, graph, kernel, plan, llvm-dialect, llvm-ir, asm; or all); "
        "the build then skips the compilation cache",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="pipelines: run the stages one after another (the baseline)",
    )
    parser.add_argument(
        "--count",
        type=int,
        default=100,
        metavar="N",
        help="pipelines: how many inputs to stream through to measure throughput "
        "(default 100)",
    )
    parser.add_argument(
        "--bench",
        type=int,
        nargs="?",
        const=50,
        metavar="N",
        help="also time N runs after a warm-up (default 50) and report the latency",
    )
    parser.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=20,
        metavar="N",
        help="time every kernel over N runs (default 20) and print one row per "
        "kernel and the time outside kernels (compiled functions only)",
    )
    parser.add_argument(
        "--costs-out",
        default=None,
        metavar="FILE",
        help="with --profile: write each graph op's measured seconds to FILE, "
        "the costs= file of split-graph{balance=N costs=FILE}",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="run kernels' parallel loops on N threads (default: every core); "
        "profile with a pipeline stage's share to balance its stages",
    )
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _argument_parser().parse_args(argv)
    if args.bench is not None and args.bench < 1:
        raise EmberError(f"--bench needs a positive number of runs, got {args.bench}")
    if args.seed < 0:
        # numpy's generators take non-negative seeds only.
        raise EmberError(f"--seed needs a non-negative integer, got {args.seed}")
    target = str(Target.parse(args.target))  # a bad target fails before any work
    if args.profile is not None and args.profile < 1:
        raise EmberError(f"--profile needs a positive number of runs, got {args.profile}")
    if args.profile is not None and args.interpret:
        raise EmberError("--profile times compiled kernels; it cannot be used with --interpret")
    if args.costs_out is not None and args.profile is None:
        raise EmberError("--costs-out writes what --profile measures: give --profile too")
    if args.threads is not None:
        from ember.runtime import threads

        if args.threads < 1:
            raise EmberError(f"--threads needs a positive number, got {args.threads}")
        threads.set_num_threads(args.threads)
    stages = checked_stage_names([name for name in args.print_after.split(",") if name])
    if stages and args.interpret:
        raise EmberError("--print-after prints the compiler's stages; it cannot be used with --interpret")
    if _is_exported_pipeline(args.input_file):
        if stages:
            raise EmberError("--print-after: an exported pipeline is compiled already; it has no stages to print")
        return _run_pipeline(args)
    module, name = read_module(args.input_file)
    if _pipeline_graph(module, args.entry) is not None:
        with print_after(stages) if stages else nullcontext():  # each stage's build
            return _run_pipeline(args)
    func = find_function(module, args.entry, name)
    arguments = function_arguments(func)
    given = parse_input_specs(args.input, arguments)
    inputs, origins = gather_inputs(arguments, given, args.random_inputs, args.seed)
    for line in origins:
        print(line)
    options = {"bounds_check": True} if args.check_bounds else None
    if args.interpret and target != "llvm":
        raise EmberError("--interpret runs the reference interpreter: drop --target")
    engine = "interpret" if args.interpret else "llvm"
    with print_after(stages) if stages else nullcontext():
        runner = prepare(module, args.entry, engine, options, target)
    outputs = runner(inputs)
    report_outputs(outputs, args.output)
    if args.bench is not None:
        print(bench(runner, inputs, args.bench))
    if args.profile is not None:
        assert isinstance(runner, CompiledRunner)  # --interpret was refused above
        profile = runner.executor.profile(repeat=args.profile)
        print(profile)
        if args.costs_out is not None:
            from ember.pipeline.costs import op_costs, save_op_costs

            costs = op_costs(profile, module, entry=args.entry, target=target, options=options)
            save_op_costs(args.costs_out, costs)
            print(f"saved the measured times of {len(costs)} ops of @{args.entry} to {args.costs_out}")
    return 0


def report_outputs(outputs: Sequence[np.ndarray], path: str | None) -> None:
    """Print a summary of each output; save them to ``path`` (.npz) if given."""
    for index, output in enumerate(outputs):
        print(summarize(output_name(index), output))
    if path:
        save_outputs(path, outputs)
        plural = "s" if len(outputs) != 1 else ""
        print(f"saved {len(outputs)} output{plural} to {path}")


# --------------------------------------------------------------------------
# Pipelines: a pipeline.graph in a file, or an exported pipeline
# --------------------------------------------------------------------------


def _is_exported_pipeline(path: str) -> bool:
    from pathlib import Path

    return path != "-" and (Path(path).is_dir() or path.endswith(".json"))


def _pipeline_graph(module: ModuleOp, entry: str) -> object | None:
    return next(
        (
            op
            for op in module.ops
            if op.name == "pipeline.graph" and op.sym_name.data == entry  # type: ignore[attr-defined]
        ),
        None,
    )


def _run_pipeline(args: argparse.Namespace) -> int:
    """Stream ``--count`` inputs through a pipeline and report its throughput
    (and with ``--bench``, its latency).  Inputs are gathered as for a
    function, the pipeline's global inputs being the arguments."""
    from ember.pipeline import open_pipeline_file, run_pipeline

    if args.interpret:
        raise EmberError("--interpret does not apply to pipelines: stages run as built")
    if args.check_bounds:
        raise EmberError(
            "--check-bounds does not apply to pipelines: stages run as built"
        )
    if args.target != "llvm":
        raise EmberError("--target does not apply to pipelines: stages run as built")
    if args.profile is not None:
        raise EmberError(
            "--profile applies to a function: profile a stage's module with "
            "GraphExecutor.profile()"
        )
    if args.input_file == "-":
        raise EmberError("a pipeline is read from a file or an exported directory, not stdin")
    if args.count < 1:
        raise EmberError(f"--count needs a positive number of inputs, got {args.count}")
    lib = open_pipeline_file(args.input_file, entry=args.entry)
    arguments = [
        Argument(spec.name, tensor_type(spec.shape, spec.dtype), index)
        for index, spec in enumerate(lib.inputs)
    ]
    given = parse_input_specs(args.input, arguments)
    inputs, origins = gather_inputs(arguments, given, args.random_inputs, args.seed)
    for line in origins:
        print(line)
    result = run_pipeline(
        lib,
        {argument.name: array for argument, array in zip(arguments, inputs)},
        sequential=args.sequential,
        count=args.count,
        bench=args.bench or 0,
    )
    report_outputs(result.outputs, args.output)
    print(result.throughput)
    if result.latency is not None:
        print(describe_latency(result.latency))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: ``ember-run FILE [--entry main] [--input NAME=…] …``."""
    return run_tool(TOOL, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
