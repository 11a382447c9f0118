// RUN: ember-opt %s -p 'split-graph{balance=2 costs=%S/Inputs/split-graph-costs.json}' --remarks-analysis=split-graph 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=COST < %t.remarks

// The function of split-graph-balance.mlir, whose estimate cuts after the
// first dense.  Measured times (Inputs/split-graph-costs.json: 1, 1 and 3 ms)
// make the second dense the heavy op: the cut moves after the relu, and the
// remarks give each stage's measured time beside its estimate.

func.func @main(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>, %w1: tensor<4x16xf32>) -> tensor<1x4xf32> {
  %h = graph.dense %x, %w0 : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  %r = graph.relu %h : tensor<1x16xf32>
  %y = graph.dense %r, %w1 : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK:      func.func @main_0(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>) -> tensor<1x16xf32> {
// CHECK-NEXT:   %h = graph.dense %x, %w0
// CHECK-NEXT:   %r = graph.relu %h
// CHECK-NEXT:   func.return %r
// CHECK:      func.func @main_1(
// CHECK-NEXT:   %y = graph.dense
// COST: stage @main_0: 2 ops, estimated 272 FLOP, {{.*}}; measured 2 ms (40% of the time)
// COST: stage @main_1: 1 ops, estimated 128 FLOP, {{.*}}; measured 3 ms (60% of the time)
