// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Diagnostics of elementwise, broadcasting, softmax, shape, cast and constant
// ops.  Each chunk holds one mistake; the CHECK line is the whole message the
// verifier gives.

func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.clip %x {min = 6.0 : f32, max = 0.0 : f32} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.clip: min 6.0 is greater than max 0.0

// -----

func.func @clip_missing_bound(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.clip %x {min = 0.0 : f32} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.clip: missing attribute 'max'

// -----

func.func @binary_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.add: rhs has element type f16 but lhs has f32

// -----

func.func @binary_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = graph.multiply %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK: error: graph.multiply: shapes [2, 3] and [4] cannot be broadcast (dimension 3 vs 4)

// -----

func.func @binary_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.subtract %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK: error: graph.subtract: result type tensor<3xf32> does not match the inferred type tensor<2x3xf32>

// -----

func.func @divide_integers(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.divide %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// CHECK: error: graph.divide: lhs has element type i32, expected one of f32, f16

// -----

func.func @softmax_axis(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = graph.softmax %x {axis = -3} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK: error: graph.softmax: axis -3 is out of range for rank 2

// -----

func.func @softmax_integers(%x: tensor<2x5xi64>) -> tensor<2x5xi64> {
  %0 = graph.softmax %x : (tensor<2x5xi64>) -> tensor<2x5xi64>
  func.return %0 : tensor<2x5xi64>
}

// CHECK: error: graph.softmax: operand has element type i64, expected one of f32, f16

// -----

func.func @batch_flatten_scalar(%x: tensor<f32>) -> tensor<1x1xf32> {
  %0 = graph.batch_flatten %x : (tensor<f32>) -> tensor<1x1xf32>
  func.return %0 : tensor<1x1xf32>
}

// CHECK: error: graph.batch_flatten: data must have rank >= 1

// -----

func.func @reshape_element_type(%x: tensor<2x6xf32>) -> tensor<12xf16> {
  %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<12xf16>
  func.return %0 : tensor<12xf16>
}

// CHECK: error: graph.reshape: result element type f16 differs from the data's f32

// -----

func.func @reshape_element_count(%x: tensor<2x6xf32>) -> tensor<5x2xf32> {
  %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// CHECK: error: graph.reshape: cannot reshape tensor<2x6xf32> (12 elements) to tensor<5x2xf32> (10 elements)

// -----

func.func @transpose_axes_count(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  %0 = graph.transpose %x {axes = [1, 0]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  func.return %0 : tensor<3x2x4xf32>
}

// CHECK: error: graph.transpose: axes [1, 0] must list 3 axes

// -----

func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) -> tensor<2x3x3xf32> {
  %0 = graph.transpose %x {axes = [0, 1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  func.return %0 : tensor<2x3x3xf32>
}

// CHECK: error: graph.transpose: axes [0, 1, 1] is not a permutation of 0..2

// -----

func.func @transpose_axis_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.transpose %x {axes = [0, 2]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK: error: graph.transpose: axis 2 is out of range for rank 2

// -----

func.func @concatenate_shapes(%a: tensor<1x2xf32>, %b: tensor<2x3xf32>) -> tensor<1x5xf32> {
  %0 = graph.concatenate %a, %b {axis = 1} : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x5xf32>
  func.return %0 : tensor<1x5xf32>
}

// CHECK: error: graph.concatenate: operand 1 has shape [2, 3], incompatible with [1, 2] outside axis 1

// -----

func.func @concatenate_ranks(%a: tensor<1x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = graph.concatenate %a, %b : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// CHECK: error: graph.concatenate: operand 1 has shape [2], incompatible with [1, 2] outside axis 0

// -----

func.func @concatenate_element_types(%a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<4xf32> {
  %0 = graph.concatenate %a, %b : (tensor<2xf32>, tensor<2xi32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.concatenate: operand 1 has element type i32 but operand 0 has f32

// -----

func.func @concatenate_nothing() -> tensor<1xf32> {
  %0 = graph.concatenate : () -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}

// CHECK: error: graph.concatenate: needs at least one operand

// -----

func.func @cast_shape(%x: tensor<4xf32>) -> tensor<2x2xf16> {
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<2x2xf16>
  func.return %0 : tensor<2x2xf16>
}

// CHECK: error: graph.cast: result shape [2, 2] differs from the data's [4]

// -----

func.func @cast_target_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// CHECK: error: graph.cast: result has element type f64, expected one of f32, f16, i32, i64

// -----

func.func @constant_vector_value() -> tensor<2xf32> {
  %0 = graph.constant {value = dense<1.0> : vector<2xf32>} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK: error: graph.constant: value must have a tensor type, got vector<2xf32>

// -----

func.func @constant_result_type() -> tensor<2xi64> {
  %0 = graph.constant {value = dense<[1, 2]> : tensor<2xi32>} : tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// CHECK: error: graph.constant: result type tensor<2xi64> does not match the inferred type tensor<2xi32>

// -----

func.func @constant_element_type() -> tensor<2xf64> {
  %0 = graph.constant {value = dense<1.0> : tensor<2xf64>} : tensor<2xf64>
  func.return %0 : tensor<2xf64>
}

// CHECK: error: graph.constant: value has element type f64, expected one of f32, f16, i32, i64
