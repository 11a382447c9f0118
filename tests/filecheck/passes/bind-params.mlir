// The params file: what numpy.savez writes (w is 2x2, b has 2 elements).
// RUN: python -c "import numpy as np; np.savez('%t.npz', w=np.array([[1, 2], [3, 4]], np.float32), b=np.array([0.5, -0.5], np.float32))"
// RUN: python -c "import numpy as np; np.savez('%t.bias.npz', bias=np.zeros(2, np.float32), w=np.zeros((2, 3), np.float32))"
// RUN: ember-opt %s -p 'bind-params{file="%t.npz"}' | filecheck %s
// RUN: ember-opt %s -p 'bind-params{file="%t.npz" names=b}' | filecheck %s --check-prefix=ONLY-B
// RUN: ember-opt %s -p 'bind-params{file="%t.npz" names=w,b},fold-constants' | filecheck %s --check-prefix=FOLD
// RUN: ember-opt %s --verify-diagnostics -p 'bind-params{file="%t.bias.npz" names=bias}' | filecheck %s --check-prefix=UNKNOWN
// RUN: ember-opt %s --verify-diagnostics -p 'bind-params{file="%t.bias.npz" names=w}' | filecheck %s --check-prefix=SHAPE
// RUN: ember-opt %s --verify-diagnostics -p 'bind-params{file="%t.npz" names=bias}' | filecheck %s --check-prefix=NOT-IN-FILE
// RUN: ember-opt %s --verify-diagnostics -p 'bind-params{file="%t.npz" entry=other}' | filecheck %s --check-prefix=ENTRY
// RUN: ember-opt %s --verify-diagnostics -p 'bind-params{file="%t.missing.npz"}' | filecheck %s --check-prefix=MISSING
// RUN: ember-opt %s --verify-diagnostics -p bind-params | filecheck %s --check-prefix=NOFILE

func.func @main(%x: tensor<1x2xf32>, %w: tensor<2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2xf32> {
  %d = graph.dense %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %y = graph.bias_add %d, %b : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// Every array of the file: both arguments leave the signature and become
// constants with the arguments' names.
// CHECK:      func.func @main(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
// CHECK-NEXT:   %w = graph.constant {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NEXT:   %b = graph.constant {value = dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:   %d = graph.dense %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:   %y = graph.bias_add %d, %b : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>

// names= picks arrays: %w stays an argument.
// ONLY-B:      func.func @main(%x: tensor<1x2xf32>, %w: tensor<2x2xf32>) -> tensor<1x2xf32> {
// ONLY-B-NEXT:   %b = graph.constant {value = dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>} : tensor<2xf32>
// ONLY-B-NEXT:   %d = graph.dense %x, %w

// Bound weights are ordinary constants for the passes that follow; here
// nothing is all-constant, so fold-constants leaves the ops.
// FOLD:      func.func @main(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
// FOLD:        %y = graph.bias_add %d, %b

// Mistakes, each reported before the module changes.
// UNKNOWN: bind-params: @main has no argument named 'bias'
// UNKNOWN-SAME: (arguments: x, w, b)

// SHAPE: bind-params: argument %w of @main is tensor<2x2xf32> (float32[2, 2]), but the array is float32[2, 3]

// NOT-IN-FILE: has no array named 'bias' (it has: w, b)

// ENTRY: bind-params: no function @other in the module (functions: @main)

// MISSING: bind-params: cannot read params file '{{.*}}.missing.npz'

// NOFILE: bind-params needs a params file: bind-params{file="params.npz"}
