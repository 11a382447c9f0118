// RUN: ember-opt %s -p canonicalize --split-input-file | filecheck %s

// The graph dialect's canonicalization patterns
// (ember/passes/canonicalization/graph.py): each chunk shows where a pattern
// fires and where it must not.

func.func @relu_of_relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu %x : tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  %2 = graph.relu %1 : tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @relu_of_relu
// CHECK-NEXT:    %0 = graph.relu %x : tensor<2x3xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3xf32>

// -----

func.func @relu_of_other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.negative %x : tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @relu_of_other
// CHECK-NEXT:    %0 = graph.negative %x : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.relu %0 : tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>

// -----

func.func @negative_of_negative(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = graph.negative %x : tensor<4xf32>
  %1 = graph.negative %0 : tensor<4xf32>
  %2 = graph.negative %1 : tensor<4xf32>
  %3 = graph.negative %i : tensor<4xi32>
  %4 = graph.negative %3 : tensor<4xi32>
  func.return %1, %2, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @negative_of_negative
// CHECK-NEXT:    %0 = graph.negative %x : tensor<4xf32>
// CHECK-NEXT:    func.return %x, %0, %i : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>

// -----

func.func @multiply_by_one(%x: tensor<2x3xf32>, %i: tensor<4xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>) {
  %ones = graph.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %row = graph.constant {value = dense<[1.0, 1.0, 1.0]> : tensor<3xf32>} : tensor<3xf32>
  %int_ones = graph.constant {value = dense<1> : tensor<4xi32>} : tensor<4xi32>
  %right = graph.multiply %x, %ones : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %left = graph.multiply %ones, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %broadcast_row = graph.multiply %x, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %ints = graph.multiply %i, %int_ones : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %right, %left, %broadcast_row, %ints : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>
}

// A ones constant smaller than x still leaves x's type unchanged: it folds,
// and the unused constants are removed.
// CHECK-LABEL: func.func @multiply_by_one
// CHECK-NEXT:    func.return %x, %x, %x, %i : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>

// -----

func.func @multiply_not_by_one(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %ones = graph.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %twos = graph.constant {value = dense<2.0> : tensor<3xf32>} : tensor<3xf32>
  %mixed = graph.constant {value = dense<[1.0, 2.0, 1.0]> : tensor<3xf32>} : tensor<3xf32>
  %widened = graph.multiply %x, %ones : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %doubled = graph.multiply %x, %twos : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %scaled = graph.multiply %mixed, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %product = graph.multiply %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %widened, %doubled, %scaled, %product : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// Multiplying by ones that broadcast x to a larger shape is not x.
// CHECK-LABEL: func.func @multiply_not_by_one
// CHECK:         %widened = graph.multiply %x, %ones : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %doubled = graph.multiply %x, %twos
// CHECK-NEXT:    %scaled = graph.multiply %mixed, %x
// CHECK-NEXT:    %product = graph.multiply %x, %y
// CHECK-NEXT:    func.return %widened, %doubled, %scaled, %product

// -----

func.func @add_subtract_zero(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %zeros = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : tensor<2x3xf32>
  %negative_zero = graph.constant {value = dense<-0.0> : tensor<3xf32>} : tensor<3xf32>
  %right = graph.add %x, %zeros : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %left = graph.add %negative_zero, %right : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %minus = graph.subtract %left, %zeros : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %right, %left, %minus : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @add_subtract_zero
// CHECK-NEXT:    func.return %x, %x, %x : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>

// -----

func.func @zero_minus_x(%x: tensor<3xi64>) -> (tensor<3xi64>, tensor<2x3xi64>) {
  %zeros = graph.constant {value = dense<0> : tensor<3xi64>} : tensor<3xi64>
  %wide_zeros = graph.constant {value = dense<0> : tensor<2x3xi64>} : tensor<2x3xi64>
  %negated = graph.subtract %zeros, %x : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %widened = graph.add %x, %wide_zeros : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %negated, %widened : tensor<3xi64>, tensor<2x3xi64>
}

// 0 - x is -x, not x; x + 0 that broadcasts x to a larger shape is not x.
// CHECK-LABEL: func.func @zero_minus_x
// CHECK:         %negated = graph.subtract %zeros, %x : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
// CHECK-NEXT:    %widened = graph.add %x, %wide_zeros : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    func.return %negated, %widened

// -----

func.func @divide_by_one(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>) {
  %ones = graph.constant {value = dense<1.0> : tensor<4xf16>} : tensor<4xf16>
  %quotient = graph.divide %x, %ones : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %reciprocal = graph.divide %ones, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %quotient, %reciprocal : tensor<4xf16>, tensor<4xf16>
}

// 1 / x is not x.
// CHECK-LABEL: func.func @divide_by_one
// CHECK-NEXT:    %ones = graph.constant {value = dense<1.000000e+00> : tensor<4xf16>} : tensor<4xf16>
// CHECK-NEXT:    %reciprocal = graph.divide %ones, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:    func.return %x, %reciprocal : tensor<4xf16>, tensor<4xf16>

// -----

func.func @reshape_to_same_type(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// CHECK-LABEL: func.func @reshape_to_same_type
// CHECK-NEXT:    func.return %x : tensor<2x6xf32>

// -----

func.func @reshape_of_reshape(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<2x6xf32>) {
  %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
  %1 = graph.reshape %0 : (tensor<12xf32>) -> tensor<3x4xf32>
  %2 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<4x3xf32>
  %3 = graph.reshape %2 : (tensor<4x3xf32>) -> tensor<2x6xf32>
  func.return %1, %3 : tensor<3x4xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %0, %x : tensor<3x4xf32>, tensor<2x6xf32>

// -----

func.func @reshape_of_shared_reshape(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<3x4xf32>, tensor<2x6xf32>) {
  %flat = graph.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
  %grid = graph.reshape %flat : (tensor<12xf32>) -> tensor<3x4xf32>
  %back = graph.reshape %flat : (tensor<12xf32>) -> tensor<2x6xf32>
  func.return %flat, %grid, %back : tensor<12xf32>, tensor<3x4xf32>, tensor<2x6xf32>
}

// %flat has other uses: composing %grid would not remove a reshape, so it
// stays; %back goes back to x's type, so it becomes x whatever the uses.
// CHECK-LABEL: func.func @reshape_of_shared_reshape
// CHECK-NEXT:    %flat = graph.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
// CHECK-NEXT:    %grid = graph.reshape %flat : (tensor<12xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %flat, %grid, %x : tensor<12xf32>, tensor<3x4xf32>, tensor<2x6xf32>

// -----

func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>, %m: tensor<5x7xf32>) -> (tensor<4x2x3xf32>, tensor<5x7xf32>, tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {axes = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = graph.transpose %0 {axes = [1, 2, 0]} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %2 = graph.transpose %m : (tensor<5x7xf32>) -> tensor<7x5xf32>
  %3 = graph.transpose %2 : (tensor<7x5xf32>) -> tensor<5x7xf32>
  %4 = graph.transpose %x {axes = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %5 = graph.transpose %4 {axes = [1, 2, 0]} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %1, %3, %5 : tensor<4x2x3xf32>, tensor<5x7xf32>, tensor<2x3x4xf32>
}

// [1, 2, 0] twice is [2, 0, 1]; reversing twice and [2, 0, 1] then [1, 2, 0]
// are the identity.
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT:    %0 = graph.transpose %x {axes = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %0, %m, %x : tensor<4x2x3xf32>, tensor<5x7xf32>, tensor<2x3x4xf32>

// -----

func.func @transpose_of_shared_transpose(%x: tensor<2x3x4xf32>) -> (tensor<3x4x2xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %rotated = graph.transpose %x {axes = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %twice = graph.transpose %rotated {axes = [1, 2, 0]} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %back = graph.transpose %rotated {axes = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  func.return %rotated, %twice, %back : tensor<3x4x2xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @transpose_of_shared_transpose
// CHECK-NEXT:    %rotated = graph.transpose %x {axes = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    %twice = graph.transpose %rotated {axes = [1, 2, 0]} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %rotated, %twice, %x

// -----

func.func @identity_transpose(%x: tensor<2x3xf32>, %v: tensor<5xf32>, %img: tensor<1x3x4x5xf32>) -> (tensor<2x3xf32>, tensor<5xf32>, tensor<1x3x5x4xf32>) {
  %0 = graph.transpose %x {axes = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose %v : (tensor<5xf32>) -> tensor<5xf32>
  %2 = graph.transpose %img {axes = [0, 1, 3, 2]} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x4xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<5xf32>, tensor<1x3x5x4xf32>
}

// CHECK-LABEL: func.func @identity_transpose
// CHECK-NEXT:    %0 = graph.transpose %img {axes = [0, 1, 3, 2]} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x4xf32>
// CHECK-NEXT:    func.return %x, %v, %0

// -----

func.func @identity_transpose_of_square(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = graph.transpose %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// Same type is not enough: a square transpose moves elements.
// CHECK-LABEL: func.func @identity_transpose_of_square
// CHECK-NEXT:    %0 = graph.transpose %x : (tensor<3x3xf32>) -> tensor<3x3xf32>

// -----

func.func @cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) {
  %same = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>
  %half = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
  %round_trip = graph.cast %half : (tensor<4xf16>) -> tensor<4xf32>
  func.return %same, %half, %round_trip : tensor<4xf32>, tensor<4xf16>, tensor<4xf32>
}

// f32 -> f16 -> f32 loses precision: it is not x.
// CHECK-LABEL: func.func @cast
// CHECK-NEXT:    %half = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    %round_trip = graph.cast %half : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %half, %round_trip

// -----

func.func @clip_of_clip(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4xf32>
  %1 = graph.clip %0 {min = -1.0 : f32, max = 4.0 : f32} : tensor<4xf32>
  %2 = graph.clip %x {min = 0.0 : f32, max = 1.0 : f32} : tensor<4xf32>
  %3 = graph.clip %2 {min = 2.0 : f32, max = 3.0 : f32} : tensor<4xf32>
  func.return %1, %3 : tensor<4xf32>, tensor<4xf32>
}

// Overlapping bounds intersect; disjoint ones give a constant, which one clip
// cannot say.
// CHECK-LABEL: func.func @clip_of_clip
// CHECK-NEXT:    %0 = graph.clip %x {min = 0.000000e+00 : f32, max = 4.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.clip %x {min = 0.000000e+00 : f32, max = 1.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.clip %1 {min = 2.000000e+00 : f32, max = 3.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    func.return %0, %2

// -----

func.func @clip_of_shared_clip(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %relu6 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4xf32>
  %1 = graph.clip %relu6 {min = 1.0 : f32, max = 2.0 : f32} : tensor<4xf32>
  func.return %relu6, %1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @clip_of_shared_clip
// CHECK-NEXT:    %relu6 = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %0 = graph.clip %relu6 {min = 1.000000e+00 : f32, max = 2.000000e+00 : f32} : tensor<4xf32>
