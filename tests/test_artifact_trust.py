"""Exported artifacts are data we validate: damaged, edited, forged or hostile
files give an ArtifactError naming the file and field, never a crash or a hang.

Loads that could crash the process if a check were missing (anything that
reaches native code) run in a subprocess, so a regression fails the test
instead of killing the test run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember.pipeline import load_library, split_graph
from ember.pipeline import build as build_pipeline
from ember.runtime.artifact import seal
from ember.runtime.elf import read_object
from ember.testing import workloads

# A padded conv: a parallel loop, so the object has relocations and needs
# GOMP_parallel and ember_num_threads from the process.
CONV = """
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %c : tensor<1x3x4x4xf32>
}
"""
WEIGHT = np.random.default_rng(0).standard_normal((3, 2, 3, 3)).astype(np.float32)

LOAD_AND_RUN = """
import sys
import numpy as np
import ember
try:
    if sys.argv[2] == "pipeline":
        ember.pipeline.load_library(sys.argv[1])
    else:
        lib = ember.load_module(sys.argv[1])
        ex = ember.GraphExecutor(lib, ember.cpu(0))
        for spec in lib.input_specs:
            ex.set_input(spec.name, np.zeros(spec.shape, spec.dtype))
        ex.run()
    print("LOADED")
except ember.ArtifactError as error:
    print("ARTIFACT_ERROR:", error)
