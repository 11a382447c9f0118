// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// Pooling, softmax and batch_flatten: the ops that end a classifier.

func.func @pooling(%x: tensor<1x64x112x112xf32>, %y: tensor<1x8x7x7xf32>) -> (tensor<1x64x56x56xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>) {
  %max = graph.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  %avg = graph.avg_pool2d %y {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x8x7x7xf32>) -> tensor<1x8x3x3xf32>
  %avg_pad = graph.avg_pool2d %y {pool_size = [2, 2], strides = [2, 2], padding = [1, 1, 0, 0], count_include_pad = true} : (tensor<1x8x7x7xf32>) -> tensor<1x8x4x4xf32>
  %global = graph.global_avg_pool2d %y : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  func.return %max, %avg, %avg_pad, %global : tensor<1x64x56x56xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>
}

// CHECK-LABEL: func.func @pooling
// CHECK-NEXT:    %max = graph.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
// CHECK-NEXT:    %avg = graph.avg_pool2d %y {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x8x7x7xf32>) -> tensor<1x8x3x3xf32>
// CHECK-NEXT:    %avg_pad = graph.avg_pool2d %y {pool_size = [2, 2], strides = [2, 2], padding = [1, 1, 0, 0], count_include_pad = true} : (tensor<1x8x7x7xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %global = graph.global_avg_pool2d %y : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>

func.func @classifier(%features: tensor<2x512x1x1xf32>, %logits: tensor<2x10xf32>, %nc: tensor<2x3x5xf16>) -> (tensor<2x512xf32>, tensor<2x10xf32>, tensor<2x3x5xf16>) {
  %flat = graph.batch_flatten %features : (tensor<2x512x1x1xf32>) -> tensor<2x512xf32>
  %probabilities = graph.softmax %logits {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %middle = graph.softmax %nc {axis = 1} : (tensor<2x3x5xf16>) -> tensor<2x3x5xf16>
  func.return %flat, %probabilities, %middle : tensor<2x512xf32>, tensor<2x10xf32>, tensor<2x3x5xf16>
}

// CHECK-LABEL: func.func @classifier
// CHECK-NEXT:    %flat = graph.batch_flatten %features : (tensor<2x512x1x1xf32>) -> tensor<2x512xf32>
// CHECK-NEXT:    %probabilities = graph.softmax %logits {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    %middle = graph.softmax %nc {axis = 1} : (tensor<2x3x5xf16>) -> tensor<2x3x5xf16>
