// RUN: ember-translate %s --emit=llvm-dialect --pipeline "" | filecheck %s

// Kernels that lower to the same llvm.func up to their name are compiled
// once: @twice_again is merged into @twice and its call goes to @twice.
// @thrice differs in one constant and stays.
func.func @twice(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}
func.func @twice_again(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}
func.func @thrice(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      %three = arith.constant 3.0 : f32
      %y = arith.mulf %x, %three : f32
      memref.store %y, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.call_kernel @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.call_kernel @twice_again(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.call_kernel @thrice(%b) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// CHECK-NOT:  @twice_again
// CHECK:      llvm.func @twice(
// CHECK-NOT:  @twice_again
// CHECK:      llvm.func @thrice(
// CHECK-NOT:  @twice_again
// CHECK:      llvm.func @__ember_entry_main(
// CHECK:        llvm.call @twice(
// CHECK-NEXT:   llvm.call @twice(
// CHECK-NEXT:   llvm.call @thrice(
// CHECK-NOT:  @twice_again
