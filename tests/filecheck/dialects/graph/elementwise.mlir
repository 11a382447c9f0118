// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// Unary elementwise ops print one type; cast prints a function type because
// its result type differs from its operand's.

func.func @unary(%x: tensor<2x16xf32>, %h: tensor<8xf16>, %i: tensor<3x4xi32>) -> (tensor<2x16xf32>, tensor<8xf16>, tensor<3x4xi32>) {
  %relu = graph.relu %x : tensor<2x16xf32>
  %sigmoid = graph.sigmoid %relu : tensor<2x16xf32>
  %tanh = graph.tanh %sigmoid : tensor<2x16xf32>
  %exp = graph.exp %tanh : tensor<2x16xf32>
  %sqrt = graph.sqrt %exp : tensor<2x16xf32>
  %negative = graph.negative %sqrt : tensor<2x16xf32>
  %clip = graph.clip %negative {min = -1.0 : f32, max = 6.0 : f32} : tensor<2x16xf32>
  %half = graph.relu %h : tensor<8xf16>
  %int_negative = graph.negative %i : tensor<3x4xi32>
  func.return %clip, %half, %int_negative : tensor<2x16xf32>, tensor<8xf16>, tensor<3x4xi32>
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %relu = graph.relu %x : tensor<2x16xf32>
// CHECK-NEXT:    %sigmoid = graph.sigmoid %relu : tensor<2x16xf32>
// CHECK-NEXT:    %tanh = graph.tanh %sigmoid : tensor<2x16xf32>
// CHECK-NEXT:    %exp = graph.exp %tanh : tensor<2x16xf32>
// CHECK-NEXT:    %sqrt = graph.sqrt %exp : tensor<2x16xf32>
// CHECK-NEXT:    %negative = graph.negative %sqrt : tensor<2x16xf32>
// CHECK-NEXT:    %clip = graph.clip %negative {min = -1.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x16xf32>
// CHECK-NEXT:    %half = graph.relu %h : tensor<8xf16>
// CHECK-NEXT:    %int_negative = graph.negative %i : tensor<3x4xi32>
// CHECK-NEXT:    func.return %clip, %half, %int_negative


func.func @cast(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) {
  %narrow = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
  %truncate = graph.cast %x : (tensor<4xf32>) -> tensor<4xi32>
  %widen = graph.cast %i : (tensor<4xi64>) -> tensor<4xf32>
  %same = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %narrow, %truncate, %widen, %same : tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @cast
// CHECK-NEXT:    %narrow = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    %truncate = graph.cast %x : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:    %widen = graph.cast %i : (tensor<4xi64>) -> tensor<4xf32>
// The single-type form is only for unary elementwise ops and constants.
// CHECK-NEXT:    %same = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>
