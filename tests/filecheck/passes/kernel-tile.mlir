// RUN: ember-opt %s -p "kernel-tile{sizes=2,4}" | filecheck %s
// RUN: ember-opt %s -p "kernel-tile{sizes=2,4},kernel-vectorize,kernel-parallelize" | filecheck %s --check-prefix=SCHED
// RUN: ember-opt %s -p "kernel-tile{sizes=3,0}" | filecheck %s --check-prefix=UNEVEN

// Tile loops outside, point loops inside, the body reads tile * size + point.
// A size that does not divide the extent leaves the loop as it is.

func.func @copy(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %j = 0 to 8 {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<4x8xf32>
        memref.store %a, %y[%vi, %vj] : memref<4x8xf32>
      }
    }
  }
  func.return
}

// CHECK:      kernel.for %i_o = 0 to 2 {
// CHECK-NEXT:   kernel.for %j_o = 0 to 2 {
// CHECK-NEXT:     kernel.for %i_i = 0 to 2 {
// CHECK-NEXT:       kernel.for %j_i = 0 to 4 {
// CHECK-NEXT:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:         %[[I0:.*]] = arith.muli %i_o, %[[TWO]] : index
// CHECK-NEXT:         %i = arith.addi %[[I0]], %i_i : index
// CHECK-NEXT:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:         %[[J0:.*]] = arith.muli %j_o, %[[FOUR]] : index
// CHECK-NEXT:         %j = arith.addi %[[J0]], %j_i : index
// CHECK-NEXT:         kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {

// SCHED:      kernel.for %i_o = 0 to 2 parallel {
// SCHED:            kernel.for %j_i = 0 to 4 vectorized {

// UNEVEN:      kernel.for %i = 0 to 4 {
// UNEVEN-NEXT:   kernel.for %j = 0 to 8 {
