"""Optimization remarks: the mechanism, the Python API, the tools' flags, the
record format, and locations that survive fusion and lowering.

The per-pass wording is checked by the FileCheck files in
``tests/filecheck/remarks/``; here, what the records are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from xdsl.dialects.builtin import FusedLoc

import ember
from ember import remarks
from ember.testing import workloads
from ember.tools import ember_opt, ember_run, ember_translate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CONVBNRELU = str(EXAMPLES / "convbnrelu.mlir")
MLP = str(EXAMPLES / "mlp.mlir")


def _parse(path: str) -> object:
    return ember.parse(Path(path).read_text(encoding="utf-8"), name=path)


def test_nobody_listening_collects_nothing() -> None:
    assert not remarks.enabled()
    module = _parse(CONVBNRELU)
    ember.apply_passes(module, "simplify-inference,fuse-ops")  # emits into nothing
    with remarks.collect() as records:
        assert remarks.enabled()
    assert records == []
    assert not remarks.enabled()


def test_nested_collection_reaches_the_outer_block() -> None:
    module = _parse(CONVBNRELU)
    with remarks.collect() as outer:
        with remarks.collect() as inner:
            ember.apply_passes(module, "simplify-inference")
        assert len(inner) == 1
    assert outer == inner


def test_apply_passes_returns_the_records() -> None:
    module = _parse(CONVBNRELU)
    result, records = ember.apply_passes(module, "simplify-inference,fuse-ops", remarks=True)
    plain = ember.apply_passes(module, "simplify-inference,fuse-ops")
    # Collecting remarks changes nothing in the IR.
    assert ember.to_text(result) == ember.to_text(plain)
    applied = [r for r in records if r.kind == "applied" and r.pass_name == "fuse-ops"]
    relu = next(r for r in applied if r.ops == ("graph.relu",))
    assert relu.message == "graph.relu fused into fused_conv2d_multiply_add_relu"
    assert relu.locations == (remarks.SourceLocation(CONVBNRELU, 11, 3),)
    assert relu.function == "main"
    assert relu.args == {"group": "fused_conv2d_multiply_add_relu"}
    assert relu.format() == (
        f"{CONVBNRELU}:11:3: remark: [fuse-ops] graph.relu fused into "
        "fused_conv2d_multiply_add_relu"
    )


def test_build_keeps_the_remarks_on_the_library() -> None:
    module, params = workloads.get("mlp")
    lib = ember.build(module, target="llvm", params=params, remarks=True)
    passes = {(r.pass_name, r.kind) for r in lib.remarks}
    assert ("bind-params", "applied") in passes
    assert ("fuse-ops", "applied") in passes
    assert ("lower-graph-to-kernel", "analysis") in passes
    assert ember.build(module, target="llvm", params=params).remarks == ()


def test_locations_survive_fusion_and_lowering() -> None:
    """A kernel's remark points at the graph ops it computes, and the call
    replacing a fused group carries all their locations."""
    module = _parse(MLP)
    fused, records = ember.apply_passes(
        module, "fuse-ops,lower-graph-to-kernel{vector-bits=256}", remarks=True
    )
    kernel = next(
        r
        for r in records
        if r.pass_name == "lower-graph-to-kernel"
        and r.args["kernel"] == "fused_dense_bias_add_relu"
    )
    assert [(loc.line, loc.column) for loc in kernel.locations] == [(7, 3), (8, 3), (9, 3)]
    assert kernel.ops == ("graph.dense", "graph.bias_add", "graph.relu")
    call = next(op for op in fused.walk() if op.name == "graph.call_kernel")
    assert isinstance(call.location, FusedLoc)
    assert [loc.line for loc in remarks.locations_of(call.location)] == [7, 8, 9]


def test_remarks_file_matches_the_documented_schema(tmp_path: Path, capsys) -> None:
    out = tmp_path / "remarks.json"
    code = ember_opt.main(
        [
            CONVBNRELU,
            "-p",
            "simplify-inference,fold-constants,fuse-ops,lower-graph-to-kernel",
            f"--remarks-file={out}",
            "-o",
            str(tmp_path / "out.mlir"),
        ]
    )
    assert code == 0
    assert capsys.readouterr().err == ""  # a file alone prints nothing
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(document, remarks.REMARK_SCHEMA)
    kinds = {(r["pass"], r["kind"]) for r in document["remarks"]}
    assert {("simplify-inference", "applied"), ("fuse-ops", "applied"),
            ("fuse-ops", "missed"), ("lower-graph-to-kernel", "analysis")} <= kinds


def test_remarks_file_in_yaml(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    out = tmp_path / "remarks.yaml"
    assert ember_opt.main([CONVBNRELU, "-p", "fuse-ops", f"--remarks-file={out}"]) == 0
    jsonschema.validate(yaml.safe_load(out.read_text(encoding="utf-8")), remarks.REMARK_SCHEMA)


def test_the_schema_rejects_a_malformed_record() -> None:
    bad = {"version": 1, "remarks": [{"kind": "applied", "pass": "x"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, remarks.REMARK_SCHEMA)


def test_regex_selects_passes_and_kinds(capsys) -> None:
    assert ember_opt.main(
        [CONVBNRELU, "-p", "simplify-inference,fuse-ops", "--remarks=simplify"]
    ) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"{CONVBNRELU}:10:3: remark: [simplify-inference] graph.batch_norm rewritten "
        "as multiply and add (scale and shift computed from its parameters)"
    ]


def test_ember_run_and_translate_take_the_flags(capsys) -> None:
    assert ember_run.main([MLP, "--random-inputs", "--remarks=fuse-ops"]) == 0
    assert f"{MLP}:9:3: remark: [fuse-ops] graph.relu fused into" in capsys.readouterr().err
    assert ember_translate.main(
        [MLP, "--emit=kernel", "--remarks-analysis=lower-graph-to-kernel"]
    ) == 0
    err = capsys.readouterr().err
    assert f"{MLP}:7:3: remark: [lower-graph-to-kernel] analysis: kernel @fused_dense_bias_add_relu" in err


def test_a_bad_regex_is_a_diagnostic(capsys) -> None:
    assert ember_opt.main([CONVBNRELU, "--remarks=("]) == 1
    err = capsys.readouterr().err
    assert "--remarks: invalid regular expression '('" in err
    assert "Traceback" not in err


def test_unwritable_remarks_file_is_a_diagnostic(tmp_path: Path, capsys) -> None:
    target = tmp_path / "missing" / "r.json"
    assert ember_opt.main([CONVBNRELU, f"--remarks-file={target}"]) == 1
    assert "--remarks-file: cannot write" in capsys.readouterr().err


def test_help_lists_the_flags(capsys) -> None:
    for main in (ember_opt.main, ember_run.main, ember_translate.main):
        with pytest.raises(SystemExit):
            main(["--help"])
        out = capsys.readouterr().out
        assert "--remarks-missed" in out and "--remarks-file" in out, main


def test_overhead_benchmark_runs(capsys) -> None:
    """benchmarks/remarks_overhead.py (what remarks cost) runs; its timings
    are read, never asserted."""
    sys.path.insert(0, str(EXAMPLES.parent / "benchmarks"))
    import remarks_overhead

    assert remarks_overhead.main(["--workloads", "mlp", "--repeat", "1"]) == 0
    assert "mlp" in capsys.readouterr().out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
