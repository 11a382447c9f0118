// RUN: python -c "import numpy as np; np.savez('%t.npz', w=np.ones((4, 8), 'float32'))"
// RUN: ember-opt %s -p 'bind-params{file="%t.npz"}' --remarks=bind-params -o /dev/null 2>&1 | filecheck %s

func.func @main(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>) -> tensor<1x4xf32> {
  %d = graph.dense %x, %w : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
  func.return %d : tensor<1x4xf32>
}

// CHECK: bind-params.mlir:4:1: remark: [bind-params] %w of @main bound as a constant tensor<4x8xf32> (128 bytes)
