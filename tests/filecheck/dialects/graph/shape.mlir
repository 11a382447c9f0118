// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// Shape ops: reshape (the result type is the new shape), transpose (axes
// default to reversed), concatenate.

func.func @shape(%x: tensor<2x6xf32>, %img: tensor<1x3x4x5xf32>, %a: tensor<1x2xi32>, %b: tensor<1x3xi32>) -> (tensor<3x4xf32>, tensor<12xf32>, tensor<1x4x5x3xf32>, tensor<6x2xf32>, tensor<1x5xi32>, tensor<2x2xi32>) {
  %reshaped = graph.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
  %flat = graph.reshape %reshaped : (tensor<3x4xf32>) -> tensor<12xf32>
  %nhwc = graph.transpose %img {axes = [0, 2, 3, 1]} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
  %reversed = graph.transpose %x : (tensor<2x6xf32>) -> tensor<6x2xf32>
  %joined = graph.concatenate %a, %b {axis = 1} : (tensor<1x2xi32>, tensor<1x3xi32>) -> tensor<1x5xi32>
  %stacked = graph.concatenate %a, %a : (tensor<1x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  func.return %reshaped, %flat, %nhwc, %reversed, %joined, %stacked : tensor<3x4xf32>, tensor<12xf32>, tensor<1x4x5x3xf32>, tensor<6x2xf32>, tensor<1x5xi32>, tensor<2x2xi32>
}

// CHECK-LABEL: func.func @shape
// CHECK-NEXT:    %reshaped = graph.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %flat = graph.reshape %reshaped : (tensor<3x4xf32>) -> tensor<12xf32>
// CHECK-NEXT:    %nhwc = graph.transpose %img {axes = [0, 2, 3, 1]} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
// CHECK-NEXT:    %reversed = graph.transpose %x : (tensor<2x6xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:    %joined = graph.concatenate %a, %b {axis = 1} : (tensor<1x2xi32>, tensor<1x3xi32>) -> tensor<1x5xi32>
// CHECK-NEXT:    %stacked = graph.concatenate %a, %a : (tensor<1x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
