// RUN: ember-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = diagonal %i) {
    }
  }
  func.return
}

// CHECK:      kernel.block "Y" (%vi = diagonal %i) {
// CHECK-NEXT:                         ^^^^^^^^
// CHECK-NEXT:                         expected 'spatial' or 'reduce', got 'diagonal'

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to %n {
  }
  func.return
}

// CHECK: Expected integer literal (loop upper bound)
