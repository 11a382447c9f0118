// RUN: ember-opt %s | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// The TensorIR kernels of seeds/003 (the MLP of "End to End Model
// Execution"), written in the kernel dialect.  tests/test_kernel_dialect.py
// and tests/test_kernel_to_llvm.py read this file too, and check it against numpy.

func.func @linear0(%X: memref<1x784xf32>, %W: memref<128x784xf32>, %B: memref<128xf32>, %Z: memref<1x128xf32>) attributes {kernel.kernel} {
  %Y = memref.alloc() : memref<1x128xf32>
  kernel.for %i = 0 to 1 {
    kernel.for %j = 0 to 128 {
      kernel.for %k = 0 to 784 {
        kernel.block "Y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
          kernel.init {
            %zero = arith.constant 0.0 : f32
            memref.store %zero, %Y[%vi, %vj] : memref<1x128xf32>
          }
          %acc = memref.load %Y[%vi, %vj] : memref<1x128xf32>
          %x = memref.load %X[%vi, %vk] : memref<1x784xf32>
          %w = memref.load %W[%vj, %vk] : memref<128x784xf32>
          %p = arith.mulf %x, %w : f32
          %s = arith.addf %acc, %p : f32
          memref.store %s, %Y[%vi, %vj] : memref<1x128xf32>
        }
      }
    }
  }
  kernel.for %i = 0 to 1 {
    kernel.for %j = 0 to 128 {
      kernel.block "Z" (%vi = spatial %i, %vj = spatial %j) {
        %y = memref.load %Y[%vi, %vj] : memref<1x128xf32>
        %b = memref.load %B[%vj] : memref<128xf32>
        %z = arith.addf %y, %b : f32
        memref.store %z, %Z[%vi, %vj] : memref<1x128xf32>
      }
    }
  }
  memref.dealloc %Y : memref<1x128xf32>
  func.return
}

// CHECK-LABEL: func.func @linear0(%X: memref<1x784xf32>, %W: memref<128x784xf32>, %B: memref<128xf32>, %Z: memref<1x128xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    %Y = memref.alloc() : memref<1x128xf32>
// CHECK-NEXT:    kernel.for %i = 0 to 1 {
// CHECK-NEXT:      kernel.for %j = 0 to 128 {
// CHECK-NEXT:        kernel.for %k = 0 to 784 {
// CHECK-NEXT:          kernel.block "Y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
// CHECK-NEXT:            kernel.init {
// CHECK-NEXT:              %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:              memref.store %zero, %Y[%vi, %vj] : memref<1x128xf32>
// CHECK-NEXT:            }
// CHECK-NEXT:            %acc = memref.load %Y[%vi, %vj] : memref<1x128xf32>
// CHECK:                 memref.store %s, %Y[%vi, %vj] : memref<1x128xf32>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.for %i_1 = 0 to 1 {
// CHECK-NEXT:      kernel.for %j_1 = 0 to 128 {
// CHECK-NEXT:        kernel.block "Z" (%vi_1 = spatial %i_1, %vj_1 = spatial %j_1) {

func.func @relu0(%X: memref<1x128xf32>, %Y: memref<1x128xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 1 {
    kernel.for %j = 0 to 128 parallel {
      kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
        %x = memref.load %X[%vi, %vj] : memref<1x128xf32>
        %zero = arith.constant 0.0 : f32
        %y = arith.maximumf %x, %zero : f32
        memref.store %y, %Y[%vi, %vj] : memref<1x128xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @relu0(
// CHECK-NEXT:    kernel.for %i = 0 to 1 {
// CHECK-NEXT:      kernel.for %j = 0 to 128 parallel {
// CHECK-NEXT:        kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
// CHECK-NEXT:          %x = memref.load %X[%vi, %vj] : memref<1x128xf32>
// CHECK-NEXT:          %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          %y = arith.maximumf %x, %zero : f32
// CHECK-NEXT:          memref.store %y, %Y[%vi, %vj] : memref<1x128xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

func.func @linear1(%X: memref<1x128xf32>, %W: memref<10x128xf32>, %B: memref<10xf32>, %Z: memref<1x10xf32>) attributes {kernel.kernel} {
  %Y = memref.alloc() : memref<1x10xf32>
  kernel.for %i = 0 to 1 {
    kernel.for %j = 0 to 10 {
      kernel.for %k = 0 to 128 {
        kernel.block "Y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
          kernel.init {
            %zero = arith.constant 0.0 : f32
            memref.store %zero, %Y[%vi, %vj] : memref<1x10xf32>
          }
          %acc = memref.load %Y[%vi, %vj] : memref<1x10xf32>
          %x = memref.load %X[%vi, %vk] : memref<1x128xf32>
          %w = memref.load %W[%vj, %vk] : memref<10x128xf32>
          %p = arith.mulf %x, %w : f32
          %s = arith.addf %acc, %p : f32
          memref.store %s, %Y[%vi, %vj] : memref<1x10xf32>
        }
      }
    }
  }
  kernel.for %i = 0 to 1 {
    kernel.for %j = 0 to 10 {
      kernel.block "Z" (%vi = spatial %i, %vj = spatial %j) {
        %y = memref.load %Y[%vi, %vj] : memref<1x10xf32>
        %b = memref.load %B[%vj] : memref<10xf32>
        %z = arith.addf %y, %b : f32
        memref.store %z, %Z[%vi, %vj] : memref<1x10xf32>
      }
    }
  }
  memref.dealloc %Y : memref<1x10xf32>
  func.return
}

// CHECK-LABEL: func.func @linear1(
// CHECK:         kernel.block "Y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
// CHECK-NEXT:      kernel.init {
// CHECK:         kernel.block "Z" (%vi_1 = spatial %i_1, %vj_1 = spatial %j_1) {
// CHECK:         memref.dealloc %Y : memref<1x10xf32>

// Steps, kinds and index expressions (a tiled loop, as a schedule writes it).
func.func @tiled(%A: memref<64xf32>, %C: memref<64xf32>) attributes {kernel.kernel} {
  kernel.for %io = 0 to 64 step 16 unrolled {
    kernel.for %ii = 0 to 16 vectorized {
      %i = arith.addi %io, %ii : index
      kernel.block "C" (%vi = spatial %i) {
        %a = memref.load %A[%vi] : memref<64xf32>
        %e = math.exp %a : f32
        memref.store %e, %C[%vi] : memref<64xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @tiled(
// CHECK-NEXT:    kernel.for %io = 0 to 64 step 16 unrolled {
// CHECK-NEXT:      kernel.for %ii = 0 to 16 vectorized {
// CHECK-NEXT:        %i = arith.addi %io, %ii : index
// CHECK-NEXT:        kernel.block "C" (%vi = spatial %i) {
