// RUN: ember-opt %s -p kernel-separate-window | filecheck %s

// A 3x3 max window at stride 2 along the row (the nest kernel-accumulate-rows
// makes of max_pool2d): the max over the window's rows is taken first, along
// whole input rows, then 3 of those column maxima per output, at stride 2.

func.func @max_pool2d(%data: memref<1x2x6x9xf32>, %out: memref<1x2x4x4xf32>) attributes {kernel.kernel} {
  kernel.for %n = 0 to 1 {
    kernel.for %c = 0 to 2 parallel {
      %acc = memref.alloc() : memref<4xf32>
      kernel.for %oh = 0 to 4 {
        kernel.for %ow = 0 to 4 {
          kernel.block "max_pool2d_init" (%vn = spatial %n, %vc = spatial %c, %voh = spatial %oh, %vow = spatial %ow) {
            %0 = arith.constant 0xff800000 : f32
            memref.store %0, %acc[%vow] : memref<4xf32>
          }
        }
        kernel.for %kh = 0 to 3 {
          kernel.for %kw = 0 to 3 {
            kernel.for %ow_1 = 0 to 4 {
              kernel.block "max_pool2d" (%vn_1 = spatial %n, %vc_1 = spatial %c, %voh_1 = spatial %oh, %vow_1 = spatial %ow_1, %vkh = reduce %kh, %vkw = reduce %kw) {
                %1 = arith.addi %voh_1, %vkh : index
                %2 = arith.constant 2 : index
                %3 = arith.muli %vow_1, %2 : index
                %4 = arith.addi %3, %vkw : index
                %5 = memref.load %data[%vn_1, %vc_1, %1, %4] : memref<1x2x6x9xf32>
                %6 = memref.load %acc[%vow_1] : memref<4xf32>
                %7 = arith.maximumf %6, %5 : f32
                memref.store %7, %acc[%vow_1] : memref<4xf32>
              }
            }
          }
        }
        kernel.for %ow_2 = 0 to 4 {
          kernel.block "max_pool2d_store" (%vn_2 = spatial %n, %vc_2 = spatial %c, %voh_2 = spatial %oh, %vow_2 = spatial %ow_2) {
            %8 = memref.load %acc[%vow_2] : memref<4xf32>
            memref.store %8, %out[%vn_2, %vc_2, %voh_2, %vow_2] : memref<1x2x4x4xf32>
          }
        }
      }
      memref.dealloc %acc : memref<4xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @max_pool2d
// CHECK:         %acc = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %window = memref.alloc() : memref<9xf32>
// CHECK:         kernel.for %x = 0 to 9 {
// CHECK-NEXT:      kernel.block "max_pool2d_window_init"
// CHECK-NEXT:        %[[INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        memref.store %[[INF]], %window[%vx] : memref<9xf32>
// CHECK:         kernel.for %kh = 0 to 3 {
// CHECK-NEXT:      kernel.for %x_1 = 0 to 9 {
// CHECK-NEXT:        kernel.block "max_pool2d_window" ({{.*}}%vkh = reduce %kh, %vx_1 = spatial %x_1)
// CHECK-NEXT:          %[[Y:.*]] = arith.addi %voh_2, %vkh : index
// CHECK-NEXT:          %[[IN:.*]] = memref.load %data[%vn_2, %vc_2, %[[Y]], %vx_1] : memref<1x2x6x9xf32>
// CHECK-NEXT:          %[[OLD:.*]] = memref.load %window[%vx_1] : memref<9xf32>
// CHECK-NEXT:          %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[IN]] : f32
// CHECK-NEXT:          memref.store %[[MAX]], %window[%vx_1] : memref<9xf32>
// CHECK:         kernel.for %kw = 0 to 3 {
// CHECK-NEXT:      kernel.for %ow_1 = 0 to 4 {
// CHECK-NEXT:        kernel.block "max_pool2d" ({{.*}}%vow_1 = spatial %ow_1, %vkw = reduce %kw)
// CHECK-NEXT:          %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:          %[[S:.*]] = arith.muli %vow_1, %[[TWO]] : index
// CHECK-NEXT:          %[[X:.*]] = arith.addi %[[S]], %vkw : index
// CHECK-NEXT:          %[[PICK:.*]] = memref.load %window[%[[X]]] : memref<9xf32>
// CHECK-NEXT:          %[[ROW:.*]] = memref.load %acc[%vow_1] : memref<4xf32>
// CHECK-NEXT:          %{{.*}} = arith.maximumf %[[ROW]], %[[PICK]] : f32
// CHECK:         memref.dealloc %window : memref<9xf32>
// CHECK-NEXT:    memref.dealloc %acc : memref<4xf32>
