// RUN: ember-opt %s -p kernel-vectorize | filecheck %s
// RUN: ember-opt %s -p "kernel-vectorize{min-extent=64}" | filecheck %s --check-prefix=LONG

// The innermost loop of an untouched nest becomes vectorized when its
// iterations are independent; a reduction loop and a nest that already
// has a kind are left alone.

func.func @relu(%x: memref<4x32xf32>, %y: memref<4x32xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %j = 0 to 32 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<4x32xf32>
        %z = arith.constant 0.0 : f32
        %r = arith.maximumf %a, %z : f32
        memref.store %r, %y[%vi, %vj] : memref<4x32xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @relu
// CHECK:         kernel.for %i = 0 to 4 {
// CHECK-NEXT:      kernel.for %j = 0 to 32 vectorized {
// LONG-LABEL:  func.func @relu
// LONG:          kernel.for %j = 0 to 32 {

func.func @row_sum(%x: memref<4x32xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 32 {
      kernel.block "y" (%vi = spatial %i, %vk = reduce %k) {
        kernel.init {
          %z = arith.constant 0.0 : f32
          memref.store %z, %y[%vi] : memref<4xf32>
        }
        %a = memref.load %x[%vi, %vk] : memref<4x32xf32>
        %s = memref.load %y[%vi] : memref<4xf32>
        %t = arith.addf %s, %a : f32
        memref.store %t, %y[%vi] : memref<4xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @row_sum
// CHECK:         kernel.for %i = 0 to 4 {
// CHECK-NEXT:      kernel.for %k = 0 to 32 {

func.func @scheduled(%x: memref<4x32xf32>, %y: memref<4x32xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 unrolled {
    kernel.for %j = 0 to 32 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<4x32xf32>
        memref.store %a, %y[%vi, %vj] : memref<4x32xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @scheduled
// CHECK:         kernel.for %i = 0 to 4 unrolled {
// CHECK-NEXT:      kernel.for %j = 0 to 32 {

// kernel-parallelize runs first in the default schedule: a parallel loop
// does not keep the leaves of its nest from being vectorized, wherever
// they are.
func.func @parallel_first(%x: memref<4x32xf32>, %y: memref<4x32xf32>, %z: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 parallel {
    kernel.for %j = 0 to 32 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<4x32xf32>
        memref.store %a, %y[%vi, %vj] : memref<4x32xf32>
      }
    }
    kernel.block "z" (%vi = spatial %i) {
      %c0 = arith.constant 0 : index
      %b = memref.load %x[%vi, %c0] : memref<4x32xf32>
      memref.store %b, %z[%vi] : memref<4xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @parallel_first
// CHECK:         kernel.for %i = 0 to 4 parallel {
// CHECK-NEXT:      kernel.for %j = 0 to 32 vectorized {
