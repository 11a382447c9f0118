// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The pipeline of the pipeline-executor tutorial (seed 000): two subgraphs
// of tiny_pipe, the second on CUDA.  Global inputs are the graph's block
// arguments; a stage output feeds a later stage and a global output.

func.func @mod0(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %1 = graph.relu %0 : tensor<1x16x8x8xf32>
  func.return %1 : tensor<1x16x8x8xf32>
}

func.func @mod1(%data_n: tensor<1x16x8x8xf32>, %dweight: tensor<1x1024xf32>) -> tensor<1x1xf32> {
  %0 = graph.batch_flatten %data_n : (tensor<1x16x8x8xf32>) -> tensor<1x1024xf32>
  %1 = graph.dense %0, %dweight : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
  func.return %1 : tensor<1x1xf32>
}

pipeline.graph @net(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dweight: tensor<1x1024xf32>) -> (tensor<1x1xf32>, tensor<1x16x8x8xf32>) {
  %a = pipeline.stage @mod0(%data, %weight) {target = "llvm", device = "cpu:0"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = pipeline.stage @mod1(%a, %dweight) {target = "cuda", device = "cuda:0"} : (tensor<1x16x8x8xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
  pipeline.yield %b, %a : tensor<1x1xf32>, tensor<1x16x8x8xf32>
}

// CHECK-LABEL: pipeline.graph @net(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dweight: tensor<1x1024xf32>) -> (tensor<1x1xf32>, tensor<1x16x8x8xf32>) {
// CHECK-NEXT:    %a = pipeline.stage @mod0(%data, %weight) {target = "llvm", device = "cpu:0"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %b = pipeline.stage @mod1(%a, %dweight) {target = "cuda", device = "cuda:0"} : (tensor<1x16x8x8xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    pipeline.yield %b, %a : tensor<1x1xf32>, tensor<1x16x8x8xf32>
// CHECK-NEXT:  }

// GENERIC:      "pipeline.graph"() <{sym_name = "net", function_type = (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<1x1024xf32>) -> (tensor<1x1xf32>, tensor<1x16x8x8xf32>)}> ({
// GENERIC-NEXT: ^bb0(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dweight: tensor<1x1024xf32>):
// GENERIC-NEXT:   %a = "pipeline.stage"(%data, %weight) <{callee = @mod0, target = "llvm", device = "cpu:0"}> : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// GENERIC-NEXT:   %b = "pipeline.stage"(%a, %dweight) <{callee = @mod1, target = "cuda", device = "cuda:0"}> : (tensor<1x16x8x8xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
// GENERIC-NEXT:   "pipeline.yield"(%b, %a) : (tensor<1x1xf32>, tensor<1x16x8x8xf32>) -> ()
// GENERIC-NEXT: }) : () -> ()

// A stage with several outputs, a stage with none of the global inputs, a
// target the dialect does not know (left to the runtime), extra attributes.

func.func @split(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.relu %x : tensor<4xf32>
  %1 = graph.negative %x : tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

func.func @join(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %p, %q : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

pipeline.graph @multi(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {note = "two stages"} {
  %p, %q = pipeline.stage @split(%x) {target = "interp", device = "cpu:0"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %s = pipeline.stage @join(%p, %q) {target = "my-accel", device = "cpu:1", priority = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  pipeline.yield %s, %q : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: pipeline.graph @multi(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {note = "two stages"} {
// CHECK-NEXT:    %p, %q = pipeline.stage @split(%x) {target = "interp", device = "cpu:0"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %s = pipeline.stage @join(%p, %q) {priority = 2 : i64, target = "my-accel", device = "cpu:1"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    pipeline.yield %s, %q : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  }
