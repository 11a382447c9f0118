// RUN: ember-opt %s -p dce | filecheck %s

// Graph ops are Pure: xDSL's dce removes those whose results are unused,
// constants included.

func.func @dce(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %unused = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %dead_chain = graph.relu %unused : tensor<2x4xf32>
  %constant = graph.constant {value = dense<1.0> : tensor<8xf32>} : tensor<8xf32>
  %kept = graph.sigmoid %x : tensor<2x8xf32>
  func.return %kept : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @dce
// CHECK-NEXT:    %kept = graph.sigmoid %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %kept : tensor<2x8xf32>
