// RUN: ember-opt %s -p kernel-separate-window | filecheck %s

// A padded 3x3 max window at stride 2 over the copy kernel-pad-input made
// (-inf around the input): the window row reads %data itself, its rows
// clamped into the input (every window reaches into it, and max of a value
// already taken changes nothing), the columns landing at window[x + 1] (the
// padding column keeps the window's -inf); the copy and %pad are gone.

func.func @max_pool2d(%data: memref<1x2x6x8xf32>, %out: memref<1x2x3x4xf32>) attributes {kernel.kernel} {
  %pad = memref.alloc() : memref<1x2x7x9xf32>
  kernel.for %n = 0 to 1 {
    kernel.for %c = 0 to 2 parallel {
      kernel.for %hw = 0 to 63 vectorized {
        kernel.block "pad_fill" (%vn = spatial %n, %vc = spatial %c, %vhw = spatial %hw) {
          %0 = arith.constant 9 : index
          %1 = arith.divsi %vhw, %0 : index
          %2 = arith.remsi %vhw, %0 : index
          %3 = arith.constant 0xff800000 : f32
          memref.store %3, %pad[%vn, %vc, %1, %2] : memref<1x2x7x9xf32>
        }
      }
      kernel.for %h = 0 to 6 {
        kernel.for %w = 0 to 8 vectorized {
          kernel.block "pad_copy" (%vn_1 = spatial %n, %vc_1 = spatial %c, %vh = spatial %h, %vw = spatial %w) {
            %4 = memref.load %data[%vn_1, %vc_1, %vh, %vw] : memref<1x2x6x8xf32>
            %5 = arith.constant 1 : index
            %6 = arith.addi %vh, %5 : index
            %7 = arith.addi %vw, %5 : index
            memref.store %4, %pad[%vn_1, %vc_1, %6, %7] : memref<1x2x7x9xf32>
          }
        }
      }
    }
  }
  kernel.for %n_1 = 0 to 1 {
    kernel.for %c_1 = 0 to 2 {
      kernel.for %oh = 0 to 3 {
        %acc = memref.alloc() : memref<4xf32>
        kernel.for %ow = 0 to 4 {
          kernel.block "max_pool2d_init" (%vn_2 = spatial %n_1, %vc_2 = spatial %c_1, %voh = spatial %oh, %vow = spatial %ow) {
            %8 = arith.constant 0xff800000 : f32
            memref.store %8, %acc[%vow] : memref<4xf32>
          }
        }
        kernel.for %kh = 0 to 3 {
          kernel.for %kw = 0 to 3 {
            kernel.for %ow_1 = 0 to 4 {
              kernel.block "max_pool2d" (%vn_3 = spatial %n_1, %vc_3 = spatial %c_1, %voh_1 = spatial %oh, %vow_1 = spatial %ow_1, %vkh = reduce %kh, %vkw = reduce %kw) {
                %9 = arith.constant 2 : index
                %10 = arith.muli %voh_1, %9 : index
                %11 = arith.addi %10, %vkh : index
                %12 = arith.muli %vow_1, %9 : index
                %13 = arith.addi %12, %vkw : index
                %14 = memref.load %pad[%vn_3, %vc_3, %11, %13] : memref<1x2x7x9xf32>
                %15 = memref.load %acc[%vow_1] : memref<4xf32>
                %16 = arith.maximumf %15, %14 : f32
                memref.store %16, %acc[%vow_1] : memref<4xf32>
              }
            }
          }
        }
        kernel.for %ow_2 = 0 to 4 {
          kernel.block "max_pool2d_store" (%vn_4 = spatial %n_1, %vc_4 = spatial %c_1, %voh_2 = spatial %oh, %vow_2 = spatial %ow_2) {
            %17 = memref.load %acc[%vow_2] : memref<4xf32>
            memref.store %17, %out[%vn_4, %vc_4, %voh_2, %vow_2] : memref<1x2x3x4xf32>
          }
        }
        memref.dealloc %acc : memref<4xf32>
      }
    }
  }
  memref.dealloc %pad : memref<1x2x7x9xf32>
  func.return
}

// CHECK-LABEL: func.func @max_pool2d
// CHECK-NOT:     %pad
// CHECK-NOT:     "pad_fill"
// CHECK-NOT:     "pad_copy"
// CHECK:         %window = memref.alloc() : memref<9xf32>
// CHECK:         kernel.for %x = 0 to 9 {
// CHECK-NEXT:      kernel.block "max_pool2d_window_init"
// CHECK:         kernel.for %kh = 0 to 3 {
// CHECK-NEXT:      kernel.for %x_1 = 0 to 8 {
// CHECK-NEXT:        kernel.block "max_pool2d_window" ({{.*}}%vkh = reduce %kh, %vx_1 = spatial %x_1)
// CHECK:               %[[Y:.*]] = arith.addi %{{.*}}, %vkh : index
// CHECK-NEXT:          %[[M1:.*]] = arith.constant -1 : index
// CHECK-NEXT:          %[[ROW:.*]] = arith.addi %[[Y]], %[[M1]] : index
// CHECK-NEXT:          %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:          %[[LAST:.*]] = arith.constant 5 : index
// CHECK-NEXT:          %[[ABOVE:.*]] = arith.cmpi sgt, %[[ROW]], %[[ZERO]] : index
// CHECK-NEXT:          %[[LOW:.*]] = arith.select %[[ABOVE]], %[[ROW]], %[[ZERO]] : index
// CHECK-NEXT:          %[[BELOW:.*]] = arith.cmpi slt, %[[LOW]], %[[LAST]] : index
// CHECK-NEXT:          %[[R:.*]] = arith.select %[[BELOW]], %[[LOW]], %[[LAST]] : index
// CHECK-NEXT:          %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:          %[[AT:.*]] = arith.addi %vx_1, %[[ONE]] : index
// CHECK-NEXT:          %[[IN:.*]] = memref.load %data[%{{.*}}, %{{.*}}, %[[R]], %vx_1] : memref<1x2x6x8xf32>
// CHECK-NEXT:          %[[OLD:.*]] = memref.load %window[%[[AT]]] : memref<9xf32>
// CHECK-NEXT:          %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[IN]] : f32
// CHECK-NEXT:          memref.store %[[MAX]], %window[%[[AT]]] : memref<9xf32>
// CHECK-NOT:     %pad
