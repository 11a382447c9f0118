// RUN: ember-opt %s -p kernel-accumulate-rows,kernel-vectorize | filecheck %s

// A max pool's naive nest (per output element a one-float accumulator and
// the window's loops): the accumulator becomes a row over %ow, allocated in
// the parallel loop, and %ow moves inside the window's loops.

func.func @max_pool2d(%data: memref<1x2x4x8xf32>, %out: memref<1x2x4x4xf32>) attributes {kernel.kernel} {
  kernel.for %n = 0 to 1 {
    kernel.for %c = 0 to 2 parallel {
      kernel.for %oh = 0 to 4 {
        kernel.for %ow = 0 to 4 {
          %acc = memref.alloc() : memref<1xf32>
          kernel.block "max_pool2d_init" (%vn = spatial %n, %vc = spatial %c, %voh = spatial %oh, %vow = spatial %ow) {
            %0 = arith.constant 0xff800000 : f32
            %1 = arith.constant 0 : index
            memref.store %0, %acc[%1] : memref<1xf32>
          }
          kernel.for %kh = 0 to 1 {
            kernel.for %kw = 0 to 2 {
              kernel.block "max_pool2d" (%vn_1 = spatial %n, %vc_1 = spatial %c, %voh_1 = spatial %oh, %vow_1 = spatial %ow, %vkh = reduce %kh, %vkw = reduce %kw) {
                %2 = arith.addi %voh_1, %vkh : index
                %3 = arith.constant 2 : index
                %4 = arith.muli %vow_1, %3 : index
                %5 = arith.addi %4, %vkw : index
                %6 = memref.load %data[%vn_1, %vc_1, %2, %5] : memref<1x2x4x8xf32>
                %7 = arith.constant 0 : index
                %8 = memref.load %acc[%7] : memref<1xf32>
                %9 = arith.maximumf %8, %6 : f32
                memref.store %9, %acc[%7] : memref<1xf32>
              }
            }
          }
          kernel.block "max_pool2d_store" (%vn_2 = spatial %n, %vc_2 = spatial %c, %voh_2 = spatial %oh, %vow_2 = spatial %ow) {
            %10 = arith.constant 0 : index
            %11 = memref.load %acc[%10] : memref<1xf32>
            memref.store %11, %out[%vn_2, %vc_2, %voh_2, %vow_2] : memref<1x2x4x4xf32>
          }
          memref.dealloc %acc : memref<1xf32>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @max_pool2d
// CHECK:         kernel.for %c = 0 to 2 parallel {
// CHECK-NEXT:      %acc = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      kernel.for %oh = 0 to 4 {
// CHECK-NEXT:        kernel.for %ow = 0 to 4 vectorized {
// CHECK-NEXT:          kernel.block "max_pool2d_init"
// CHECK-NEXT:            %{{.*}} = arith.constant 0xff800000 : f32
// CHECK-NEXT:            memref.store %{{.*}}, %acc[%vow] : memref<4xf32>
// CHECK:             kernel.for %kh = 0 to 1 {
// CHECK-NEXT:          kernel.for %kw = 0 to 2 {
// CHECK-NEXT:            kernel.for %ow_1 = 0 to 4 vectorized {
// CHECK-NEXT:              kernel.block "max_pool2d" ({{.*}}%vow_1 = spatial %ow_1, %vkh = reduce %kh, %vkw = reduce %kw)
// CHECK-NOT:               arith.constant 0 : index
// CHECK:                   %[[OLD:.*]] = memref.load %acc[%vow_1] : memref<4xf32>
// CHECK-NEXT:              %[[NEW:.*]] = arith.maximumf %[[OLD]]
// CHECK-NEXT:              memref.store %[[NEW]], %acc[%vow_1] : memref<4xf32>
// CHECK:             kernel.for %ow_2 = 0 to 4 vectorized {
// CHECK-NEXT:          kernel.block "max_pool2d_store"
// CHECK-NEXT:            memref.load %acc[%vow_2] : memref<4xf32>
// CHECK:           memref.dealloc %acc : memref<4xf32>

// A sum along each row's own last axis: %i does not walk the rows, so the
// reduction stays innermost with its scalar accumulator.
func.func @row_sum(%x: memref<4x32xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 parallel {
    %acc = memref.alloc() : memref<1xf32>
    kernel.block "sum_init" (%vi = spatial %i) {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      memref.store %zero, %acc[%c0] : memref<1xf32>
    }
    kernel.for %k = 0 to 32 {
      kernel.block "sum" (%vi = spatial %i, %vk = reduce %k) {
        %c0 = arith.constant 0 : index
        %a = memref.load %x[%vi, %vk] : memref<4x32xf32>
        %s = memref.load %acc[%c0] : memref<1xf32>
        %t = arith.addf %s, %a : f32
        memref.store %t, %acc[%c0] : memref<1xf32>
      }
    }
    kernel.block "sum_store" (%vi = spatial %i) {
      %c0 = arith.constant 0 : index
      %s = memref.load %acc[%c0] : memref<1xf32>
      memref.store %s, %y[%vi] : memref<4xf32>
    }
    memref.dealloc %acc : memref<1xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @row_sum
// CHECK:         kernel.for %i = 0 to 4 parallel {
// CHECK-NEXT:      %acc = memref.alloc() : memref<1xf32>
// CHECK:           kernel.for %k = 0 to 32 {
