// RUN: ember-translate %s --emit=llvm-dialect --pipeline "" | filecheck %s

// A graph program of kernel and extern calls becomes ONE native entry over a
// frame [inputs, outputs, constants, workspace, context]. Intermediates share
// a workspace (a dead buffer is reused), the last call writes straight into
// its output, and an argument or constant that is returned is copied.
func.func @scale(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %a = graph.call_kernel @scale(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.call_kernel @scale(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %e = graph.call_extern "env.add_one"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %d = graph.call_kernel @scale(%e) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d, %x, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK:      llvm.func @__ember_entry_main(%frame: !llvm.ptr) attributes {passthrough = {{\[\["prefer-vector-width", "[0-9]+"\], \["min-legal-vector-width", "[0-9]+"\]\]}}} {
// CHECK:        %x = llvm.load
// CHECK:        %out0 = llvm.load
// CHECK:        %out1 = llvm.load
// CHECK:        %out2 = llvm.load
// CHECK:        %c0 = llvm.load
// CHECK:        %workspace = llvm.load
// CHECK:        %context = llvm.load
// CHECK:        %[[B:.*]] = llvm.getelementptr inbounds %workspace[64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:   llvm.call @scale(%x, %workspace)
// CHECK-NEXT:   llvm.call @scale(%workspace, %[[B]])
// The extern's output reuses the first buffer, dead by now.
// CHECK:        llvm.store %[[B]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:        llvm.store %workspace, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:        llvm.call @ember_call_extern(%context, %{{.*}}, %{{.*}})
// CHECK-NEXT:   llvm.call @scale(%workspace, %out0)
// CHECK:        llvm.call @memcpy(%out1, %x, %{{.*}})
// CHECK:        llvm.call @memcpy(%out2, %c0, %{{.*}})
// CHECK-NEXT:   llvm.return
// The profile entry: the same program with the monotonic clock read into
// clock[i] (16-byte timespecs) before call i and after the last call.
// CHECK:      llvm.func @__ember_profile_main(%{{.*}}: !llvm.ptr, %clock: !llvm.ptr) attributes {passthrough = {{.*}}} {
// CHECK:        %[[ID0:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:   llvm.call @clock_gettime(%[[ID0]], %clock)
// CHECK-NEXT:   llvm.call @scale(
// CHECK-NEXT:   %[[T1:.*]] = llvm.getelementptr inbounds %clock[16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:        llvm.call @clock_gettime(%{{.*}}, %[[T1]])
// CHECK-NEXT:   llvm.call @scale(
// CHECK:        llvm.getelementptr inbounds %clock[32]
// CHECK:        llvm.call @ember_call_extern(
// CHECK:        llvm.getelementptr inbounds %clock[48]
// CHECK:        llvm.call @scale(
// CHECK-NEXT:   %[[T4:.*]] = llvm.getelementptr inbounds %clock[64]
// CHECK:        llvm.call @clock_gettime(%{{.*}}, %[[T4]])
// CHECK-NEXT:   llvm.mlir.constant(16) : i64
// CHECK-NEXT:   llvm.call @memcpy(
// CHECK:      llvm.func @memcpy(!llvm.ptr, !llvm.ptr, i64) -> !llvm.ptr
// CHECK:      llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
// CHECK:      llvm.func @ember_call_extern(!llvm.ptr, i64, !llvm.ptr)
