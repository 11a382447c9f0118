// RUN: ember-opt %s --split-input-file -p 'partition-extern{libs=blas}' --remarks=partition-extern --remarks-missed=partition-extern -o /dev/null 2>&1 | filecheck %s

// What went to BLAS, and what stayed generated code and why.

func.func @offloaded(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x4xf32> {
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}

// CHECK: partition-extern.mlir:6:3: remark: [partition-extern] graph.dense offloaded to blas.sgemm

// -----

func.func @half(%x: tensor<2x8xf16>, %w: tensor<4x8xf16>) -> tensor<2x4xf16> {
  %d = graph.dense %x, %w : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
  func.return %d : tensor<2x4xf16>
}

// CHECK: partition-extern.mlir:15:3: remark: [partition-extern] missed: graph.dense not offloaded to blas: blas takes float32 only, this op has f16; it stays generated code

// -----

func.func @grouped(%x: tensor<1x4x6x6xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %c = graph.conv2d %x, %w {groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %c : tensor<1x4x4x4xf32>
}

// CHECK: partition-extern.mlir:24:3: remark: [partition-extern] missed: graph.conv2d not offloaded to blas: groups=4 (grouped convolution); it stays generated code
