// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256},kernel-pad-input" | filecheck %s

// A conv2d reads every channel of its windows' rows: the copy of its
// 3-channel input is made in parallel over the padded rows (each thread
// then writes the rows of every channel that the conv's threads, which
// share the output rows, read), each row as its left padding, its data
// (the fill in a padding row: a select on the row, loads contiguous) and
// its right padding.  A max_pool2d reads one channel per output: its copy
// keeps the planes, with 3 channels as with 64.

func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x3x4x4xf32>) {
  %0 = graph.conv2d %x, %w {padding = [1, 2, 1, 0]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @conv2d(
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x3x10x10xf32>
// CHECK-NEXT:    kernel.for %n = 0 to 1 {
// CHECK-NEXT:      kernel.for %r = 0 to 10 parallel {
// CHECK-NEXT:        kernel.for %c = 0 to 3 {
// CHECK-NEXT:          kernel.for %x = 0 to 2 vectorized {
// CHECK-NEXT:            kernel.block "pad_row"
// CHECK-NEXT:              %[[FILL:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:              memref.store %[[FILL]], %pad[%vn, %vc, %vr, %vx] : memref<1x3x10x10xf32>
// CHECK:               kernel.for %x_1 = 0 to 8 vectorized {
// CHECK-NEXT:            kernel.block "pad_row"
// CHECK:                   %[[ROW:.*]] = arith.addi %vr_1, %{{.*}} : index
// CHECK:                   arith.constant 7 : index
// CHECK:                   %[[CLAMPED:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:              %[[INSIDE:.*]] = arith.cmpi eq, %[[ROW]], %[[CLAMPED]] : index
// CHECK-NEXT:              %[[DATA:.*]] = memref.load %data[%vn_1, %vc_1, %[[CLAMPED]], %vx_1] : memref<1x3x8x8xf32>
// CHECK-NEXT:              %[[VALUE:.*]] = arith.select %[[INSIDE]], %[[DATA]], %{{.*}} : f32
// CHECK:                   memref.store %[[VALUE]], %pad[%vn_1, %vc_1, %vr_1, %{{.*}}] : memref<1x3x10x10xf32>
// CHECK-NOT:           kernel.for %x_2
// CHECK:           kernel.block "conv2d"
// CHECK:             memref.load %pad[
// CHECK:         memref.dealloc %pad : memref<1x3x10x10xf32>

// CHECK-LABEL: func.func @max_pool2d(
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x3x9x9xf32>
// CHECK-NEXT:    kernel.for %n = 0 to 1 {
// CHECK-NEXT:      kernel.for %c = 0 to 3 parallel {
// CHECK-NEXT:        kernel.for %hw = 0 to 81 vectorized {
// CHECK-NEXT:          kernel.block "pad_fill"
