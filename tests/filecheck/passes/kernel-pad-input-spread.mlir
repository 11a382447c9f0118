// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | filecheck %s --check-prefix=NAIVE
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | ember-opt -p "kernel-pad-input,kernel-tensorize{vector-bits=256}" | filecheck %s

// conv2d_transpose is lowered as its naive gather contraction: at padded
// coordinate y = oh + kh (before = (3-1)·1 - top = 1) it reads input row
// (y - 1) / 2 where that divides and lies inside, else 0.  kernel-pad-input
// spreads the input into a zero buffer at stride steps (8 x 8: rows 1, 3, 5
// hold the data), and kernel-tensorize makes the gather nest over it, the
// weight read flipped, output channels in parallel.

func.func @main(%x: tensor<1x2x3x3xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  %0 = graph.conv2d_transpose %x, %w {strides = [2, 2], padding = [1, 1, 0, 0]} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  func.return %0 : tensor<1x1x6x6xf32>
}

// NAIVE-LABEL: func.func @conv2d_transpose(
// NAIVE-NEXT:    kernel.for %n = 0 to 1 {
// NAIVE:           kernel.block "conv2d_transpose" (
// NAIVE:             %[[Y:.*]] = arith.addi %voh_1, %vkh : index
// NAIVE:             %[[Y0:.*]] = arith.addi %[[Y]], %{{.*}} : index
// NAIVE:             %[[ROW:.*]] = arith.divsi %[[Y0]], %{{.*}} : index
// NAIVE:             %[[A:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// NAIVE:             memref.load %weight[
// NAIVE:             arith.mulf %[[A]], %{{.*}} : f32
// NAIVE-NOT:     %pad

// CHECK-LABEL: func.func @conv2d_transpose(
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x2x8x8xf32>
// CHECK:               kernel.block "pad_copy"
// CHECK:                 %[[Y:.*]] = arith.muli %vh, %[[TWO:.*]] : index
// CHECK-NEXT:            %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:            %{{.*}} = arith.addi %[[Y]], %[[ONE]] : index
// CHECK:         kernel.for %n_1 = 0 to 1 {
// CHECK-NEXT:      kernel.for %o = 0 to 1 parallel {
// CHECK-NEXT:        %acc = memref.alloc() : memref<1xf32>
// CHECK:                 kernel.block "conv2d_transpose" (
// CHECK-NOT:               arith.select
// CHECK:                   memref.load %pad[%vn_3, %vic, %{{.*}}, %{{.*}}] : memref<1x2x8x8xf32>
// CHECK:         memref.dealloc %pad : memref<1x2x8x8xf32>