"""


def load_elsewhere(path: Path, kind: str = "module", expect_error: bool = True) -> str:
    """Load (and run) ``path`` in a fresh process; what it printed: its
    ArtifactError message, or LOADED."""
    result = subprocess.run(
        [sys.executable, "-c", LOAD_AND_RUN, str(path), kind],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (
        f"loading crashed the process (status {result.returncode}):\n{result.stderr[-3000:]}"
    )
    expected = "ARTIFACT_ERROR:" if expect_error else "LOADED"
    assert expected in result.stdout, result.stdout + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def exported_conv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conv") / "conv.ember"
    ember.build(CONV, target="llvm", params={"w": WEIGHT}).export_library(path)
    return path


@pytest.fixture
def conv(exported_conv: Path, tmp_path: Path) -> Path:
    """A fresh copy of the llvm artifact, for one test to damage."""
    return Path(shutil.copytree(exported_conv, tmp_path / "conv.ember"))


@pytest.fixture
def interp(tmp_path: Path) -> Path:
    path = tmp_path / "interp.ember"
    ember.build(CONV, target="interp", params={"w": WEIGHT}).export_library(path)
    return path


def manifest_of(path: Path) -> dict[str, Any]:
    return json.loads((path / "manifest.json").read_text(encoding="utf-8"))


def forge(
    path: Path,
    change: Callable[[dict[str, Any]], None] = lambda manifest: None,
    **files: bytes,
) -> None:
    """A deliberate forgery: write ``files`` (``program_o=…`` for program.o),
    record their checksums, apply ``change`` to the manifest, and reseal it."""
    manifest = manifest_of(path)
    for key, data in files.items():
        name = key.replace("_", ".", 1)
        (path / name).write_bytes(data)
        manifest["files"][name] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(seal(manifest)))


def set_field(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        target = document
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


# -- every file is covered by the integrity check, the manifest included -----------


def test_intact_artifact_loads_and_runs(conv: Path) -> None:
    load_elsewhere(conv, expect_error=False)


@pytest.mark.parametrize("fixture", ["conv", "interp"])
def test_an_edited_manifest_fails_its_own_checksum(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    path: Path = request.getfixturevalue(fixture)
    manifest = manifest_of(path)
    manifest["entry"]["inputs"][0]["shape"] = [1, 2, 2, 2]
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        ember.ArtifactError, match=r"manifest\.json: its content does not match its own sha256"
    ):
        ember.load_module(path)


# -- forged manifests: every field is cross-checked against the payload ------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_field("entry", "inputs", 0, "shape", value=[1, 2, 64, 64]),
         r"entry inputs \(float32\[1, 2, 64, 64\]\) are not the inputs program\.o was compiled for"),
        (set_field("entry", "inputs", 0, "dtype", value="float64"),
         r"entry inputs .* are not the inputs program\.o"),
        (set_field("entry", "outputs", 0, "shape", value=[1, 3, 64, 64]),
         r"entry outputs .* are not the outputs program\.o"),
        (set_field("entry", "inputs", 1, "shape", value=[3, 2, 1, 1]),
         r"param 'w' .* does not match the entry signature"),
        (set_field("entry", "name", value="other"),
         r"names entry @other, but program\.o was compiled for @main"),
        (set_field("files", "program.o", "bytes", value=10**6),
         r"program\.o does not match its checksum \(it has \d+ bytes, the manifest says 1000000"),
        (set_field("backend", "features", value="avx2"),
         r"field backend\.features must be a list"),
    ],
    ids=["input-shape", "input-dtype", "output-shape", "param-shape", "entry-name",
         "file-size", "backend-type"],
)
def test_forged_manifest_fields_are_refused(conv: Path, change, message: str) -> None:
    forge(conv, change)
    with pytest.raises(ember.ArtifactError, match=message):
        ember.load_module(conv)


def test_forged_manifest_shape_fails_in_a_fresh_process_without_crashing(conv: Path) -> None:
    forge(conv, set_field("entry", "inputs", 0, "shape", value=[1, 2, 1, 1]))
    assert "are not the inputs program.o was compiled for" in load_elsewhere(conv)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_field("entry", "inputs", 0, "shape", value=[1, 2, 8, 8]), "has another signature"),
        (set_field("extern_funcs", value=["os.system"]),
         r"it calls \[\], the manifest lists \[os\.system\] as extern_funcs"),
    ],
    ids=["shape", "externs"],
)
def test_forged_interp_manifest_is_refused(interp: Path, change, message: str) -> None:
    forge(interp, change)
    with pytest.raises(ember.ArtifactError, match=f"graph.mlir does not match the manifest: .*{message}"):
        ember.load_module(interp)


# -- forged payloads: the layout and the object are checked before MCJIT sees them ----


def test_a_deeply_nested_layout_is_refused(conv: Path) -> None:
    forge(conv, layout_json=b"[" * 100_000)
    with pytest.raises(ember.ArtifactError, match=r"layout\.json: the JSON is nested too deeply"):
        ember.load_module(conv)


def edit_layout(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    layout = json.loads((path / "layout.json").read_text(encoding="utf-8"))
    change(layout)
    forge(path, layout_json=json.dumps(layout).encode())


@pytest.mark.parametrize(
    "change",
    [
        lambda layout: layout.update(workspace_bytes=layout["workspace_bytes"] + 64),
        set_field("inputs", 0, "shape", value=[1, 2, 1, 1]),
        set_field("symbol", value="omp_outlined_never_defined"),
    ],
    ids=["workspace", "input-shape", "symbol"],
)
def test_a_layout_that_does_not_describe_the_code_is_refused(conv: Path, change) -> None:
    edit_layout(conv, change)
    with pytest.raises(
        ember.ArtifactError,
        match=r"layout\.json does not describe program\.o|program\.o defines no function",
    ):
        ember.load_module(conv)


def test_a_layout_and_manifest_forged_together_fail_in_a_fresh_process(conv: Path) -> None:
    """Shapes edited consistently in manifest and layout would overflow buffers."""
    edit_layout(conv, set_field("inputs", 0, "shape", value=[1, 2, 1, 1]))
    forge(conv, set_field("entry", "inputs", 0, "shape", value=[1, 2, 1, 1]))
    assert "layout.json does not describe program.o" in load_elsewhere(conv)


def _object(path: Path) -> bytearray:
    return bytearray((path / "program.o").read_bytes())


def _relocation_section_offset(data: bytearray) -> int:
    obj = read_object(bytes(data), "x86_64", "program.o")
    return next(s.offset for s in obj.sections if s.kind == 4 and s.size)


def _with(data: bytearray, offset: int, packed: bytes) -> bytes:
    data[offset : offset + len(packed)] = packed
    return bytes(data)


OBJECT_FORGERIES: dict[str, tuple[Callable[[bytearray], bytes], str]] = {
    "garbage": (lambda d: b"hello, world " * 40, "no ELF header"),
    "elf-magic-only": (lambda d: b"\x7fELF" + bytes(200), "not a 64-bit ELF object"),
    "truncated": (lambda d: bytes(d[: len(d) // 2]), "lies past the end of the file"),
    "machine": (lambda d: _with(d, 18, struct.pack("<H", 40)), "built for ELF machine 40"),
    "section-table": (
        lambda d: _with(d, 0x28, struct.pack("<Q", 10**9)),
        "section header table lies past the end",
    ),
    "relocation-type": (
        lambda d: _with(d, _relocation_section_offset(d) + 8, struct.pack("<I", 3)),
        "has type 3, which the JIT linker does not implement",
    ),
    "relocation-offset": (
        lambda d: _with(d, _relocation_section_offset(d), struct.pack("<Q", 2**40)),
        "patches past the end of its section",
    ),
    "relocation-addend": (
        lambda d: _with(d, _relocation_section_offset(d) + 16, struct.pack("<q", 2**40)),
        "points outside the section of its symbol",
    ),
    "unresolved-symbol": (
        lambda d: bytes(d).replace(b"clock_gettime\0", b"clock_gettimx\0"),
        "needs clock_gettimx, which this process does not provide",
    ),
    "no-layout-record": (
        lambda d: bytes(d).replace(b"__ember_layout_sha256\0", b"__ember_layout_sha257\0"),
        "records no frame layout",
    ),
}


@pytest.mark.parametrize("forgery", list(OBJECT_FORGERIES))
def test_a_forged_object_file_is_refused_without_crashing(conv: Path, forgery: str) -> None:
    damage, message = OBJECT_FORGERIES[forgery]
    forge(conv, program_o=damage(_object(conv)))
    assert message in load_elsewhere(conv)


def npz_with_a_forged_header(name: str, shape: tuple[int, ...], data: bytes) -> bytes:
    """An .npz whose array ``name`` claims ``shape`` but holds ``data``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as npz:
        npz.writestr(f"{name}.npy", header.getvalue() + data)
    return archive.getvalue()


