// RUN: ember-opt %s -p "kernel-pack-layout{kernel=scale arg=1 lanes=4}" | filecheck %s
// RUN: not ember-opt %s -p "kernel-pack-layout{kernel=scale arg=0 lanes=4}" 2>&1 | filecheck %s --check-prefix=INPUT

// Input 1 of @scale is read in panels of 4 along its first axis; the
// constant the program passes there is repacked (at bind time), the
// original erased once nothing reads it.

func.func @main(%x: tensor<6x3xf32>) -> tensor<6x3xf32> {
  %w = graph.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<6x3xf32>} : tensor<6x3xf32>
  %y = graph.call_kernel @scale(%x, %w) : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3xf32>
  func.return %y : tensor<6x3xf32>
}

func.func @scale(%x: memref<6x3xf32>, %w: memref<6x3xf32>, %y: memref<6x3xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 6 {
    kernel.for %j = 0 to 3 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<6x3xf32>
        %b = memref.load %w[%vi, %vj] : memref<6x3xf32>
        %p = arith.mulf %a, %b : f32
        memref.store %p, %y[%vi, %vj] : memref<6x3xf32>
      }
    }
  }
  func.return
}

// CHECK:       %w_packed = graph.constant {value = dense<{{.*}}> : tensor<2x3x4xf32>} : tensor<2x3x4xf32>
// CHECK-NOT:   tensor<6x3xf32> = graph.constant
// CHECK:       graph.call_kernel @scale(%x, %w_packed) : (tensor<6x3xf32>, tensor<2x3x4xf32>) -> tensor<6x3xf32>
// CHECK:       func.func @scale(%x: memref<6x3xf32>, %w: memref<2x3x4xf32>, %y: memref<6x3xf32>)
// CHECK:         %[[LANES:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[PANEL:.*]] = arith.divsi %vi, %[[LANES]] : index
// CHECK-NEXT:    %[[LANE:.*]] = arith.remsi %vi, %[[LANES]] : index
// CHECK-NEXT:    %b = memref.load %w[%[[PANEL]], %vj, %[[LANE]]] : memref<2x3x4xf32>

// INPUT: kernel-pack-layout: operand #0 of a call of @scale is not a graph.constant


// RUN: ember-opt %s -p "kernel-pack-layout{kernel=scale arg=1 axis=1 lanes=2}" | filecheck %s --check-prefix=AXIS1
// AXIS1:       %w_packed = graph.constant {value = dense<{{.*}}> : tensor<6x2x2xf32>} : tensor<6x2x2xf32>
// AXIS1:       func.func @scale(%x: memref<6x3xf32>, %w: memref<6x2x2xf32>, %y: memref<6x3xf32>)
// AXIS1:         %[[LANES:.*]] = arith.constant 2 : index
// AXIS1-NEXT:    %[[BLOCK:.*]] = arith.divsi %vj, %[[LANES]] : index
// AXIS1-NEXT:    %[[LANE:.*]] = arith.remsi %vj, %[[LANES]] : index
// AXIS1-NEXT:    %b = memref.load %w[%vi, %[[BLOCK]], %[[LANE]]] : memref<6x2x2xf32>
