"""export_library / load_module: the artifact format, fresh-process loading, corruption."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import ember
from ember.build import build
from ember.errors import RuntimeFailure
from ember.runtime.artifact import seal
from ember.runtime.graph_executor import GraphExecutor
from ember.runtime.module import (
    FORMAT_VERSION,
    ArtifactError,
    InterpModule,
    Module,
    load_module,
)

MLP = """
func.func @main(%data: tensor<2x8xf32>, %weight: tensor<4x8xf32>, %bias: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = graph.dense %data, %weight : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %1 = graph.bias_add %0, %bias : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = graph.relu %1 : tensor<2x4xf32>
  func.return %2 : tensor<2x4xf32>
}
"""

EXTERN = """
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = graph.call_extern "test_runtime_artifact.double"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
"""

RNG = np.random.default_rng(0)
DATA = RNG.standard_normal((2, 8)).astype(np.float32)
WEIGHT = RNG.standard_normal((4, 8)).astype(np.float32)
BIAS = RNG.standard_normal(4).astype(np.float32)


def run(lib: Module, **inputs: np.ndarray) -> np.ndarray:
    ex = GraphExecutor(lib)
    ex.run(**inputs)
    return ex.get_output(0).numpy()


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.ember"
    build(MLP, target="interp", params={"weight": WEIGHT, "bias": BIAS}).export_library(
        path
    )
    return path


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter: nothing registered, nothing cached."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# -- the format ------------------------------------------------------------------------


def test_artifact_layout_and_manifest(artifact: Path) -> None:
    assert sorted(p.name for p in artifact.iterdir()) == [
        "graph.mlir",
        "manifest.json",
        "params.npz",
    ]
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    assert (
        manifest["format"] == "ember-module"
        and manifest["format_version"] == FORMAT_VERSION
    )
    assert manifest["target"] == "interp"
    assert manifest["entry"]["name"] == "main"
    assert [i["name"] for i in manifest["entry"]["inputs"]] == [
        "data",
        "weight",
        "bias",
    ]
    assert manifest["entry"]["outputs"] == [
        {"name": "output0", "shape": [2, 4], "dtype": "float32"}
    ]
    assert manifest["params"] == ["bias", "weight"]
    assert set(manifest["files"]) == {"graph.mlir", "params.npz"}
    # The payload is the graph IR with params kept out of it.
    graph = ember.parse((artifact / "graph.mlir").read_text(encoding="utf-8"))
    assert "graph.constant" not in ember.to_text(graph)
    with np.load(artifact / "params.npz") as params:
        np.testing.assert_array_equal(params["weight"], WEIGHT)


def test_load_in_same_process(artifact: Path) -> None:
    lib = load_module(artifact)
    assert isinstance(lib, InterpModule)
    assert [s.name for s in lib.input_specs] == ["data"]
    expected = np.maximum(DATA @ WEIGHT.T + BIAS, 0)
    np.testing.assert_allclose(run(lib, data=DATA), expected, rtol=1e-5, atol=1e-6)
    assert isinstance(load_module(artifact / "manifest.json"), InterpModule)


def test_load_in_a_new_process(artifact: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", DATA)
    result = run_python(
        f"""
        import numpy as np
        from ember.runtime import GraphExecutor, cpu, load_module
        ex = GraphExecutor(load_module({str(artifact)!r}), cpu(0))
        ex.set_input("data", np.load({str(tmp_path / "data.npy")!r}))
        ex.run()
        np.save({str(tmp_path / "out.npy")!r}, ex.get_output(0).numpy())
        """
    )
    assert result.returncode == 0, result.stderr
    in_process = run(
        build(MLP, target="interp", params={"weight": WEIGHT, "bias": BIAS}), data=DATA
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), in_process)


def test_extern_names_resolve_at_load_in_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "extern.ember"
    build(EXTERN, target="interp").export_library(path)
    result = run_python(
        f"""
        import numpy as np
        from ember.errors import RuntimeFailure
        from ember.runtime import GraphExecutor, load_module, register_func
        try:
            load_module({str(path)!r})
        except RuntimeFailure as e:
            print("LOAD FAILED:", e)
        @register_func("test_runtime_artifact.double")
        def double(x, out):
            np.multiply(np.from_dlpack(x), 2, out=np.from_dlpack(out))
        ex = GraphExecutor(load_module({str(path)!r}))
        ex.run(x=np.ones((2, 8), np.float32))
        print("SUM", ex.get_output(0).numpy().sum())
        """
    )
    assert result.returncode == 0, result.stderr
    assert (
        "LOAD FAILED:" in result.stdout
        and "'test_runtime_artifact.double'" in result.stdout
    )
    assert "not registered" in result.stdout
    assert "SUM 32.0" in result.stdout


def test_export_replaces_an_old_artifact(artifact: Path) -> None:
    build(MLP, target="interp").export_library(artifact)
    lib = load_module(artifact)
    assert [s.name for s in lib.input_specs] == ["data", "weight", "bias"]
    assert not [
        p for p in artifact.parent.iterdir() if p.name.startswith(".")
    ]  # no staging left


def test_export_refuses_to_clobber_other_files(tmp_path: Path) -> None:
    lib = build(MLP, target="interp")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    with pytest.raises(ArtifactError, match="not an ember artifact"):
        lib.export_library(tmp_path / "notes")
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(ArtifactError, match="not an ember artifact"):
        lib.export_library(tmp_path / "file.bin")
    assert (tmp_path / "notes" / "todo.txt").read_text(encoding="utf-8") == "keep me"


# -- errors on load ----------------------------------------------------------------------


def edit_manifest(artifact: Path, **changes: object) -> None:
    """Change manifest fields and reseal it, as a forger would."""
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    manifest.update(changes)
    (artifact / "manifest.json").write_text(json.dumps(seal(manifest)))


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        load_module(tmp_path / "nowhere.ember")


def test_not_an_artifact(tmp_path: Path) -> None:
    (tmp_path / "plain.so").write_bytes(b"\x7fELF")
    with pytest.raises(ArtifactError, match="is a file"):
        load_module(tmp_path / "plain.so")
    with pytest.raises(ArtifactError, match="no manifest.json"):
        load_module(tmp_path)


def test_corrupt_manifest_json(artifact: Path) -> None:
    (artifact / "manifest.json").write_text('{"format": "ember-module", ')
    with pytest.raises(ArtifactError, match="corrupt manifest"):
        load_module(artifact)


def test_manifest_without_entry(artifact: Path) -> None:
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    del manifest["entry"]
    (artifact / "manifest.json").write_text(json.dumps(seal(manifest)))
    with pytest.raises(ArtifactError, match="corrupt manifest.*field entry is missing"):
        load_module(artifact)


def test_manifest_of_another_format(artifact: Path) -> None:
    edit_manifest(artifact, format="something-else")
    with pytest.raises(ArtifactError, match="does not declare format 'ember-module'"):
        load_module(artifact)


@pytest.mark.parametrize(
    "version, hint", [(FORMAT_VERSION + 1, "upgrade ember"), (0, "export it again")]
)
def test_wrong_format_version(artifact: Path, version: int, hint: str) -> None:
    edit_manifest(artifact, format_version=version)
    with pytest.raises(
        ArtifactError,
        match=f"format version {version}.*reads version {FORMAT_VERSION}; {hint}",
    ):
        load_module(artifact)


def test_unknown_target_in_manifest(artifact: Path) -> None:
    edit_manifest(artifact, target="tpu")
    with pytest.raises(ArtifactError, match="unknown target 'tpu'"):
        load_module(artifact)


def test_missing_payload(artifact: Path) -> None:
    (artifact / "graph.mlir").unlink()
    with pytest.raises(ArtifactError, match="graph.mlir is missing"):
        load_module(artifact)


def test_modified_payload_fails_its_checksum(artifact: Path) -> None:
    text = (artifact / "graph.mlir").read_text(encoding="utf-8")
    (artifact / "graph.mlir").write_text(text.replace("graph.relu", "graph.sigmoid"))
    with pytest.raises(ArtifactError, match="graph.mlir does not match its checksum"):
        load_module(artifact)


def test_truncated_params(artifact: Path) -> None:
    data = (artifact / "params.npz").read_bytes()
    (artifact / "params.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="params.npz does not match its checksum"):
        load_module(artifact)


def test_payload_with_invalid_ir_and_consistent_checksum(artifact: Path) -> None:
    """A payload that passes its checksum but is not IR still fails clearly."""
    import hashlib

    bad = b"func.func @main("
    (artifact / "graph.mlir").write_bytes(bad)
    manifest = json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["graph.mlir"]["sha256"] = hashlib.sha256(bad).hexdigest()
    manifest["files"]["graph.mlir"]["bytes"] = len(bad)
    (artifact / "manifest.json").write_text(json.dumps(seal(manifest)))
    with pytest.raises(ArtifactError, match="graph.mlir does not hold valid IR"):
        load_module(artifact)


def test_payload_names_cannot_escape_the_directory(artifact: Path) -> None:
    edit_manifest(artifact, payload=["../graph.mlir"])
    with pytest.raises(ArtifactError, match="invalid artifact file name"):
        load_module(artifact)


def test_copied_artifact_loads(artifact: Path, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "net"
    shutil.copytree(artifact, copy)
    np.testing.assert_allclose(
        run(load_module(copy), data=DATA), run(load_module(artifact), data=DATA)
    )


# -- a second backend through the same interface -------------------------------------


class RecordingBackend(InterpModule):
    """A stand-in for a compiled backend: its own target, payload name and metadata."""

    target = "test-backend"
    GRAPH_FILE = "program.txt"
    loaded_metadata: ClassVar[dict[str, object]] = {}

    def backend_metadata(self) -> dict[str, object]:
        return {"cpu": "any", "symbols": ["main"]}

    @classmethod
    def from_payload(cls, signature, params, extern_funcs, files, metadata):  # type: ignore[no-untyped-def]
        cls.loaded_metadata = dict(metadata)
        return super().from_payload(signature, params, extern_funcs, files, metadata)


@pytest.fixture
def backend_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backend registrations in a test are undone afterwards."""
    import ember.runtime.module as runtime_module

    monkeypatch.setattr(runtime_module, "_BACKENDS", dict(runtime_module._BACKENDS))
    monkeypatch.setattr(
        runtime_module, "_PLANNED_TARGETS", dict(runtime_module._PLANNED_TARGETS)
    )


