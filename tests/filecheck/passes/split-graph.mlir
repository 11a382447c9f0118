// RUN: ember-opt %s --split-input-file -p 'split-graph{ops=relu indices=0}' | filecheck %s
// RUN: ember-opt %s --split-input-file --verify-diagnostics -p 'split-graph{ops="graph.relu","graph.add" indices=0,0 target=interp}' | filecheck %s --check-prefix=TWO
// RUN: ember-opt %s --split-input-file --verify-diagnostics -p 'split-graph{ops=graph.relu,graph.add indices=0,0 target=interp}' | filecheck %s --check-prefix=TWO
// RUN: ember-opt %s --split-input-file --verify-diagnostics -p 'split-graph{ops=relu indices=5}' | filecheck %s --check-prefix=RANGE
// RUN: ember-opt %s --split-input-file --verify-diagnostics -p 'split-graph{ops=sigmoid indices=0}' | filecheck %s --check-prefix=MISSING
// RUN: ember-opt %s --split-input-file --verify-diagnostics -p 'split-graph{ops=relu,add indices=0}' | filecheck %s --check-prefix=LENGTHS

// The network of the pipeline-executor tutorial (seed 000), split after its
// first relu: the seeds' graph_split.  Arguments keep their names; the relu
// crosses the cut as %data_n.

func.func @main(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dweight: tensor<1x1024xf32>) -> tensor<1x1xf32> {
  %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %1 = graph.relu %0 : tensor<1x16x8x8xf32>
  %2 = graph.batch_flatten %1 : (tensor<1x16x8x8xf32>) -> tensor<1x1024xf32>
  %3 = graph.dense %2, %dweight : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
  func.return %3 : tensor<1x1xf32>
}

// CHECK:       func.func @main_0(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32> {
// CHECK-NEXT:    %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %1 = graph.relu %0 : tensor<1x16x8x8xf32>
// CHECK-NEXT:    func.return %1 : tensor<1x16x8x8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @main_1(%data_n: tensor<1x16x8x8xf32>, %dweight: tensor<1x1024xf32>) -> tensor<1x1xf32> {
// CHECK-NEXT:    %0 = graph.batch_flatten %data_n : (tensor<1x16x8x8xf32>) -> tensor<1x1024xf32>
// CHECK-NEXT:    %1 = graph.dense %0, %dweight : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    func.return %1 : tensor<1x1xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  pipeline.graph @main(%data: tensor<1x3x8x8xf32>, %weight: tensor<16x3x3x3xf32>, %dweight: tensor<1x1024xf32>) -> tensor<1x1xf32> {
// CHECK-NEXT:    %data_n = pipeline.stage @main_0(%data, %weight) {target = "llvm", device = "cpu:0"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %data_n_1 = pipeline.stage @main_1(%data_n, %dweight) {target = "llvm", device = "cpu:0"} : (tensor<1x16x8x8xf32>, tensor<1x1024xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    pipeline.yield %data_n_1 : tensor<1x1xf32>
// CHECK-NEXT:  }

// RANGE: error: split-graph{ops=relu indices=5}: index 5 of graph.relu is out of range: @main has 1 graph.relu op (indices 0..0)
// MISSING: error: split-graph{ops=sigmoid indices=0}: @main has no graph.sigmoid op (its ops: graph.batch_flatten, graph.conv2d, graph.dense, graph.relu)
// LENGTHS: error: split-graph{ops=relu,add indices=0}: ops has 2 names but indices has 1 values; give one index per op, or one op for all indices

// -----

// The argument %y is returned, so it goes through the last stage.  With
// two cuts (TWO), %a is used two stages later and reaches it directly.

func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = graph.relu %x : tensor<4xf32>
  %b = graph.add %a, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = graph.multiply %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c, %y : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @main_0(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK:       func.func @main_1(%data_n: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:         func.return %c, %y : tensor<4xf32>, tensor<4xf32>
// CHECK:       pipeline.graph @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %data_n = pipeline.stage @main_0(%x)
// CHECK-NEXT:    %data_n_1, %y_1 = pipeline.stage @main_1(%data_n, %y)
// CHECK-NEXT:    pipeline.yield %data_n_1, %y_1 : tensor<4xf32>, tensor<4xf32>

// TWO-LABEL: func.func @main_0(%x: tensor<4xf32>) -> tensor<4xf32> {
// TWO-NEXT:    %a = graph.relu %x : tensor<4xf32>
// TWO-NEXT:    func.return %a : tensor<4xf32>
// TWO:       func.func @main_1(%data_n: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
// TWO-NEXT:    %b = graph.add %data_n, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// TWO-NEXT:    func.return %b : tensor<4xf32>
// TWO:       func.func @main_2(%data_n: tensor<4xf32>, %data_n_1: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// TWO-NEXT:    %c = graph.multiply %data_n, %data_n_1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// TWO-NEXT:    func.return %c, %y : tensor<4xf32>, tensor<4xf32>
// TWO:       pipeline.graph @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// TWO-NEXT:    %data_n = pipeline.stage @main_0(%x) {target = "interp", device = "cpu:0"}
// TWO-NEXT:    %data_n_1 = pipeline.stage @main_1(%data_n, %y) {target = "interp", device = "cpu:0"}
// TWO-NEXT:    %data_n_2, %y_1 = pipeline.stage @main_2(%data_n, %data_n_1, %y) {target = "interp", device = "cpu:0"}
// TWO-NEXT:    pipeline.yield %data_n_2, %y_1 : tensor<4xf32>, tensor<4xf32>
