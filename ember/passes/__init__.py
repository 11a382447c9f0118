"""ember's passes, one per file, registered in one lazy table.

``PASSES`` maps the command-line name (kebab-case) to a function that imports
the pass class, as xDSL's own registry does, so listing passes is cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
