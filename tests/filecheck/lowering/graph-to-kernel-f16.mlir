// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256},kernel-tensorize{vector-bits=256},kernel-vectorize,kernel-parallelize" | filecheck %s

// f16 ops compute in f32 and round once, when the result is stored
// (ember.interp.reference's convention); a dense over f16 accumulates in f32,
// its weight widened to f32 once, when the kernel packs it into panels.

func.func @main(%a: tensor<2x8xf16>, %b: tensor<8xf16>, %w: tensor<3x8xf16>) -> tensor<2x3xf16> {
  %0 = graph.add %a, %b : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
  %1 = graph.dense %0, %w : (tensor<2x8xf16>, tensor<3x8xf16>) -> tensor<2x3xf16>
  func.return %1 : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @add(%lhs: memref<2x8xf16>, %rhs: memref<8xf16>, %out: memref<2x8xf16>) attributes {kernel.kernel} {
// CHECK-NEXT:    kernel.for %i0 = 0 to 2 parallel {
// CHECK-NEXT:      kernel.for %i1 = 0 to 8 vectorized {
// CHECK-NEXT:        kernel.block "add" (%vi0 = spatial %i0, %vi1 = spatial %i1) {
// CHECK-NEXT:          %0 = memref.load %lhs[%vi0, %vi1] : memref<2x8xf16>
// CHECK-NEXT:          %1 = arith.extf %0 : f16 to f32
// CHECK-NEXT:          %2 = memref.load %rhs[%vi1] : memref<8xf16>
// CHECK-NEXT:          %3 = arith.extf %2 : f16 to f32
// CHECK-NEXT:          %4 = arith.addf %1, %3 : f32
// CHECK-NEXT:          %5 = arith.truncf %4 : f32 to f16
// CHECK-NEXT:          memref.store %5, %out[%vi0, %vi1] : memref<2x8xf16>

// CHECK-LABEL: func.func @dense(%data: memref<2x8xf16>, %weight: memref<3x8xf16>, %out: memref<2x3xf16>) attributes {kernel.kernel} {
// CHECK:         %panels = memref.alloc() : memref<1x8x32xf32>
// CHECK:         kernel.block "pack"
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:         %acc = memref.alloc() : memref<2x32xf32>
// CHECK:         kernel.block "dense"
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:         kernel.block "dense_store"
// CHECK:           arith.truncf %{{.*}} : f32 to f16
