// RUN: ember-opt %s -p lower-kernel-to-llvm | filecheck %s

// A reduction with an init statement, a temporary on the stack, a strided
// access and float arithmetic that may be reassociated and contracted (but
// keeps NaN, inf and -0.0: no nnan/ninf/nsz/arcp).
func.func @rowsum(%A: memref<4x8xf32>, %S: memref<4xf32>) attributes {kernel.kernel} {
  %T = memref.alloc() : memref<4xf32>
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 8 step 2 {
      kernel.block "T" (%vi = spatial %i, %vk = reduce %k) {
        kernel.init {
          %zero = arith.constant 0.0 : f32
          memref.store %zero, %T[%vi] : memref<4xf32>
        }
        %t = memref.load %T[%vi] : memref<4xf32>
        %a = memref.load %A[%vi, %vk] : memref<4x8xf32>
        %s = arith.addf %t, %a : f32
        memref.store %s, %T[%vi] : memref<4xf32>
      }
    }
  }
  kernel.for %i = 0 to 4 {
    kernel.block "S" (%vi = spatial %i) {
      %t = memref.load %T[%vi] : memref<4xf32>
      %m = arith.maximumf %t, %t : f32
      %h = math.tanh %m : f32
      memref.store %h, %S[%vi] : memref<4xf32>
    }
  }
  memref.dealloc %T : memref<4xf32>
  func.return
}

// CHECK-LABEL: llvm.func @rowsum(%A: !llvm.ptr {llvm.noalias}, %S: !llvm.ptr {llvm.noalias}) {
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.alloca %[[N]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// A constant is made once per function, in its entry block.
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[EIGHT:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK:         llvm.br ^[[LOOP_I:.*]](%[[ZERO]] : i64)
// CHECK-NEXT:  ^[[LOOP_I]](%i: i64):
// CHECK:         llvm.br ^[[LOOP_K:.*]](%[[ZERO]] : i64)
// CHECK-NEXT:  ^[[LOOP_K]](%k: i64):
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.icmp "eq" %k, %[[ZERO]] : i64
// CHECK-NEXT:    llvm.cond_br %[[FIRST]], ^[[INIT:.*]], ^[[UPDATE:.*]]
// CHECK-NEXT:  ^[[INIT]]:
// CHECK:         llvm.store
// CHECK-NEXT:    llvm.br ^[[UPDATE]]
// CHECK-NEXT:  ^[[UPDATE]]:
// CHECK:         %[[ROW:.*]] = llvm.mul %i, %[[EIGHT]] overflow<nsw> : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.add %[[ROW]], %k overflow<nsw> : i64
// CHECK-NEXT:    %[[PTR:.*]] = llvm.getelementptr inbounds %A[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[AV:.*]] = llvm.load %[[PTR]] : !llvm.ptr -> f32
// CHECK-NEXT:    %{{.*}} = llvm.fadd %{{.*}}, %[[AV]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK:         %[[NEXT:.*]] = llvm.add %k, %[[STEP]] overflow<nsw> : i64
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt" %[[NEXT]], %[[EIGHT]] : i64
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[LOOP_K]](%[[NEXT]] : i64), ^{{.*}}
// arith.maximumf is IEEE 754-2019 maximum: NaN on either side wins.
// CHECK:         %[[MAX:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[X:.*]], %[[X]]) : (f32, f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @tanhf(%[[MAX]]) : (f32) -> f32
// CHECK:         llvm.return
// CHECK-NEXT:  }

// A temporary too large for the stack is malloc'd and freed at return.
func.func @big(%Y: memref<256x256xf32>) attributes {kernel.kernel} {
  %T = memref.alloc() : memref<256x256xf32>
  func.return
}

// CHECK-LABEL: llvm.func @big(%Y: !llvm.ptr {llvm.noalias}) {
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mlir.constant(262144) : i64
// CHECK-NEXT:    %[[BUF:.*]] = llvm.call @malloc(%[[BYTES]]) : (i64) -> !llvm.ptr
// CHECK-NEXT:    llvm.call @free(%[[BUF]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return

// Functions that are not kernels are left alone; C functions are declared.
func.func @not_a_kernel(%x: f32) -> f32 {
  func.return %x : f32
}

// CHECK:       func.func @not_a_kernel(%x: f32) -> f32 {
// CHECK-DAG:   llvm.func @free(!llvm.ptr)
// CHECK-DAG:   llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @tanhf(f32) -> f32
