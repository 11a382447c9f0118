// RUN: ember-opt %s -p cse | filecheck %s

// Graph ops are Pure: xDSL's cse merges identical ones (same operands,
// attributes and types) and keeps those that differ in an attribute.

func.func @cse(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x6x6xf32>) {
  %a = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %ra = graph.relu %a : tensor<1x4x8x8xf32>
  %rb = graph.relu %b : tensor<1x4x8x8xf32>
  func.return %ra, %rb, %c : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x6x6xf32>
}

// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %a = graph.conv2d %x, %w {padding = [1, 1, 1, 1]}
// CHECK-NEXT:    %c = graph.conv2d %x, %w :
// CHECK-NEXT:    %ra = graph.relu %a
// CHECK-NEXT:    func.return %ra, %ra, %c
