// RUN: ember-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = diagonal %i) {
    }
  }
  func.return
}

// CHECK:      invalid-syntax.mlir:5:29: error: expected 'spatial' or 'reduce', got 'diagonal'
// CHECK-NEXT:     kernel.block "Y" (%vi = diagonal %i) {
// CHECK-NEXT:                             ^^^^^^^^
// CHECK-NOT:  expected 'spatial'

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to %n {
  }
  func.return
}

// CHECK: Expected integer literal (loop upper bound)