@pytest.mark.parametrize("size", [0, 64, 10**6])
def test_constants_of_another_size_are_refused(conv: Path, size: int) -> None:
    """constants.bin is mapped, not parsed: its size must be what the
    layout's constants take, so no view reaches past the file."""
    forge(conv, constants_bin=bytes(size))
    with pytest.raises(
        ember.ArtifactError,
        match=rf"constants\.bin has {size} bytes; the \d+ constants layout\.json lists take \d+",
    ):
        ember.load_module(conv)


def test_a_truncated_params_archive_with_a_matching_checksum(interp: Path) -> None:
    data = (interp / "params.npz").read_bytes()
    forge(interp, params_npz=data[: len(data) // 2])
    with pytest.raises(ember.ArtifactError, match=r"params\.npz is not a valid params archive"):
        ember.load_module(interp)


def test_a_forged_npy_header_in_load_params_is_refused() -> None:
    forged = npz_with_a_forged_header("w", (9,), bytes(16))
    with pytest.raises(ember.ArtifactError, match=r"header says float32\[9\] \(36 bytes\) but it holds 16"):
        ember.load_params(forged)


# -- garbled manifests: one error class, the file and field named ------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_field("entry", "inputs", 0, "shape", value="1x2"),
         r"field entry\.inputs\[0\]\.shape must be a list, got a string"),
        (set_field("entry", "inputs", 0, "shape", value=[1, -2, 4, 4]),
         r"field entry\.inputs\[0\]\.shape\[1\] must be a non-negative integer, got an integer -2"),
        (set_field("entry", "inputs", 0, "shape", value=[1, True, 4, 4]),
         r"field entry\.inputs\[0\]\.shape\[1\] must be a non-negative integer, got a boolean"),
        (set_field("entry", "inputs", 0, "dtype", value="object"),
         r"field entry\.inputs\[0\]\.dtype must be a numeric dtype name"),
        (set_field("entry", "inputs", 0, value=5), r"field entry\.inputs\[0\] must be an object"),
        (set_field("params", value={"w": 1}), r"field params must be a list, got an object"),
        (set_field("files", value=[]), r"field files must be an object, got a list"),
        (set_field("files", "graph.mlir", "sha256", value="00"), r"field files\.graph\.mlir\.sha256 must be a sha256"),
        (set_field("payload", value=[1]), r"field payload\[0\] must be a string"),
        (set_field("payload", value=["graph.mlir", "../x"]), r"invalid artifact file name '\.\./x'"),
        (set_field("payload", value=["graph.mlir", "x"]), r"field files: no checksum for x"),
        (set_field("extern_funcs", value=None), r"field extern_funcs must be a list, got null"),
        (set_field("format_version", value=10**400), r"format version 1000.*upgrade ember"),
    ],
    ids=["shape-type", "negative-dim", "bool-dim", "object-dtype", "tensor-type", "params-type",
         "files-type", "sha-type", "payload-type", "payload-escape", "payload-unlisted",
         "externs-null", "huge-version"],
)
def test_wrong_json_types_name_the_field(interp: Path, change, message: str) -> None:
    forge(interp, change)
    with pytest.raises(ember.ArtifactError, match=message):
        ember.load_module(interp)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "the JSON is nested too deeply"),
        ('{"format": "ember-module", "format_version": 2, "entry": {', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        ("1" * 5000, "not valid JSON"),
        ("[1, 2]", "does not declare format 'ember-module'"),
    ],
    ids=["deep-nesting", "truncated", "not-utf8", "huge-int", "a-list"],
)
def test_garbled_manifest_text(interp: Path, text: str | bytes, message: str) -> None:
    data = text if isinstance(text, bytes) else text.encode()
    (interp / "manifest.json").write_bytes(data)
    with pytest.raises(ember.ArtifactError, match=message) as error:
        ember.load_module(interp)
    assert "manifest.json" in str(error.value)


