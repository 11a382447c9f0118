// RUN: ember-opt %s --split-input-file --verify-diagnostics -p lower-graph-to-kernel | filecheck %s

// An op that is not a graph op cannot be lowered: the pass names it and
// changes nothing.

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %x : tensor<2xf32>
  %1 = arith.addf %0, %0 : tensor<2xf32>
  func.return %1 : tensor<2xf32>
}

// CHECK:      lower-graph-to-kernel: cannot lower 'arith.addf': only graph ops can be lowered to kernels
// CHECK-NEXT:   in @main: %{{.*}} = arith.addf %{{.*}}, %{{.*}} : tensor<2xf32>