def test_registered_backend_builds_exports_and_loads(
    backend_tables: None, tmp_path: Path
) -> None:
    from ember.runtime.module import available_targets, register_backend

    register_backend("test-backend", RecordingBackend)
    assert "test-backend" in available_targets()
    with pytest.raises(RuntimeFailure, match="already registered"):
        register_backend("test-backend", RecordingBackend)
    lib = build(MLP, target="test-backend", params={"weight": WEIGHT, "bias": BIAS})
    lib.export_library(tmp_path / "net")
    manifest = json.loads((tmp_path / "net" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["target"] == "test-backend" and manifest["payload"] == [
        "program.txt"
    ]
    assert manifest["backend"] == {"cpu": "any", "symbols": ["main"]}
    loaded = load_module(tmp_path / "net")
    assert isinstance(loaded, RecordingBackend)
    assert RecordingBackend.loaded_metadata == {"cpu": "any", "symbols": ["main"]}
    np.testing.assert_array_equal(run(loaded, data=DATA), run(lib, data=DATA))


def test_registering_a_planned_target_makes_it_available(backend_tables: None) -> None:
    from ember.runtime.module import register_backend

    with pytest.raises(RuntimeFailure, match="not available yet"):
        build(MLP, target="cuda")
    # Registered lazily, by import path, as a real backend would be.
    register_backend("cuda", "ember.runtime.module:InterpModule")
    assert type(build(MLP, target="cuda")) is InterpModule
    register_backend("cuda", RecordingBackend, override=True)
    assert isinstance(build(MLP, target="cuda"), RecordingBackend)
