// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// Binary elementwise ops broadcast as numpy does: shapes align on the right,
// and a dimension of 1 stretches.

func.func @broadcast(%nchw: tensor<1x16x8x8xf32>, %channel: tensor<16x1x1xf32>, %row: tensor<8xf32>, %same: tensor<1x16x8x8xf32>, %scalar: tensor<f32>, %col: tensor<4x1xf32>, %line: tensor<1x5xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<4x5xf32>) {
  %add = graph.add %nchw, %channel : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %subtract = graph.subtract %row, %add : (tensor<8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %multiply = graph.multiply %subtract, %same : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %divide = graph.divide %multiply, %scalar : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %maximum = graph.maximum %divide, %channel : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %minimum = graph.minimum %scalar, %maximum : (tensor<f32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %outer = graph.add %col, %line : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  func.return %add, %subtract, %multiply, %divide, %maximum, %minimum, %outer : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<4x5xf32>
}

// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    %add = graph.add %nchw, %channel : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %subtract = graph.subtract %row, %add : (tensor<8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %multiply = graph.multiply %subtract, %same : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %divide = graph.divide %multiply, %scalar : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %maximum = graph.maximum %divide, %channel : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %minimum = graph.minimum %scalar, %maximum : (tensor<f32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %outer = graph.add %col, %line : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>

func.func @integers(%a: tensor<3xi64>, %b: tensor<2x3xi64>) -> tensor<2x3xi64> {
  %sum = graph.add %a, %b : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %product = graph.multiply %sum, %a : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  func.return %product : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @integers
// CHECK-NEXT:    %sum = graph.add %a, %b : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %product = graph.multiply %sum, %a : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
