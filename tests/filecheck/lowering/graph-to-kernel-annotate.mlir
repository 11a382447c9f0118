// RUN: ember-opt %s -p "fuse-ops,lower-graph-to-kernel{vector-bits=256 annotate=true}" | filecheck %s
// RUN: ember-opt %s -p "fuse-ops,lower-graph-to-kernel{vector-bits=256}" | filecheck %s --check-prefix=PLAIN

// With annotate, each call records the graph ops its kernel computes and
// their FLOPs (what the profiler reports per kernel): a dense of 1x64 by
// 32x64 is 2*32*64 = 4096, the fused bias_add and relu 32 each.
func.func @main(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<1x32xf32> {
  %d = graph.dense %x, %w : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
  %a = graph.bias_add %d, %b {axis = 1 : i64} : (tensor<1x32xf32>, tensor<32xf32>) -> tensor<1x32xf32>
  %r = graph.relu %a : tensor<1x32xf32>
  func.return %r : tensor<1x32xf32>
}

// CHECK: graph.call_kernel @fused_dense_bias_add_relu(%x, %w, %b) {ember.ops = ["graph.dense", "graph.bias_add", "graph.relu"], ember.flops = 4160 : i64} : (
// PLAIN: graph.call_kernel @fused_dense_bias_add_relu(%x, %w, %b) : (
