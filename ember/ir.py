"""Text in, module out: ``ember.parse`` and friends.

Parsing and verification errors become :class:`ember.errors.IRError`, whose
message is xDSL's diagnostic (the source line with the failing place marked,
or the IR with the failing op marked).
"""

from __future__ import annotations

from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from ember.context import make_context
from ember.errors import IRError


def parse(text: str, *, name: str = "<string>", verify: bool = True) -> ModuleOp:
    """Parse MLIR text into a module and verify it.

    Raises :class:`IRError` with the diagnostic on malformed or ill-typed IR.
    """
    try:
        module = Parser(make_context(), text, name).parse_module()
    except ParseError as e:
        raise IRError(str(e)) from None
    if verify:
        verify_module(module)
    return module


def verify_module(module: ModuleOp) -> None:
    """Verify a module, turning verifier failures into :class:`IRError`.

    The message names the failing op and shows it with its function, instead
    of xDSL's dump of the whole module (which for a network with bound weights
    would be megabytes of text).
    """
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as e:
            message = str(e).removeprefix("Operation does not verify: ")
            raise IRError(f"error: {message}\n{describe_op(op)}") from None


def describe_op(op: Operation) -> str:
    """One op in custom syntax, with the function that holds it (for errors)."""
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    where = f"in @{func.sym_name.data}" if isinstance(func, FuncOp) else "at"
    out = StringIO()
    printer = Printer(stream=out)
    if op.regions:
        printer.print_string(op.name)
    else:
        printer.print_op(op)
    return f"  {where}: {out.getvalue().strip()}"


def to_text(module: ModuleOp, *, generic: bool = False) -> str:
    """Print a module (``str(module)`` does the same in custom form)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()
