"""The ONNX exporter the benchmarks use: :mod:`ember.testing.onnx_export`.

It lives in ``ember.testing`` because the test suite also uses it, to compare
ember's compiled code with onnxruntime (tests/test_onnxruntime_differential.py).
"""

from ember.testing.onnx_export import (  # noqa: F401 - re-exported for compare.py
    INSTALL_HINT,
    IR_VERSION,
    OPSET,
    OnnxExportError,
    export,
    inference_session,
)