# -- only regular files inside the directory, reads bounded ------------------------


def test_a_symlink_to_dev_zero_is_refused(conv: Path) -> None:
    (conv / "program.o").unlink()
    (conv / "program.o").symlink_to("/dev/zero")
    with pytest.raises(ember.ArtifactError, match="program.o is a symbolic link"):
        ember.load_module(conv)


def test_a_manifest_symlinked_to_a_file_outside_is_refused(interp: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    shutil.copy(interp / "manifest.json", outside)
    (interp / "manifest.json").unlink()
    (interp / "manifest.json").symlink_to(outside)
    with pytest.raises(ember.ArtifactError, match="manifest.json is a symbolic link"):
        ember.load_module(interp)


def test_a_payload_symlinked_inside_the_directory_is_refused(interp: Path) -> None:
    os.replace(interp / "graph.mlir", interp / "real.mlir")
    (interp / "graph.mlir").symlink_to("real.mlir")
    with pytest.raises(ember.ArtifactError, match="graph.mlir is a symbolic link"):
        ember.load_module(interp)


def test_a_fifo_is_refused_not_read_forever(interp: Path) -> None:
    (interp / "params.npz").unlink()
    os.mkfifo(interp / "params.npz")
    assert "params.npz is a FIFO" in load_elsewhere(interp)
    (interp / "manifest.json").unlink()
    os.mkfifo(interp / "manifest.json")
    assert "manifest.json is a FIFO" in load_elsewhere(interp)


def test_a_directory_in_place_of_a_file_is_refused(interp: Path) -> None:
    (interp / "graph.mlir").unlink()
    (interp / "graph.mlir").mkdir()
    with pytest.raises(ember.ArtifactError, match="graph.mlir is a directory"):
        ember.load_module(interp)


def test_an_oversized_manifest_is_not_read(interp: Path) -> None:
    with open(interp / "manifest.json", "wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: nothing is written
    with pytest.raises(ember.ArtifactError, match="more than the 16777216 such a file may have"):
        ember.load_module(interp)


# -- pipelines go through the same reader --------------------------------------------


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    module, params = workloads.get("tiny_pipe")
    split = split_graph(module, ["relu"], [0], target="interp")
    return Path(build_pipeline(split, params=params).export_library(tmp_path / "pipe"))


def test_an_edited_pipeline_config_fails_its_own_checksum(pipeline: Path) -> None:
    config = json.loads(pipeline.read_text(encoding="utf-8"))
    config["inputs"][0]["shape"] = [1, 3, 8, 9]
    pipeline.write_text(json.dumps(config))
    with pytest.raises(ember.ArtifactError, match="its content does not match its own sha256"):
        load_library(pipeline)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_field("stages", 0, "inputs", value="data"), r"field stages\[0\]\.inputs must be a list"),
        (set_field("outputs", 0, value={"stage": "main_1", "output": "0"}),
         r"field outputs\[0\] must be a connection"),
        (set_field("stages", 0, "manifest_sha256", value=7), r"field stages\[0\]\.manifest_sha256 must be a sha256"),
        (set_field("stages", value=[]), r"field stages is empty"),
    ],
    ids=["inputs-type", "source-type", "checksum-type", "no-stages"],
)
def test_wrong_pipeline_config_types_name_the_field(pipeline: Path, change, message: str) -> None:
    config = json.loads(pipeline.read_text(encoding="utf-8"))
    change(config)
    pipeline.write_text(json.dumps(seal(config)))
    with pytest.raises(ember.ArtifactError, match=message):
        load_library(pipeline)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (set_field("stages", 1, "inputs", 0, "name", value="other"),
         r"stage @main_1 lists inputs \['other'\], but its module takes \['data_n'\]"),
        (lambda config: config["params"].append("data"),
         r"data listed both as params \(bound at build time\) and as inputs"),
    ],
    ids=["stage-input-name", "param-and-input"],
)
def test_forged_pipeline_config_is_cross_checked(pipeline: Path, change, message: str) -> None:
    config = json.loads(pipeline.read_text(encoding="utf-8"))
    change(config)
    pipeline.write_text(json.dumps(seal(config)))
    with pytest.raises(ember.ArtifactError, match=message):
        load_library(pipeline)


