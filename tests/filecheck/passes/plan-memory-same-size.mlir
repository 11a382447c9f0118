// RUN: ember-opt %s -p plan-memory | filecheck %s

// A free block of the buffer's own size is taken before first fit: when %d
// is placed, %a's 512 bytes at 0 and %b's 256 at 512 are free, and %d (256
// bytes) goes where %b was, not to the first gap. Buffers of one size are
// mostly made by kernels of one kind, so the same threads write the same
// lines again (plan_memory._FirstFit).
func.func @widen(%X: memref<1x64xf32>, %Y: memref<1x128xf32>) attributes {kernel.kernel} {
  func.return
}
func.func @same(%X: memref<1x64xf32>, %Y: memref<1x64xf32>) attributes {kernel.kernel} {
  func.return
}
func.func @join(%A: memref<1x128xf32>, %B: memref<1x64xf32>, %Y: memref<1x64xf32>) attributes {kernel.kernel} {
  func.return
}
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %a = graph.call_kernel @widen(%x) : (tensor<1x64xf32>) -> tensor<1x128xf32>
  %b = graph.call_kernel @same(%x) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = graph.call_kernel @join(%a, %b) : (tensor<1x128xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  %d = graph.call_kernel @same(%c) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %e = graph.call_kernel @same(%d) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %e : tensor<1x64xf32>
}

// CHECK:      func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> attributes {ember.workspace_bytes = 1024 : i64, ember.peak_bytes = 1024 : i64, ember.naive_bytes = 1280 : i64} {
// CHECK-NEXT:   %a = graph.call_kernel @widen(%x) {ember.offsets = array<i64: 0>}
// CHECK-NEXT:   %b = graph.call_kernel @same(%x) {ember.offsets = array<i64: 512>}
// CHECK-NEXT:   %c = graph.call_kernel @join(%a, %b) {ember.offsets = array<i64: 768>}
// CHECK-NEXT:   %d = graph.call_kernel @same(%c) {ember.offsets = array<i64: 512>}
// CHECK-NEXT:   %e = graph.call_kernel @same(%d) {ember.offsets = array<i64: -1>}
