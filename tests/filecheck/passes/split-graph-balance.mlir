// RUN: ember-opt %s -p 'split-graph{balance=2}' --remarks-analysis=split-graph 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=COST < %t.remarks

// balance=2 cuts where the two stages' estimated FLOPs are closest: after the
// first dense (2*1*16*8 = 256 FLOPs of 256+16+128), not after the relu.

func.func @main(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>, %w1: tensor<4x16xf32>) -> tensor<1x4xf32> {
  %h = graph.dense %x, %w0 : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  %r = graph.relu %h : tensor<1x16xf32>
  %y = graph.dense %r, %w1 : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK:      func.func @main_0(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>) -> tensor<1x16xf32> {
// CHECK-NEXT:   %h = graph.dense %x, %w0
// CHECK-NEXT:   func.return %h
// CHECK:      func.func @main_1(
// CHECK-NEXT:   %r = graph.relu
// COST: stage @main_0: 1 ops, estimated 256 FLOP
// COST: stage @main_1: 2 ops, estimated 144 FLOP
