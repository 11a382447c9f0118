// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Diagnostics every graph op shares: attributes, operand and result types,
// and the custom syntax.  Each chunk holds one mistake.

func.func @ints_not_a_list(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {strides = 1} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: graph.conv2d: attribute 'strides' must be a list of integers, got 1 : i64

// -----

func.func @ints_wrong_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {padding = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: graph.conv2d: attribute 'padding' must have 4 values, got 2

// -----

func.func @int_not_an_integer(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = graph.softmax %x {axis = 1.0 : f32} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK: graph.softmax: attribute 'axis' must be an integer, got 1.000000e+00 : f32

// -----

func.func @bool_not_a_bool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = graph.avg_pool2d %x {pool_size = [2, 2], strides = [2, 2], count_include_pad = 2} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// CHECK: graph.avg_pool2d: attribute 'count_include_pad' must be true or false, got 2 : i64

// -----

func.func @float_not_a_number(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.clip %x {min = "zero", max = 6.0 : f32} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: graph.clip: attribute 'min' must be a number, got "zero"

// -----

func.func @dense_not_dense() -> tensor<2xf32> {
  %0 = graph.constant {value = [1.0 : f32, 2.0 : f32]} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK: graph.constant: attribute 'value' must be a dense elements attribute

// -----

func.func @missing_attribute(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = graph.max_pool2d %x {strides = [2, 2]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// CHECK: graph.max_pool2d: missing attribute 'pool_size'

// -----

func.func @unknown_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x {alpha = 0.1 : f32} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: graph.relu: unknown attribute 'alpha' (known: none)

// -----

func.func @unknown_attribute_with_known(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = graph.softmax %x {axes = [1]} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK: graph.softmax: unknown attribute 'axes' (known: axis)

// -----

func.func @wrong_result_type(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x5xf32> {
  %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK:      error: graph.dense: result type tensor<2x5xf32> does not match the inferred type tensor<2x4xf32>
// CHECK-NEXT: %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: ^^^^

// -----

func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = graph.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}

// CHECK: graph.relu: operand must have a static shape, got tensor<?x4xf32>

// -----

func.func @element_type(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.relu %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// CHECK: graph.relu: operand has element type i32, expected one of f32, f16

// -----

func.func @unsupported_element_type(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = graph.negative %x : tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// CHECK: graph.negative: operand has element type f64, expected one of f32, f16, i32, i64

// -----

func.func @operand_not_a_tensor(%x: f32) -> tensor<4xf32> {
  %0 = "graph.relu"(%x) : (f32) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// IRDL's operand constraint (tensor) catches this before graph's verifier.
// CHECK:      invalid-common.mlir:[[# @LINE - 5]]:3: error: operand 'x' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute tensor

// -----

func.func @two_results(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0, %1 = "graph.relu"(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return %0 : tensor<4xf32>
}

// CHECK: invalid-common.mlir:[[# @LINE - 4]]:3: error: Expected 1 result, but got 2

// -----

func.func @custom_syntax_two_results(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return %0 : tensor<4xf32>
}

// CHECK: graph.relu has one result, the type gives 2

// -----

func.func @custom_syntax_operand_count(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %a, %b : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: graph.add: 2 operands but the type lists 1
