"""``ember-opt``: parse, verify, transform and print IR (ember's ``mlir-opt``).

Built on xDSL's ``xDSLOptMain``, which already knows ember's dialects and
passes through the ``xdsl.universe`` entry point, so ``ember-opt`` and stock
``xdsl-opt`` accept the same IR and the same ``-p`` pipelines.  What this
subclass adds is the driver behaviour ember promises its users:

- every mistake (malformed text, unknown op, an op that does not verify, an
  unknown pass or option, a missing file) is one diagnostic with its source
  location on stderr and exit code 1 — never a Python traceback;
- verifier failures point at the op's line in the input
  (``file.mlir:3:3: error: graph.dense: …``, the column of ``%0``, as in
  MLIR) instead of dumping the whole module in generic form (megabytes for a
  network with bound weights);
- with ``--split-input-file`` every chunk is processed, as ``mlir-opt`` does;
  with ``--verify-diagnostics`` diagnostics go to stdout and the exit code is
  0, so lit tests can FileCheck them (xDSL's convention);
- ``FILE`` may be ``-`` for stdin, a ``.onnx`` model (imported with
  ``ember.from_onnx``, its initializers bound as constants), and any other
  extension is read as MLIR text;
- ``--help`` lists ember's passes with one-line descriptions, importing only
  the pass modules (never llvmlite or CUDA).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from io import BytesIO
from typing import IO, Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass, get_pass_option_infos
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ShrinkException
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from ember import __version__
from ember.errors import EmberError, PassError
from ember.ir import ParseDiagnostic, parse_source, verify_with_locations
from ember.tools import (
    as_diagnostic,
    is_onnx_path,
    onnx_module,
    read_bytes,
    read_source,
    remark_arguments,
    run_tool,
)

TOOL = "ember-opt"


# --------------------------------------------------------------------------
# --help: ember's passes with their descriptions
# --------------------------------------------------------------------------


def describe_passes(passes: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    """One line per pass (name and the first docstring line), then its options."""
    if not passes:
        return "ember passes: none registered yet (ember.passes.PASSES is empty)\n"
    width = max(len(name) for name in passes) + 2
    lines = ["ember passes (-p 'name{option=value ...},name2'):"]
    for name in sorted(passes):
        pass_class = passes[name]()
        summary = (pass_class.__doc__ or "").strip().split("\n", 1)[0]
        lines.append(f"  {name.ljust(width)}{summary}")
        for option in get_pass_option_infos(pass_class):
            default = option.default_value
            default = "" if default is None else f" = {default}"
            option_name = option.name.replace("_", "-")
            # Under `from __future__ import annotations` the type is a string.
            option_type = option.expected_type.strip("'\"")
            lines.append(f"  {'':{width}}  {option_name}: {option_type}{default}")
    return "\n".join(lines) + "\n"


def _ember_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from ember.passes import PASSES

    return dict(PASSES)


# --------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------


class EmberOptMain(xDSLOptMain):
    """``xDSLOptMain`` with located diagnostics and no tracebacks on user errors.

    Construction raises :class:`EmberError` for a bad pipeline; :meth:`run`
    returns the exit code.
    """

    version_format = f"ember-opt (ember {__version__}) built on xdsl {{xdsl_version}}"

    def __init__(self, args: Sequence[str] | None = None) -> None:
        # Set before super().__init__, which builds the pipeline and its callback.
        self._op_spans: Mapping[Operation, Span[Any]] = {}
        self._value_names: Mapping[SSAValue, str] = {}
        self._pass_start = time.perf_counter()
        self._running: ModulePass | None = None
        super().__init__(description="ember modular optimizer driver", args=args)

    # ---- registration ------------------------------------------------------

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        # The entry point registers ember's dialects when ember is installed;
        # running from a source tree without it must still work.
        from ember.universe import EMBER_DIALECTS

        known = set(self.ctx.registered_dialect_names)
        for name, factory in EMBER_DIALECTS.items():
            if name not in known:
                self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        # parse_chunk reads ONNX itself (it knows the file name for messages).
        self.available_frontends["onnx"] = lambda stream: onnx_module(
            stream.read(), self.get_input_name()
        )

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in _ember_passes().items():
            self.available_passes.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # Listed for --help; run_tool takes these flags out of argv first.
        arg_parser._add_container_actions(remark_arguments())
        # Append ember's pass list to --help, built only when help is shown
        # (listing imports every pass module).  argparse offers no lazy epilog,
        # so this one parser's format_help is wrapped.
        format_argument_help = arg_parser.format_help

        def format_help_with_passes() -> str:
            return format_argument_help() + "\n" + describe_passes(_ember_passes())

        arg_parser.format_help = format_help_with_passes  # type: ignore[method-assign]

    # ---- pipeline ------------------------------------------------------------

    def setup_pipeline(self) -> None:
        # ember.passes.pipeline is the one reader of pipeline text, so
        # ember-opt, ember.apply_passes and ember.build give the same
        # diagnostics (PassError) for a malformed pipeline, an unknown pass
        # or a bad option.
        from ember.passes.pipeline import build_pipeline

        self.pipeline = build_pipeline(
            self.args.passes, self._between_passes, self.available_passes
        )

    def _between_passes(
        self,
        previous: ModulePass | None,
        module: ModuleOp,
        following: ModulePass | None,
    ) -> None:
        """Timing, ``--print-between-passes`` and verification after each pass."""
        if self.args.time_passes and previous is not None:
            duration = time.perf_counter() - self._pass_start
            print(f"Pass {previous.name} took {duration} seconds")
        # The input was verified with locations right after parsing.
        if previous is not None and not self.args.disable_verify:
            context = f"IR after pass '{previous.name}' does not verify: "
            verify_with_locations(module, self._op_spans, context, self._value_names)
        between = previous is not None and following is not None
        if between and self.args.print_between_passes:
            print(f"IR after {previous.name}:")
            Printer(stream=sys.stdout).print_op(module)
            print("\n\n\n")
        self._running = following
        self._pass_start = time.perf_counter()

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            self.pipeline.apply(self.ctx, prog)
        except EmberError:
            raise
        except DiagnosticException as error:
            # xDSL passes report failures this way (op.emit_error, PassFailedException).
            name = self._running.name if self._running is not None else "?"
            raise PassError(f"pass '{name}' failed: {error}") from None

    # ---- input and parsing --------------------------------------------------

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        path = self.args.input_file
        if path is None or path == "-":
            path, extension = "-", "mlir"
        else:
            extension = path.rsplit(".", 1)[-1] if "." in path else ""
        # mlir-opt reads any file as MLIR text; so do we, unless a frontend
        # is registered for the extension, or it is an ONNX model.
        onnx = path != "-" and is_onnx_path(path)
        if onnx or (extension in self.available_frontends and extension != "mlir"):
            return BytesIO(read_bytes(path)), "onnx" if onnx else extension
        # Checked as a whole (UTF-8, no NUL, BOM skipped) before
        # --split-input-file cuts it, so positions are the file's own.
        text, _ = read_source(path)
        return BytesIO(text.encode("utf-8")), "mlir"

    def get_input_name(self) -> str:
        path = self.args.input_file
        return "<stdin>" if path in (None, "-") else path

    def prepare_output(self) -> IO[str]:
        try:
            return super().prepare_output()
        except OSError as error:
            raise EmberError(
                f"cannot write output file '{self.args.output_file}': {error.strerror}"
            ) from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if file_extension == "onnx":
            return onnx_module(chunk.read(), self.get_input_name())
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        parsed = parse_source(
            chunk.read(),
            self.get_input_name(),
            ctx=self.ctx,
            line_offset=start_offset,
            implicit_module=not self.args.no_implicit_module,
            verify=not self.args.disable_verify,
        )
        self._op_spans = parsed.op_spans
        self._value_names = parsed.value_names
        return parsed.module

    # ---- the run loop --------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        """Process every chunk; return the exit code."""
        chunks, extension = self.prepare_input()
        output = self.prepare_output()
        failed = False
        try:
            for index, (chunk, offset) in enumerate(chunks):
                if index > 0:
                    output.write("// -----\n")
                try:
                    module = self.parse_chunk(chunk, extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except EmberError as error:
                    failed |= not self._report(error)
                finally:
                    chunk.close()
                output.flush()
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        return 1 if failed else 0

    def _report(self, error: EmberError) -> bool:
        """Print a diagnostic; True when the flags say it was expected."""
        expected = self.args.verify_diagnostics or (
            self.args.parsing_diagnostics and isinstance(error, ParseDiagnostic)
        )
        text = as_diagnostic(str(error))
        sys.stdout.flush()
        print(text, file=sys.stdout if expected else sys.stderr, flush=True)
        return expected


def _main(argv: Sequence[str] | None) -> int:
    return EmberOptMain(args=argv).run()


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: ``ember-opt FILE [-p PIPELINE] [options]``."""
    return run_tool(TOOL, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
