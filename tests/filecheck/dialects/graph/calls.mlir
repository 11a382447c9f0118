// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// Program-level ops: graph.call_kernel calls a kernel function in
// destination-passing style (inputs, then one buffer per result);
// graph.call_extern calls a function of the runtime registry.

func.func @relu0(%x: memref<1x128xf32>, %y: memref<1x128xf32>) attributes {kernel.kernel} {
  func.return
}

func.func @split2(%x: memref<4xf32>, %lo: memref<2xf32>, %hi: memref<2xf32>) attributes {kernel.kernel} {
  func.return
}

func.func @main(%x: tensor<1x128xf32>, %v: tensor<4xf32>) -> (tensor<1x128xf32>, tensor<2xf32>, tensor<1x128xf32>) {
  %relu = graph.call_kernel @relu0(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32>
  %lo, %hi = graph.call_kernel @split2(%v) : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %linear = graph.call_extern "env.linear"(%relu, %x) {alpha = 1.0 : f32} : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32>
  func.return %relu, %lo, %linear : tensor<1x128xf32>, tensor<2xf32>, tensor<1x128xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %relu = graph.call_kernel @relu0(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32>
// CHECK-NEXT:    %lo, %hi = graph.call_kernel @split2(%v) : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT:    %linear = graph.call_extern "env.linear"(%relu, %x) {alpha = 1.000000e+00 : f32} : (tensor<1x128xf32>, tensor<1x128xf32>) -> tensor<1x128xf32>
