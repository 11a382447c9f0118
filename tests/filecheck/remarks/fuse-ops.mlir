// RUN: ember-opt %s --split-input-file -p fuse-ops --remarks=fuse-ops -o /dev/null 2>&1 | filecheck %s
// RUN: ember-opt %s --split-input-file -p fuse-ops --remarks-missed=fuse-ops -o /dev/null 2>&1 | filecheck %s --check-prefix=MISSED
// RUN: ember-opt %s --split-input-file -p fuse-ops -o /dev/null 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty

// Each group formed is an applied remark at its first op; each op that joins
// it is one at its own line.  --remarks-missed says why an op stayed out.

func.func @conv_add_relu(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %a = graph.add %c, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = graph.relu %a : tensor<1x3x4x4xf32>
  func.return %r : tensor<1x3x4x4xf32>
}

// CHECK: fuse-ops.mlir:9:3: remark: [fuse-ops] graph.conv2d anchors fused_conv2d_add_relu: 3 ops in one kernel
// CHECK-NEXT: fuse-ops.mlir:10:3: remark: [fuse-ops] graph.add fused into fused_conv2d_add_relu
// CHECK-NEXT: fuse-ops.mlir:11:3: remark: [fuse-ops] graph.relu fused into fused_conv2d_add_relu
// MISSED-NOT: fused_conv2d_add_relu
// QUIET-NOT: remark

// -----

// The conv's value is also a result of the function: the relu after it
// cannot join (it would need the conv's value as a second kernel output).

func.func @two_consumers(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %a = graph.add %c, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = graph.relu %a : tensor<1x3x4x4xf32>
  func.return %a, %r : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}

// CHECK: fuse-ops.mlir:27:3: remark: [fuse-ops] graph.conv2d anchors fused_conv2d_add: 2 ops in one kernel
// CHECK-NOT: graph.relu fused
// MISSED: fuse-ops.mlir:29:3: remark: [fuse-ops] missed: graph.relu not fused with graph.conv2d: the value of graph.add it follows has a consumer outside the group (multiple consumers), and it is never recomputed

// -----

// softmax is opaque: it never joins a group, and never starts one.

func.func @dense_softmax(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>) -> tensor<1x4xf32> {
  %d = graph.dense %x, %w : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
  %s = graph.softmax %d : tensor<1x4xf32>
  func.return %s : tensor<1x4xf32>
}

// MISSED: fuse-ops.mlir:43:3: remark: [fuse-ops] missed: graph.softmax not fused with graph.dense: its pattern kind is opaque; only elementwise, broadcast or injective ops follow the first op of a group
// MISSED-NEXT: fuse-ops.mlir:43:3: remark: [fuse-ops] missed: graph.softmax not fused: it is opaque (TVM's kOpaque): it is never fused
