// RUN: ember-opt %s -p "kernel-unroll{max-extent=2}" | filecheck %s
// RUN: ember-opt %s -p "kernel-unroll{max-extent=1}" | filecheck %s --check-prefix=SHORT

// An innermost loop of at most max-extent iterations becomes one copy of
// its body per iteration, in order, reading the index as a constant.

func.func @sum2(%x: memref<4x2xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 2 {
      kernel.block "y" (%vi = spatial %i, %vk = reduce %k) {
        kernel.init {
          %z = arith.constant 0.0 : f32
          memref.store %z, %y[%vi] : memref<4xf32>
        }
        %a = memref.load %x[%vi, %vk] : memref<4x2xf32>
        %s = memref.load %y[%vi] : memref<4xf32>
        %t = arith.addf %s, %a : f32
        memref.store %t, %y[%vi] : memref<4xf32>
      }
    }
  }
  func.return
}

// CHECK:      kernel.for %i = 0 to 4 {
// CHECK-NEXT:   %[[K0:.*]] = arith.constant 0 : index
// CHECK-NEXT:   kernel.block "y" (%vi = spatial %i, %vk = reduce %[[K0]]) {
// CHECK:        %[[K1:.*]] = arith.constant 1 : index
// CHECK-NEXT:   kernel.block "y" (%vi_1 = spatial %i, %vk_1 = reduce %[[K1]]) {
// CHECK-NOT:  kernel.for %k

// SHORT:      kernel.for %k = 0 to 2 {
