// RUN: ember-opt %s -p simplify-inference,fold-constants --remarks='simplify-inference|fold-constants' -o /dev/null 2>&1 | filecheck %s

// batch_norm with constant parameters becomes a constant scale and shift;
// fold-constants then folds the scale into the conv's constant weight.

func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %g = graph.constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %b = graph.constant {value = dense<0.25> : tensor<2xf32>} : tensor<2xf32>
  %m = graph.constant {value = dense<0.0> : tensor<2xf32>} : tensor<2xf32>
  %v = graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %n : tensor<1x2x4x4xf32>
}

// CHECK: simplify-fold.mlir:13:3: remark: [simplify-inference] graph.batch_norm rewritten as multiply and add (constant scale and shift)
// CHECK-NEXT: simplify-fold.mlir:13:3: remark: [fold-constants] per-channel graph.multiply folded into the weight of graph.conv2d
