"""ember.compat.tvm: TVM's spellings are aliases of ember's one binding."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compat import tvm
from ember.errors import PassError

MODULE = """
func.func @main(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.add %x, %w : tensor<2xf32>
  func.return %y : tensor<2xf32>
}
func.func @other(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
"""


def test_tvm_spellings_bind_as_ember_bind_params() -> None:
    module = ember.parse(MODULE)
    w = np.arange(2, dtype=np.float32)
    expected = str(ember.bind_params(module, {"w": w}))
    assert str(tvm.bind_params_by_name(module, {"w": w})) == expected
    assert str(tvm.BindParams("main", {"w": w})(module)) == expected
    other = tvm.BindParams("other", {"w": w})(module)
    assert str(other) == str(ember.bind_params(module, {"w": w}, entry="other"))
    with pytest.raises(PassError, match="did you mean 'w'"):
        tvm.bind_params_by_name(module, {"ww": w})


def test_param_dict_names_are_the_runtime_functions() -> None:
    blob = tvm.save_param_dict({"w": np.ones(3, np.float32)})
    assert tvm.load_param_dict(blob)["w"].numpy().tolist() == [1.0, 1.0, 1.0]
    assert tvm.save_param_dict is ember.runtime.save_params
