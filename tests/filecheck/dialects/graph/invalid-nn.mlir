// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Diagnostics of the anchor ops: conv2d, dense, matmul, bias_add, batch_norm
// and pooling.  Each chunk holds one mistake; the CHECK line is the whole
// message the verifier gives.

func.func @conv_data_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: data must have rank 4 (NCHW), got tensor<3x8x8xf32>

// -----

func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: weight must have rank 4 (OIHW), got tensor<4x3x3xf32>

// -----

func.func @conv_integer_data(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  func.return %0 : tensor<1x4x6x6xi32>
}

// CHECK: error: graph.conv2d: data has element type i32, expected one of f32, f16

// -----

func.func @conv_mixed_types(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: weight has element type f16 but data has f32

// -----

func.func @conv_groups_positive(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {groups = 0} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: groups must be positive, got 0

// -----

func.func @conv_channels_not_divisible(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {groups = 2} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: data has 3 channels, not divisible by groups = 2

// -----

func.func @conv_outputs_not_divisible(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %0 = graph.conv2d %x, %w {groups = 2} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  func.return %0 : tensor<1x3x6x6xf32>
}

// CHECK: error: graph.conv2d: weight has 3 output channels, not divisible by groups = 2

// -----

func.func @conv_input_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: weight has 2 input channels but data has 3

// -----

func.func @conv_group_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {groups = 2} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: weight has 1 input channels per group but data has 4 channels in 2 groups (2 per group)

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {strides = [0, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: strides and dilation must be positive

// -----

func.func @conv_zero_dilation(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d %x, %w {dilation = [1, 0]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// CHECK: error: graph.conv2d: strides and dilation must be positive

// -----

func.func @conv_negative_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32> {
  %0 = graph.conv2d %x, %w {padding = [-1, 0, -1, 0]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32>
  func.return %0 : tensor<1x4x4x6xf32>
}

// CHECK: error: graph.conv2d: padding must not be negative

// -----

func.func @conv_window_too_large(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) -> tensor<1x4x1x1xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x1x1xf32>
  func.return %0 : tensor<1x4x1x1xf32>
}

// CHECK: error: graph.conv2d: window 5 is larger than the padded height extent 4

// -----

func.func @conv_dilated_window_too_large(%x: tensor<1x3x8x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x1xf32> {
  %0 = graph.conv2d %x, %w {dilation = [2, 2]} : (tensor<1x3x8x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x1xf32>
  func.return %0 : tensor<1x4x4x1xf32>
}

// CHECK: error: graph.conv2d: window 5 is larger than the padded width extent 4

// -----

func.func @dense_features(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) -> tensor<2x4xf32> {
  %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// CHECK: error: graph.dense: weight has 5 input features but data has 3

// -----

func.func @dense_rank(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x5xf32> {
  %0 = graph.dense %x, %w : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK: error: graph.dense: data must have rank 2 (N×K), got tensor<2x3x4xf32>

// -----

func.func @dense_weight_rank(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x1xf32> {
  %0 = graph.dense %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}

// CHECK: error: graph.dense: weight must have rank 2 (units×K), got tensor<4xf32>

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x3xf32>) -> tensor<3xf32> {
  %0 = graph.matmul %a, %b : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK: error: graph.matmul: operands must have rank >= 2, got tensor<8xf32> and tensor<8x3xf32>

// -----

func.func @matmul_inner(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// CHECK: error: graph.matmul: lhs has 8 columns but rhs has 7 rows

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x3xf32>) -> tensor<2x4x3xf32> {
  %0 = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x3xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}

// CHECK: error: graph.matmul: shapes [2] and [3] cannot be broadcast (dimension 2 vs 3)

// -----

func.func @bias_add_length(%x: tensor<1x128xf32>, %b: tensor<64xf32>) -> tensor<1x128xf32> {
  %0 = graph.bias_add %x, %b : (tensor<1x128xf32>, tensor<64xf32>) -> tensor<1x128xf32>
  func.return %0 : tensor<1x128xf32>
}

// CHECK: error: graph.bias_add: bias has 64 elements but data has 128 along axis 1

// -----

func.func @bias_add_rank(%x: tensor<1x128xf32>, %b: tensor<1x128xf32>) -> tensor<1x128xf32> {
  %0 = graph.bias_add %x, %b : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32>
  func.return %0 : tensor<1x128xf32>
}

// CHECK: error: graph.bias_add: bias must have rank 1, got tensor<1x128xf32>

// -----

func.func @bias_add_axis(%x: tensor<1x128xf32>, %b: tensor<128xf32>) -> tensor<1x128xf32> {
  %0 = graph.bias_add %x, %b {axis = 2} : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  func.return %0 : tensor<1x128xf32>
}

// CHECK: error: graph.bias_add: axis 2 is out of range for rank 2

// -----

func.func @batch_norm_channels(%x: tensor<1x16x4x4xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<8xf32>, %v: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %0 = graph.batch_norm %x, %g, %b, %m, %v : (tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}

// CHECK: error: graph.batch_norm: mean has 8 elements but data has 16 channels along axis 1

// -----

func.func @batch_norm_param_type(%x: tensor<1x16x4x4xf32>, %g: tensor<16xf16>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %0 = graph.batch_norm %x, %g, %b, %m, %v : (tensor<1x16x4x4xf32>, tensor<16xf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}

// CHECK: error: graph.batch_norm: gamma has element type f16 but data has f32

// -----

func.func @batch_norm_epsilon(%x: tensor<1x16x4x4xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %0 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = -1.0e-05 : f32} : (tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}

// CHECK: error: graph.batch_norm: epsilon must not be negative

// -----

func.func @max_pool_size(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x3xf32> {
  %0 = graph.max_pool2d %x {pool_size = [0, 2]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x3xf32>
  func.return %0 : tensor<1x1x4x3xf32>
}

// CHECK: error: graph.max_pool2d: pool_size must be positive, got [0, 2]

// -----

func.func @max_pool_padding(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x5x3xf32> {
  %0 = graph.max_pool2d %x {pool_size = [2, 2], padding = [2, 0, 0, 0]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x5x3xf32>
  func.return %0 : tensor<1x1x5x3xf32>
}

// CHECK: error: graph.max_pool2d: padding [2, 0, 0, 0] must be smaller than pool_size [2, 2]

// -----

func.func @avg_pool_window(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
  %0 = graph.avg_pool2d %x {pool_size = [3, 3]} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32>
  func.return %0 : tensor<1x1x1x1xf32>
}

// CHECK: error: graph.avg_pool2d: window 3 is larger than the padded height extent 2

// -----

func.func @avg_pool_stride(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %0 = graph.avg_pool2d %x {pool_size = [2, 2], strides = [1, 0]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %0 : tensor<1x1x3x3xf32>
}

// CHECK: error: graph.avg_pool2d: strides and dilation must be positive

// -----

func.func @pool_rank(%x: tensor<1x4x4xf32>) -> tensor<1x3x3xf32> {
  %0 = graph.max_pool2d %x {pool_size = [2, 2]} : (tensor<1x4x4xf32>) -> tensor<1x3x3xf32>
  func.return %0 : tensor<1x3x3xf32>
}

// CHECK: error: graph.max_pool2d: data must have rank 4 (NCHW), got tensor<1x4x4xf32>

// -----

func.func @global_pool_rank(%x: tensor<1x4x4xf32>) -> tensor<1x4x1x1xf32> {
  %0 = graph.global_avg_pool2d %x : (tensor<1x4x4xf32>) -> tensor<1x4x1x1xf32>
  func.return %0 : tensor<1x4x1x1xf32>
}

// CHECK: error: graph.global_avg_pool2d: data must have rank 4 (NCHW), got tensor<1x4x4xf32>
