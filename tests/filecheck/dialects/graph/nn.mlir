// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Anchor ops of the graph dialect: conv2d, dense, matmul, bias_add, batch_norm.

func.func @conv(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dw: tensor<16x1x3x3xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x6x6xf32>, tensor<1x16x4x4xf32>) {
  %same = graph.conv2d %data, %weight {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %strided = graph.conv2d %data, %weight {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32>
  %defaults = graph.conv2d %data, %weight : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  %relu = graph.relu %same : tensor<1x16x8x8xf32>
  %depthwise = graph.conv2d %relu, %dw {strides = [2, 2], padding = [2, 2, 2, 2], dilation = [2, 2], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
  func.return %same, %strided, %defaults, %depthwise : tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x6x6xf32>, tensor<1x16x4x4xf32>
}

// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %same = graph.conv2d %data, %weight {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %strided = graph.conv2d %data, %weight {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %defaults = graph.conv2d %data, %weight : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
// CHECK-NEXT:    %relu = graph.relu %same : tensor<1x16x8x8xf32>
// CHECK-NEXT:    %depthwise = graph.conv2d %relu, %dw {strides = [2, 2], padding = [2, 2, 2, 2], dilation = [2, 2], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    func.return %same, %strided, %defaults, %depthwise

// GENERIC-LABEL: "func.func"() <{sym_name = "conv"
// The attributes are IRDL properties: the generic form holds them in <{…}>.
// GENERIC:         %same = "graph.conv2d"(%data, %weight) <{strides = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64, 1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// GENERIC:         %defaults = "graph.conv2d"(%data, %weight) : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>

func.func @fully_connected(%x: tensor<4x784xf32>, %w: tensor<128x784xf32>, %b: tensor<128xf32>, %h: tensor<4x784xf16>, %wh: tensor<10x784xf16>) -> (tensor<4x128xf32>, tensor<4x10xf16>) {
  %dense = graph.dense %x, %w : (tensor<4x784xf32>, tensor<128x784xf32>) -> tensor<4x128xf32>
  %biased = graph.bias_add %dense, %b {axis = 1} : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  %negative_axis = graph.bias_add %biased, %b {axis = -1} : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  %half = graph.dense %h, %wh : (tensor<4x784xf16>, tensor<10x784xf16>) -> tensor<4x10xf16>
  func.return %negative_axis, %half : tensor<4x128xf32>, tensor<4x10xf16>
}

// CHECK-LABEL: func.func @fully_connected
// CHECK-NEXT:    %dense = graph.dense %x, %w : (tensor<4x784xf32>, tensor<128x784xf32>) -> tensor<4x128xf32>
// CHECK-NEXT:    %biased = graph.bias_add %dense, %b {axis = 1} : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4x128xf32>
// CHECK-NEXT:    %negative_axis = graph.bias_add %biased, %b {axis = -1} : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4x128xf32>
// CHECK-NEXT:    %half = graph.dense %h, %wh : (tensor<4x784xf16>, tensor<10x784xf16>) -> tensor<4x10xf16>

func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %batched: tensor<2x1x4x8xf32>, %bb: tensor<5x8x3xf32>) -> (tensor<4x3xf32>, tensor<2x5x4x3xf32>) {
  %plain = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %broadcast = graph.matmul %batched, %bb : (tensor<2x1x4x8xf32>, tensor<5x8x3xf32>) -> tensor<2x5x4x3xf32>
  func.return %plain, %broadcast : tensor<4x3xf32>, tensor<2x5x4x3xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %plain = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %broadcast = graph.matmul %batched, %bb : (tensor<2x1x4x8xf32>, tensor<5x8x3xf32>) -> tensor<2x5x4x3xf32>

func.func @batch_norm(%x: tensor<1x16x8x8xf32>, %gamma: tensor<16xf32>, %beta: tensor<16xf32>, %mean: tensor<16xf32>, %var: tensor<16xf32>, %nhwc: tensor<1x8x8x16xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x8x8x16xf32>) {
  %bn = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 1.0e-03 : f32} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %last_axis = graph.batch_norm %nhwc, %gamma, %beta, %mean, %var {axis = 3} : (tensor<1x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  func.return %bn, %last_axis : tensor<1x16x8x8xf32>, tensor<1x8x8x16xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-NEXT:    %bn = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 1.000000e-03 : f32} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %last_axis = graph.batch_norm %nhwc, %gamma, %beta, %mean, %var {axis = 3} : (tensor<1x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
