// RUN: ember-opt %s -p plan-memory | filecheck %s
// RUN: ember-opt %s -p plan-memory | ember-translate /dev/stdin --emit=llvm-dialect --pipeline "" | filecheck %s --check-prefix=LOWERED
// RUN: ember-opt %s -p plan-memory | sed 's/array<i64: 256>/array<i64: 64>/' > %t.overlap
// RUN: not ember-translate %t.overlap --emit=llvm-dialect --pipeline "" 2>&1 | filecheck %s --check-prefix=OVERLAP
// RUN: ember-opt %s -p plan-memory | sed 's/array<i64: 256>/array<i64: 8>/' > %t.unaligned
// RUN: not ember-translate %t.unaligned --emit=llvm-dialect --pipeline "" 2>&1 | filecheck %s --check-prefix=UNALIGNED
// RUN: sed 's/graph.call_kernel @relu(%%c) :/graph.relu %%c :/' %s > %t.unlowered
// RUN: not ember-opt %t.unlowered -p plan-memory 2>&1 | filecheck %s --check-prefix=UNLOWERED

// A chain of kernel calls: each intermediate dies at the next call, so two
// 256-byte buffers alternate in the workspace (512 bytes) where one buffer
// per tensor would take 768, and the last call writes straight into the
// output (offset -1).
func.func @relu(%X: memref<1x64xf32>, %Y: memref<1x64xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 64 {
    kernel.block "Y" (%vi = spatial %i) {
      %c0 = arith.constant 0 : index
      %x = memref.load %X[%c0, %vi] : memref<1x64xf32>
      %zero = arith.constant 0.0 : f32
      %y = arith.maximumf %x, %zero : f32
      memref.store %y, %Y[%c0, %vi] : memref<1x64xf32>
    }
  }
  func.return
}
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %a = graph.call_kernel @relu(%x) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = graph.call_kernel @relu(%a) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = graph.call_kernel @relu(%b) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %d = graph.call_kernel @relu(%c) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %d : tensor<1x64xf32>
}

// The kernel is left alone; the program carries its plan.
// CHECK:      func.func @relu(%X: memref<1x64xf32>, %Y: memref<1x64xf32>) attributes {kernel.kernel} {
// CHECK:      func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> attributes {ember.workspace_bytes = 512 : i64, ember.peak_bytes = 512 : i64, ember.naive_bytes = 768 : i64} {
// CHECK-NEXT:   %a = graph.call_kernel @relu(%x) {ember.offsets = array<i64: 0>}
// CHECK-NEXT:   %b = graph.call_kernel @relu(%a) {ember.offsets = array<i64: 256>}
// CHECK-NEXT:   %c = graph.call_kernel @relu(%b) {ember.offsets = array<i64: 0>}
// CHECK-NEXT:   %d = graph.call_kernel @relu(%c) {ember.offsets = array<i64: -1>}

// The lowering places the buffers where the plan says.
// LOWERED:      llvm.func @__ember_entry_main(%frame: !llvm.ptr) attributes {passthrough = {{.*}}} {
// LOWERED:        %workspace = llvm.load
// LOWERED:        %{{.*}} = llvm.getelementptr inbounds %workspace[256] : (!llvm.ptr) -> !llvm.ptr, i8
// LOWERED:        llvm.call @relu(%x, %workspace)
// LOWERED-NEXT:   llvm.call @relu(%workspace, %{{.*}})

// A plan in which two live buffers share bytes is refused, naming the op.
// OVERLAP:      ember-translate: error: lower-program-to-llvm: wrong memory plan: its buffer [64, 320) overlaps [0, 256) of a value still live
// OVERLAP-NEXT:   in @main: %b = graph.call_kernel @relu(%a) {ember.offsets = array<i64: 64>}

// UNALIGNED:    error: lower-program-to-llvm: wrong memory plan: offset 8 of a 256-byte buffer is not a multiple of 64 inside the 512-byte workspace

// Only kernel programs are planned.
// UNLOWERED:    plan-memory: graph.relu is not lowered to a kernel call (run lower-graph-to-kernel first)
