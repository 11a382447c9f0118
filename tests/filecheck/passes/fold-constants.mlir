// RUN: ember-opt %s --split-input-file -p fold-constants | filecheck %s
// RUN: ember-opt %s --split-input-file -p simplify-inference,fold-constants | filecheck %s --check-prefix=PIPE

// Ops on constants are evaluated (by the reference interpreter), chains too;
// the constants they used are erased when nothing else uses them.

func.func @evaluate() -> tensor<2xf32> {
  %a = graph.constant {value = dense<[1.0, -4.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %sum = graph.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %r = graph.relu %sum : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// CHECK-LABEL: func.func @evaluate
// CHECK-NEXT:    %r = graph.constant {value = dense<[3.000000e+00, 0.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    func.return %r : tensor<2xf32>

// -----

// Only the constant part of an expression folds; dead code that folding did
// not create is left for dce.

func.func @partly_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %neg = graph.negative %a : tensor<2xf32>
  %dead = graph.exp %x : tensor<2xf32>
  %y = graph.multiply %x, %neg : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @partly_constant
// CHECK-NEXT:    %neg = graph.constant {value = dense<[-1.000000e+00, -2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    %dead = graph.exp %x : tensor<2xf32>
// CHECK-NEXT:    %y = graph.multiply %x, %neg : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>

// -----

// A per-output-channel scale of a conv with constant weights folds into the
// weights: filter o is multiplied by s[o].  The shift stays an add (a bias).

func.func @conv_scale(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = graph.constant {value = dense<[[[3.0]], [[0.5]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %b = graph.constant {value = dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %m = graph.multiply %c, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.add %m, %b : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @conv_scale
// CHECK-NEXT:    %b = graph.constant {value = dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
// CHECK-NEXT:    %w_scaled = graph.constant {value = dense<{{\[\[\[\[}}3.000000e+00]]], {{\[\[\[}}1.000000e+00]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %m = graph.conv2d %x, %w_scaled : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %y = graph.add %m, %b : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NOT:     graph.multiply

// -----

// The scale may come first, be a 1x2x1x1 tensor, or a scalar; conv
// attributes (here strides and groups) are kept.

func.func @conv_scale_forms(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = graph.constant {value = dense<[[[[2.0]], [[4.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %k = graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %c = graph.conv2d %x, %w {strides = [2, 2], groups = 2} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %m = graph.multiply %s, %c : (tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c2 = graph.conv2d %x, %w {strides = [2, 2], groups = 2} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %m2 = graph.multiply %c2, %k : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  func.return %m, %m2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @conv_scale_forms
// CHECK-NEXT:    %w_scaled = graph.constant {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}4.000000e+00]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %m = graph.conv2d %x, %w_scaled {strides = [2, 2], groups = 2} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %w_scaled_1 = graph.constant {value = dense<5.000000e-01> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %m2 = graph.conv2d %x, %w_scaled_1 {strides = [2, 2], groups = 2} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %m, %m2

// -----

// Not folded: the conv result has a second user (folding would change it).

func.func @conv_two_users(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = graph.constant {value = dense<[[[3.0]], [[0.5]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %m = graph.multiply %c, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %m, %c : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @conv_two_users
// CHECK:         %c = graph.conv2d %x, %w
// CHECK-NEXT:    %m = graph.multiply %c, %s

// -----

// Not folded: weights that are not constants, and scales that vary along a
// spatial axis or over the batch, or that broadcast the result larger.

func.func @not_per_channel(%x: tensor<2x1x3x3xf32>, %warg: tensor<2x1x1x1xf32>) -> (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x2x2x3x3xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %per_channel = graph.constant {value = dense<2.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %per_column = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %per_image = graph.constant {value = dense<2.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %larger = graph.constant {value = dense<2.0> : tensor<2x1x1x1x1xf32>} : tensor<2x1x1x1x1xf32>
  %c0 = graph.conv2d %x, %warg : (tensor<2x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  %m0 = graph.multiply %c0, %per_channel : (tensor<2x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<2x2x3x3xf32>
  %c1 = graph.conv2d %x, %w : (tensor<2x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  %m1 = graph.multiply %c1, %per_column : (tensor<2x2x3x3xf32>, tensor<3xf32>) -> tensor<2x2x3x3xf32>
  %c2 = graph.conv2d %x, %w : (tensor<2x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  %m2 = graph.multiply %c2, %per_image : (tensor<2x2x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  %c3 = graph.conv2d %x, %w : (tensor<2x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  %m3 = graph.multiply %c3, %larger : (tensor<2x2x3x3xf32>, tensor<2x1x1x1x1xf32>) -> tensor<2x2x2x3x3xf32>
  func.return %m0, %m1, %m2, %m3 : tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x2x2x3x3xf32>
}

// CHECK-LABEL: func.func @not_per_channel
// CHECK:         %m0 = graph.multiply %c0, %per_channel
// CHECK:         %m1 = graph.multiply %c1, %per_column
// CHECK:         %m2 = graph.multiply %c2, %per_image
// CHECK:         %m3 = graph.multiply %c3, %larger
// CHECK-NOT:     _scaled

// -----

// dense: a per-unit scale folds into the rows of the weight; a per-row
// (batch) scale does not.

func.func @dense_scale(%x: tensor<2x2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = graph.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %per_unit = graph.constant {value = dense<[1.0, 0.5, -1.0]> : tensor<3xf32>} : tensor<3xf32>
  %per_row = graph.constant {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %d = graph.dense %x, %w : (tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  %m = graph.multiply %d, %per_unit : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d2 = graph.dense %x, %w : (tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  %m2 = graph.multiply %d2, %per_row : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %m, %m2 : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @dense_scale
// CHECK:         %w_scaled = graph.constant {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [1.500000e+00, 2.000000e+00], [-5.000000e+00, -6.000000e+00]]> : tensor<3x2xf32>} : tensor<3x2xf32>
// CHECK-NEXT:    %m = graph.dense %x, %w_scaled : (tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %d2 = graph.dense %x, %w
// CHECK-NEXT:    %m2 = graph.multiply %d2, %per_row

// -----

// With simplify-inference first: conv2d + batch_norm with constant
// parameters becomes one conv2d with scaled weights and an add (the bias).

func.func @conv_bn_relu(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %gamma = graph.constant {value = dense<[2.0, 3.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = graph.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<[4.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %bn = graph.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.relu %bn : tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}

// fold-constants alone leaves batch_norm alone (its data is not constant).
// CHECK-LABEL: func.func @conv_bn_relu
// CHECK:         graph.batch_norm

// PIPE-LABEL: func.func @conv_bn_relu
// PIPE-NEXT:    %bn_shift = graph.constant {value = dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-3.000000e+00]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
// PIPE-NEXT:    %w_scaled = graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
// PIPE-NEXT:    %bn_scaled = graph.conv2d %x, %w_scaled : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
// PIPE-NEXT:    %bn = graph.add %bn_scaled, %bn_shift : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// PIPE-NEXT:    %r = graph.relu %bn : tensor<1x2x3x3xf32>
// PIPE-NEXT:    func.return %r : tensor<1x2x3x3xf32>

// -----

// A batch_norm whose parameters are arguments still becomes graph ops, but
// its scale is not a constant, so nothing folds into the conv; only the
// constant sub-expression sqrt(var + eps) is evaluated.

func.func @conv_bn_arguments(%x: tensor<1x1x3x3xf32>, %gamma: tensor<2xf32>, %beta: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %mean = graph.constant {value = dense<0.0> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<4.0> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %bn = graph.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %bn : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @conv_bn_arguments
// CHECK:         graph.batch_norm

// PIPE-LABEL: func.func @conv_bn_arguments
// PIPE-NEXT:    %w = graph.constant {value = dense<1.000000e+00> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
// PIPE-NEXT:    %mean = graph.constant {value = dense<0.000000e+00> : tensor<2xf32>} : tensor<2xf32>
// PIPE-NEXT:    %c = graph.conv2d %x, %w
// PIPE-NEXT:    %bn_std = graph.constant {value = dense<2.000000e+00> : tensor<2xf32>} : tensor<2xf32>
// PIPE-NEXT:    %bn_scale = graph.divide %gamma, %bn_std
// PIPE-NEXT:    %bn_mean_scale = graph.multiply %mean, %bn_scale
// PIPE-NEXT:    %bn_shift = graph.subtract %beta, %bn_mean_scale
// PIPE-NEXT:    %bn_scale_bcast = graph.reshape %bn_scale
// PIPE-NEXT:    %bn_shift_bcast = graph.reshape %bn_shift
// PIPE-NEXT:    %bn_scaled = graph.multiply %c, %bn_scale_bcast
// PIPE-NEXT:    %bn = graph.add %bn_scaled, %bn_shift_bcast
// PIPE-NEXT:    func.return %bn
