// RUN: ember-opt %s -p kernel-vectorize,kernel-parallelize | filecheck %s
// RUN: ember-opt %s -p "kernel-parallelize{leave-innermost=false}" | filecheck %s --check-prefix=ALL

// The outermost independent loop of more than one iteration runs in
// parallel; the innermost loop is left to kernel-vectorize unless
// leave-innermost=false.  A loop whose iterations share a scratch buffer
// allocated outside it is not independent.

func.func @relu(%x: memref<1x4x32xf32>, %y: memref<1x4x32xf32>) attributes {kernel.kernel} {
  kernel.for %n = 0 to 1 {
    kernel.for %i = 0 to 4 {
      kernel.for %j = 0 to 32 {
        kernel.block "y" (%vn = spatial %n, %vi = spatial %i, %vj = spatial %j) {
          %a = memref.load %x[%vn, %vi, %vj] : memref<1x4x32xf32>
          memref.store %a, %y[%vn, %vi, %vj] : memref<1x4x32xf32>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @relu
// CHECK:         kernel.for %n = 0 to 1 {
// CHECK-NEXT:      kernel.for %i = 0 to 4 parallel {
// CHECK-NEXT:        kernel.for %j = 0 to 32 vectorized {
// ALL-LABEL:   func.func @relu
// ALL:           kernel.for %i = 0 to 4 parallel {
// ALL-NEXT:        kernel.for %j = 0 to 32 {

func.func @shared_scratch(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {kernel.kernel} {
  %t = memref.alloc() : memref<1xf32>
  kernel.for %i = 0 to 4 {
    kernel.for %j = 0 to 8 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %c0 = arith.constant 0 : index
        %a = memref.load %x[%vi, %vj] : memref<4x8xf32>
        memref.store %a, %t[%c0] : memref<1xf32>
        %b = memref.load %t[%c0] : memref<1xf32>
        memref.store %b, %y[%vi, %vj] : memref<4x8xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @shared_scratch
// CHECK:         kernel.for %i = 0 to 4 {
// CHECK-NEXT:      kernel.for %j = 0 to 8 {

// A reduction per row with its accumulator allocated inside the row loop:
// the row loop holds loops, so it is no vector loop and runs in parallel;
// the reduction loop is not independent and stays serial.

func.func @row_max(%x: memref<4x32xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %o = 0 to 4 {
    %acc = memref.alloc() : memref<1xf32>
    %c0 = arith.constant 0 : index
    kernel.block "init" (%vo = spatial %o) {
      %z = arith.constant 0.0 : f32
      memref.store %z, %acc[%c0] : memref<1xf32>
    }
    kernel.for %r = 0 to 32 {
      kernel.block "max" (%vo = spatial %o, %vr = reduce %r) {
        %a = memref.load %x[%vo, %vr] : memref<4x32xf32>
        %m = memref.load %acc[%c0] : memref<1xf32>
        %n = arith.maximumf %a, %m : f32
        memref.store %n, %acc[%c0] : memref<1xf32>
      }
    }
    kernel.block "store" (%vo = spatial %o) {
      %m = memref.load %acc[%c0] : memref<1xf32>
      memref.store %m, %y[%vo] : memref<4xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @row_max
// CHECK:         kernel.for %o = 0 to 4 parallel {
// CHECK:           kernel.for %r = 0 to 32 {
