// RUN: ember-opt %s --split-input-file -p simplify-inference | filecheck %s

// Constant parameters: scale = gamma / sqrt(var + eps) = [1, 3] and
// shift = beta - mean * scale = [1, -3] become constants shaped 2x1x1, so
// they broadcast along axis 1 of NCHW data.  The parameters are erased.

func.func @constant_params(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %gamma = graph.constant {value = dense<[2.0, 3.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = graph.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %y = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @constant_params
// CHECK-NEXT:    %y_scale = graph.constant {value = dense<[[[1.000000e+00]], [[3.000000e+00]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_shift = graph.constant {value = dense<[[[1.000000e+00]], [[-3.000000e+00]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_scaled = graph.multiply %x, %y_scale : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %y = graph.add %y_scaled, %y_shift : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %y : tensor<1x2x2x2xf32>
// CHECK-NOT:     graph.batch_norm

// -----

// Parameters that are arguments: the scale and shift are computed by graph
// ops, then reshaped to 3x1x1 for axis 1.  Nothing is folded here.

func.func @argument_params(%x: tensor<2x3x4x4xf32>, %gamma: tensor<3xf32>, %beta: tensor<3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  %y = graph.batch_norm %x, %gamma, %beta, %mean, %var : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  func.return %y : tensor<2x3x4x4xf32>
}

// CHECK-LABEL: func.func @argument_params
// CHECK-NEXT:    %y_eps = graph.constant {value = dense<1.000000e-05> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:    %y_var_eps = graph.add %var, %y_eps : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:    %y_std = graph.sqrt %y_var_eps : tensor<3xf32>
// CHECK-NEXT:    %y_scale = graph.divide %gamma, %y_std : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %y_mean_scale = graph.multiply %mean, %y_scale : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %y_shift = graph.subtract %beta, %y_mean_scale : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %y_scale_bcast = graph.reshape %y_scale : (tensor<3xf32>) -> tensor<3x1x1xf32>
// CHECK-NEXT:    %y_shift_bcast = graph.reshape %y_shift : (tensor<3xf32>) -> tensor<3x1x1xf32>
// CHECK-NEXT:    %y_scaled = graph.multiply %x, %y_scale_bcast : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %y = graph.add %y_scaled, %y_shift_bcast : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    func.return %y : tensor<2x3x4x4xf32>

// -----

// Normalising the last axis needs no reshape: a 1-D vector already
// broadcasts along it.

func.func @last_axis(%x: tensor<5x3xf16>, %gamma: tensor<3xf16>, %beta: tensor<3xf16>, %mean: tensor<3xf16>, %var: tensor<3xf16>) -> tensor<5x3xf16> {
  %y = graph.batch_norm %x, %gamma, %beta, %mean, %var {axis = -1, epsilon = 1.0e-3 : f32} : (tensor<5x3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>) -> tensor<5x3xf16>
  func.return %y : tensor<5x3xf16>
}

// CHECK-LABEL: func.func @last_axis
// CHECK:         %y_shift = graph.subtract %beta, %y_mean_scale : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
// CHECK-NEXT:    %y_scaled = graph.multiply %x, %y_scale : (tensor<5x3xf16>, tensor<3xf16>) -> tensor<5x3xf16>
// CHECK-NEXT:    %y = graph.add %y_scaled, %y_shift : (tensor<5x3xf16>, tensor<3xf16>) -> tensor<5x3xf16>
// CHECK-NOT:     graph.reshape

// -----

// Axis 0 of a 2-D tensor: constants shaped 2x1.  A parameter constant that
// something else still uses stays.

func.func @axis_zero(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %ones = graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %zeros = graph.constant {value = dense<0.0> : tensor<2xf32>} : tensor<2xf32>
  %y = graph.batch_norm %x, %ones, %zeros, %zeros, %ones {axis = 0, epsilon = 0.0 : f32} : (tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  func.return %y, %ones : tensor<2x4xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @axis_zero
// CHECK-NEXT:    %ones = graph.constant {value = dense<1.000000e+00> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    %y_scale = graph.constant {value = dense<1.000000e+00> : tensor<2x1xf32>} : tensor<2x1xf32>
// CHECK-NEXT:    %y_shift = graph.constant {value = dense<0.000000e+00> : tensor<2x1xf32>} : tensor<2x1xf32>
// CHECK-NEXT:    %y_scaled = graph.multiply %x, %y_scale : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %y = graph.add %y_scaled, %y_shift : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y, %ones : tensor<2x4xf32>, tensor<2xf32>

// -----

// Nothing to simplify: the pass leaves other ops alone.

func.func @no_batch_norm(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @no_batch_norm
// CHECK-NEXT:    %y = graph.relu %x : tensor<4xf32>
// CHECK-NEXT:    func.return %y : tensor<4xf32>
