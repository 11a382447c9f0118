// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | filecheck %s --check-prefix=NAIVE
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | ember-opt -p kernel-pad-input | filecheck %s
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | ember-opt -p "kernel-pad-input,kernel-tensorize{vector-bits=256}" | filecheck %s --check-prefix=ROWS

// The lowering emits a padded depthwise conv2d as its naive contraction: the
// input is read through its padding, the load clamped into the data and a
// select picking 0 outside it, the channel that of the output's group.
// kernel-pad-input copies the input once into a zero-filled f32 buffer as
// large as the windows read (rows 0..6 of the padded plane: padding [1, 1]
// before, none needed after, though the layer says 1) and reads the copy
// with no tests; kernel-tensorize then makes the grouped nest: output
// channels parallel, the reduction outside a vectorized loop over the row.

func.func @main(%x: tensor<1x4x6x6xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = graph.conv2d %x, %w {strides = [2, 2], dilation = [1, 1], padding = [1, 1, 1, 1], groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}

// NAIVE-LABEL: func.func @conv2d(%data: memref<1x4x6x6xf32>, %weight: memref<4x1x3x3xf32>, %out: memref<1x4x3x3xf32>) attributes {kernel.kernel} {
// NAIVE-NEXT:    kernel.for %n = 0 to 1 {
// NAIVE-NEXT:      kernel.for %oc = 0 to 4 {
// NAIVE:           kernel.block "conv2d" (%vn_1 = spatial %n, %voc_1 = spatial %oc, %voh_1 = spatial %oh, %vow_1 = spatial %ow, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw) {
// NAIVE:             %[[GROUP:.*]] = arith.divsi %voc_1, %{{.*}} : index
// NAIVE:             %[[CHANNEL:.*]] = arith.addi %[[GROUP]], %vic : index
// NAIVE:             %[[INSIDE:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// NAIVE-NEXT:        %[[VALUE:.*]] = memref.load %data[%vn_1, %[[CHANNEL]], %{{.*}}, %{{.*}}] : memref<1x4x6x6xf32>
// NAIVE-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// NAIVE-NEXT:        %[[A:.*]] = arith.select %[[INSIDE]], %[[VALUE]], %[[ZERO]] : f32
// NAIVE:             arith.mulf %[[A]], %{{.*}} : f32
// NAIVE-NOT:     memref.dealloc %pad

// CHECK-LABEL: func.func @conv2d(%data: memref<1x4x6x6xf32>, %weight: memref<4x1x3x3xf32>, %out: memref<1x4x3x3xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x4x7x7xf32>
// CHECK-NEXT:    kernel.for %n = 0 to 1 {
// CHECK-NEXT:      kernel.for %c = 0 to 4 parallel {
// CHECK-NEXT:        kernel.for %hw = 0 to 49 vectorized {
// CHECK-NEXT:          kernel.block "pad_fill"
// CHECK:             kernel.for %h = 0 to 6 {
// CHECK-NEXT:          kernel.for %w = 0 to 6 vectorized {
// CHECK-NEXT:            kernel.block "pad_copy"
// CHECK:                   memref.store %{{.*}}, %pad[%vn_1, %vc_1, %{{.*}}, %{{.*}}] : memref<1x4x7x7xf32>
// CHECK:           kernel.block "conv2d"
// CHECK-NOT:         arith.select
// CHECK:             %[[Y:.*]] = arith.addi %{{.*}}, %vkh : index
// CHECK:             %[[X:.*]] = arith.addi %{{.*}}, %vkw : index
// CHECK:             %[[A:.*]] = memref.load %pad[%vn_3, %{{.*}}, %[[Y]], %[[X]]] : memref<1x4x7x7xf32>
// CHECK-NOT:         arith.select
// CHECK:             arith.mulf %[[A]], %{{.*}} : f32
// CHECK:         memref.dealloc %pad : memref<1x4x7x7xf32>
// CHECK-NEXT:    func.return

// ROWS-LABEL: func.func @conv2d(
// ROWS:          %pad = memref.alloc() : memref<1x4x7x7xf32>
// ROWS:          kernel.for %n_1 = 0 to 1 {
// ROWS-NEXT:       kernel.for %oc = 0 to 4 parallel {
// ROWS-NEXT:         %acc = memref.alloc() : memref<3xf32>
// ROWS:              kernel.for %ic = 0 to 1 {
// ROWS-NEXT:           kernel.for %kh = 0 to 3 {
// ROWS-NEXT:             kernel.for %kw = 0 to 3 {
// ROWS-NEXT:               kernel.for %ow_1 = 0 to 3 vectorized {
// ROWS-NEXT:                 kernel.block "conv2d"
// ROWS:                        memref.load %pad[
// ROWS:          memref.dealloc %pad : memref<1x4x7x7xf32>
