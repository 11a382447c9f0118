// RUN: not ember-opt %s 2>&1 | filecheck %s
// RUN: not ember-opt %s -p not-a-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not ember-opt %s -p 'canonicalize{bad-option=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not ember-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING

// Without --verify-diagnostics a diagnostic goes to stderr, with the exit
// code 1, and names the file, line and column of the failing op.

func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) -> tensor<2x4xf32> {
  %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// CHECK:      ember-opt-errors.mlir:10:3: error: graph.dense: weight has 5 input features but data has 3
// CHECK-NEXT:   %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   ^^^^
// CHECK-NOT:  Traceback

// PASS:      ember-opt: error: unknown pass 'not-a-pass'
// PASS-NOT:  Traceback

// OPTION:      ember-opt: error: invalid options for pass 'canonicalize':
// OPTION-SAME: bad_option
// OPTION-NOT:  Traceback

// MISSING:     ember-opt: error: cannot read input file '{{.*}}ember-opt-errors.mlir.missing': No such file or directory
// MISSING-NOT: Traceback
