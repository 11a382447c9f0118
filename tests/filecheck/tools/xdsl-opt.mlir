// RUN: xdsl-opt %s -p canonicalize,cse | filecheck %s

// Installed ember registers its dialects and passes with stock xdsl-opt (the
// xdsl.universe entry point): the graph dialect parses, and graph ops'
// canonicalization patterns run in xDSL's own canonicalize pass.

func.func @main(%x: tensor<1x16xf32>) -> (tensor<1x16xf32>, tensor<1x16xf32>) {
  %ones = graph.constant {value = dense<1.0> : tensor<1x16xf32>} : tensor<1x16xf32>
  %scaled = graph.multiply %x, %ones : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  %a = graph.relu %scaled : tensor<1x16xf32>
  %b = graph.relu %a : tensor<1x16xf32>
  %c = graph.relu %x : tensor<1x16xf32>
  func.return %b, %c : tensor<1x16xf32>, tensor<1x16xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %a = graph.relu %x : tensor<1x16xf32>
// CHECK-NEXT:    func.return %a, %a : tensor<1x16xf32>, tensor<1x16xf32>
