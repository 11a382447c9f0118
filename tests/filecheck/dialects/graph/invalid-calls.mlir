// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Diagnostics of graph.call_kernel and graph.call_extern.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.call_kernel"(%x) {callee = "k"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: needs a callee symbol

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: no kernel named @missing

// -----

"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<4xf32>, initial_value = unit}> : () -> ()

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @table(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: @table is not a function

// -----

func.func @k(%x: memref<4xf32>) {
  func.return
}

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: @k takes 1 buffers but the call passes 1 inputs and 1 outputs

// -----

func.func @k(%x: memref<8xf32>, %y: memref<4xf32>) {
  func.return
}

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: input 0 is tensor<4xf32> but @k expects memref<8xf32>

// -----

func.func @k(%x: memref<4xf32>, %y: memref<4xf16>) {
  func.return
}

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: output 0 is tensor<4xf32> but @k expects memref<4xf16>

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @k(%x) : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: expected a function type

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_extern ""(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_extern: needs a function name

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  graph.call_extern "env.print"(%x) : (tensor<4xf32>) -> ()
  func.return %x : tensor<4xf32>
}

// CHECK: error: graph.call_extern: must have at least one result

// -----

// A kernel without its marker: the call names the missing attribute.
func.func @copy(%X: memref<4xf32>, %Y: memref<4xf32>) {
  func.return
}

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @copy(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: graph.call_kernel: @copy is not a kernel: it lacks the kernel.kernel attribute (`attributes {kernel.kernel}`)
