// RUN: ember-opt %s -p 'split-graph{ops=relu indices=0}' --remarks=split-graph --remarks-analysis=split-graph -o /dev/null 2>&1 | filecheck %s
// RUN: ember-opt %s -p 'split-graph{ops=relu indices=0}' --remarks=split-graph -o /dev/null 2>&1 | filecheck %s --check-prefix=APPLIED

// The cut is an applied remark at the op it follows; the estimated cost of
// each stage (FLOPs: 2 per multiply-add) is an analysis remark.

func.func @main(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>, %w1: tensor<4x16xf32>) -> tensor<1x4xf32> {
  %h = graph.dense %x, %w0 : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  %r = graph.relu %h : tensor<1x16xf32>
  %y = graph.dense %r, %w1 : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK: split-graph.mlir:9:3: remark: [split-graph] cut after graph.relu: @main_0 ends here, @main_1 starts (1 value crosses)
// CHECK-NEXT: split-graph.mlir:8:3: remark: [split-graph] analysis: stage @main_0: 2 ops, estimated 272 FLOP, 736 B (68% of the FLOPs)
// CHECK-NEXT: split-graph.mlir:10:3: remark: [split-graph] analysis: stage @main_1: 1 ops, estimated 128 FLOP, 336 B (32% of the FLOPs)
// APPLIED: remark: [split-graph] cut after graph.relu
// APPLIED-NOT: analysis