def test_deeply_nested_pipeline_config(pipeline: Path) -> None:
    pipeline.write_text("[" * 100_000)
    with pytest.raises(ember.ArtifactError, match=r"pipeline\.json: the JSON is nested too deeply"):
        load_library(pipeline)


def test_exporting_over_a_garbled_earlier_config(pipeline: Path) -> None:
    lib = load_library(pipeline)
    pipeline.write_text("[" * 100_000)
    assert lib.export_library(pipeline.parent) == str(pipeline)
    assert load_library(pipeline).stages[0].name == "main_0"


def test_a_stage_directory_symlinked_elsewhere_is_refused(pipeline: Path, tmp_path: Path) -> None:
    stage = pipeline.parent / "main_0"
    shutil.move(stage, tmp_path / "elsewhere")
    stage.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ember.ArtifactError, match="main_0 is a symbolic link, not a directory inside"):
        load_library(pipeline)


def test_a_fifo_pipeline_config_is_refused(pipeline: Path) -> None:
    pipeline.unlink()
    os.mkfifo(pipeline)
    assert "pipeline.json is a FIFO" in load_elsewhere(pipeline.parent, "pipeline")


# -- bounded fuzzing: forged manifests, layouts and object metadata -----------------

FUZZ_VALUES = [-1, 0, 2**70, "", "x", "float64", "object", [], {}, None, True, 1.5, [[1]]]


def _mutate_json(document: Any, rng: np.random.Generator) -> None:
    """Replace, delete or duplicate one value somewhere in ``document``."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if path and path[-1] != "sha256":
            paths.append(path)
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            walk(item, (*path, key))

    walk(document, ())
    path = paths[rng.integers(len(paths))]
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    old, roll = parent[path[-1]], rng.random()
    if roll < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif roll < 0.3 and isinstance(parent, list):
        parent.append(old)
    elif type(old) is int:
        parent[path[-1]] = old + int(rng.choice([-1, 1, 64]))
    else:
        parent[path[-1]] = FUZZ_VALUES[rng.integers(len(FUZZ_VALUES))]


def _forged_copy(source: Path, work: Path, rng: np.random.Generator) -> None:
    """A copy of ``source`` with one forged file, checksums recomputed."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    roll = rng.random()
    if roll < 1 / 3:
        forge(work, lambda manifest: _mutate_json(manifest, rng))
        return
    if roll < 2 / 3:
        layout = json.loads((work / "layout.json").read_text(encoding="utf-8"))
        _mutate_json(layout, rng)
        forge(work, layout_json=json.dumps(layout).encode())
        return
    # constants.bin: raw numbers, so a forgery that matters changes its size
    # (other bytes would only be other weights).
    data = (work / "constants.bin").read_bytes()
    cut = int(rng.integers(len(data) + 1))
    forge(work, constants_bin=data[:cut] + bytes(int(rng.integers(2)) * 64))


def _fuzz(source: Path, work: Path, seed: int, count: int) -> None:
    """Load and run ``count`` forgeries of ``source``; anything but success or
    an ArtifactError escapes (and a crash kills the process)."""
    rng = np.random.default_rng(seed)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(count):
        _forged_copy(source, work, rng)
        try:
            lib = ember.load_module(work)
        except ember.ArtifactError:
            outcomes["refused"] += 1
            continue
        ex = ember.GraphExecutor(lib, ember.cpu(0))
        for spec in lib.input_specs:
            ex.set_input(spec.name, np.zeros(spec.shape, spec.dtype))
        ex.run()
        outcomes["loaded"] += 1
    print("OUTCOMES", json.dumps(outcomes))


def test_forgeries_are_refused_or_harmless(exported_conv: Path, tmp_path: Path) -> None:
    """Random forgeries of the manifest, the layout and the constants
    (checksums recomputed): each loads and runs, or is an ArtifactError.

    program.o is not fuzzed here: a mutation of where its code jumps or what
    a relocation patches is a change of the machine code, which is trusted
    (docs/runtime.md); its structural checks have one test each above."""
    result = subprocess.run(
        [sys.executable, __file__, str(exported_conv), str(tmp_path / "work"), "0", "60"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = json.loads(result.stdout.split("OUTCOMES", 1)[1])
    assert outcomes["refused"] > outcomes["loaded"] > 0


if __name__ == "__main__":
    _fuzz(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
