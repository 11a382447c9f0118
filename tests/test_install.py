"""How ember is installed: an editable install must resolve ``import ember``
to the real package even when the current directory holds a folder named
``ember`` (a checkout's parent, a data directory, a build output).

setuptools' default editable install appends an import hook to
``sys.meta_path``; the path-based finder runs first and takes such a folder
for a namespace package, so ``import ember`` succeeded with an empty module.
pyproject.toml's ``package-dir`` makes the install a plain ``.pth`` path
entry instead, where a regular package beats any namespace directory.  This
test checks the interpreter running the suite, so it needs ember installed
with ``pip install -e .`` from the current pyproject.toml.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest


def _editable_project() -> Path:
    """The project directory of ember's editable install, or skip."""
    # A checkout on PYTHONPATH shows its own ember.egg-info first; pip's
    # record of how ember was installed is the one with a direct_url.json.
    for dist in metadata.distributions(name="ember"):
        info = json.loads(dist.read_text("direct_url.json") or "{}")
        if info.get("dir_info", {}).get("editable"):
            return Path(unquote(urlparse(info["url"]).path))
    pytest.skip("ember is not installed in editable mode (pip install -e .)")


def test_editable_install_is_not_shadowed_by_an_ember_folder(tmp_path: Path) -> None:
    project = _editable_project()
    (tmp_path / "ember").mkdir()  # no __init__.py: a namespace package candidate
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", "import ember; print(ember.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    origin = result.stdout.strip()
    assert origin == str(project / "ember" / "__init__.py"), (
        f"import ember found {origin!r} instead of {project}/ember: the editable "
        "install uses an import hook; reinstall with `pip install -e .` so that "
        "pyproject.toml's package-dir takes effect"
    )
