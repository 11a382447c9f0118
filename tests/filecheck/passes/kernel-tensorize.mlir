// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | filecheck %s --check-prefix=NAIVE
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256}" | ember-opt -p "kernel-tensorize{vector-bits=256},kernel-vectorize,kernel-parallelize" | filecheck %s
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256},kernel-tensorize{vector-bits=256 ops=matmul}" | filecheck %s --check-prefix=NAIVE

// The lowering emits dense as its naive contraction: per result element a
// one-float accumulator, a reduce block adding x * w in order, and the store.
// kernel-tensorize (run alone on the kernel module) makes it the register-
// tiled micro-kernel; the constant weight is packed where it is bound into
// the panels the kernel reads: [units/lanes][in][lanes], zero-padded.  The
// calls reading one constant share its packed copy; the original goes away
// when nothing else reads it.

func.func @main(%x: tensor<1x4xf32>, %y: tensor<1x4xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x4xf32>) {
  %w = graph.constant {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>} : tensor<3x4xf32>
  %v = graph.constant {value = dense<0.5> : tensor<3x4xf32>} : tensor<3x4xf32>
  %0 = graph.dense %x, %w : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  %1 = graph.dense %y, %w : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  %2 = graph.dense %x, %v : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  %3 = graph.relu %v : tensor<3x4xf32>
  func.return %0, %2, %3 : tensor<1x3xf32>, tensor<1x3xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK-NOT:     %w = graph.constant
// Lanes 0-2 of the first row hold w[0..2][0] = 1, 5, 9 (a blob: f32 little-endian).
// CHECK:         %w_packed = graph.constant {value = dense<"0x0000803F0000A04000001041000000000000{{.*}}"> : tensor<1x4x64xf32>} : tensor<1x4x64xf32>
// CHECK:         %v = graph.constant
// CHECK:         %v_packed = graph.constant {{.*}} : tensor<1x4x64xf32>
// CHECK:         graph.call_kernel @dense(%x, %w_packed) : (tensor<1x4xf32>, tensor<1x4x64xf32>) -> tensor<1x3xf32>
// CHECK:         graph.call_kernel @dense(%y, %w_packed) : (tensor<1x4xf32>, tensor<1x4x64xf32>) -> tensor<1x3xf32>
// CHECK:         graph.call_kernel @dense(%x, %v_packed) : (tensor<1x4xf32>, tensor<1x4x64xf32>) -> tensor<1x3xf32>
// CHECK:         graph.call_kernel @relu(%v) : (tensor<3x4xf32>) -> tensor<3x4xf32>

// The kernel takes the panels and packs nothing itself.
// CHECK-LABEL: func.func @dense(%data: memref<1x4xf32>, %weight: memref<1x4x64xf32>, %out: memref<1x3xf32>) attributes {kernel.kernel} {
// CHECK-NOT:     kernel.block "pack"
// CHECK:         %acc = memref.alloc() : memref<1x64xf32>
// CHECK:         kernel.block "dense"
// CHECK:           memref.load %weight[%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x64xf32>

// CHECK:         kernel.for %l_2 = 0 to 3 vectorized {
// CHECK-NEXT:      kernel.block "dense_store"

// NAIVE-LABEL: func.func @main(
// NAIVE:         graph.call_kernel @dense(%x, %w) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
// NAIVE-LABEL: func.func @dense(%data: memref<1x4xf32>, %weight: memref<3x4xf32>, %out: memref<1x3xf32>) attributes {kernel.kernel} {
// NAIVE-NEXT:    kernel.for %i = 0 to 1 {
// NAIVE-NEXT:      kernel.for %j = 0 to 3 {
// NAIVE-NEXT:        %acc = memref.alloc() : memref<1xf32>
// NAIVE:             kernel.block "dense_init" (%vi = spatial %i, %vj = spatial %j) {
// NAIVE:             kernel.for %k = 0 to 4 {
// NAIVE-NEXT:          kernel.block "dense" (%vi_1 = spatial %i, %vj_1 = spatial %j, %vk = reduce %k) {
// NAIVE-NEXT:            %[[X:.*]] = memref.load %data[%vi_1, %vk] : memref<1x4xf32>
// NAIVE-NEXT:            %[[W:.*]] = memref.load %weight[%vj_1, %vk] : memref<3x4xf32>
// NAIVE:                 %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// NAIVE-NEXT:            arith.addf %{{.*}}, %[[P]] : f32
// NAIVE:             kernel.block "dense_store" (%vi_2 = spatial %i, %vj_2 = spatial %j) {
