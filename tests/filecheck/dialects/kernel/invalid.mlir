// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 step 0 {
  }
  func.return
}

// CHECK: kernel.for %i: step must be positive, got 0

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 8 to 4 {
  }
  func.return
}

// CHECK: kernel.for %i: lower bound 8 is greater than upper bound 4

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 sideways {
  }
  func.return
}

// CHECK: kernel.for %i: unknown loop kind 'sideways', expected one of serial, parallel, vectorized, unrolled, gpu.block.x

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 4 {
      kernel.block "Y" (%vi = spatial %i, %vk = reduce %k) {
        %c = arith.constant 0.0 : f32
        memref.store %c, %Y[%vk] : memref<4xf32>
      }
    }
  }
  func.return
}

// CHECK: kernel.block "Y": memref.store into %Y is indexed by reduce variable %vk; a reduction block may index what it writes only by spatial variables

// -----

func.func @k(%Y: memref<4x4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 4 {
      kernel.block "Y" (%vi = spatial %i, %vk = reduce %k) {
        kernel.init {
          %c = arith.constant 0.0 : f32
          memref.store %c, %Y[%vi, %vk] : memref<4x4xf32>
        }
      }
    }
  }
  func.return
}

// CHECK: kernel.block "Y": kernel.init uses reduce variable %vk in memref.store; the init region may use only spatial variables

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      kernel.init {
      }
    }
  }
  func.return
}

// CHECK: kernel.block "Y": kernel.init needs at least one reduce iteration variable

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %k = 0 to 4 {
      kernel.block "Y" (%vi = spatial %i, %vk = reduce %k) {
        %c = arith.constant 0.0 : f32
        kernel.init {
        }
      }
    }
  }
  func.return
}

// CHECK: kernel.block "Y": kernel.init must be the first op, and only once

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.init {
  }
  func.return
}

// CHECK: kernel.init must be directly inside a kernel.block

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = -2 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
    }
  }
  func.return
}

// CHECK: kernel.block "Y": %vi is bound to %i, whose loop starts at -2; iteration variables range from 0

// -----

// A reduction whose loop starts above 0 would never run its init.
func.func @late_reduce(%A: memref<2x4xf32>, %S: memref<2xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 2 {
    kernel.for %k = 1 to 4 {
      kernel.block "S" (%vi = spatial %i, %vk = reduce %k) {
        kernel.init {
          %zero = arith.constant 0.0 : f32
          memref.store %zero, %S[%vi] : memref<2xf32>
        }
        %s = memref.load %S[%vi] : memref<2xf32>
        %a = memref.load %A[%vi, %vk] : memref<2x4xf32>
        %t = arith.addf %s, %a : f32
        memref.store %t, %S[%vi] : memref<2xf32>
      }
    }
  }
  func.return
}

// CHECK: kernel.block "S": reduce variable %vk is bound to %k, whose loop starts at 1: kernel.init runs when every reduce variable is 0, so it would never run

// -----

// Kernel ops belong in kernels: a function without the marker would be
// taken for a graph function by every pass.
func.func @unmarked(%X: memref<4xf32>, %Y: memref<4xf32>) {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      memref.store %x, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}

// CHECK: kernel.for %i is in @unmarked, which lacks the kernel.kernel attribute: mark kernels with `attributes {kernel.kernel}`

// -----

// Out-of-bounds accesses that interval analysis proves: an index affine in
// loop variables with constant bounds takes both ends of its range.
func.func @shift(%X: memref<4x8xf32>, %Y: memref<4x8xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %j = 0 to 8 {
      kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
        %one = arith.constant 1 : index
        %next = arith.addi %vj, %one : index
        %x = memref.load %X[%vi, %next] : memref<4x8xf32>
        memref.store %x, %Y[%vi, %vj] : memref<4x8xf32>
      }
    }
  }
  func.return
}

// CHECK: kernel @shift reads %X (memref<4x8xf32>) out of bounds: index %next of dimension 1 ranges over [1, 8], but that dimension has size 8 (indices 0 to 7)

// -----

func.func @tiled(%X: memref<30xf32>) attributes {kernel.kernel} {
  kernel.for %o = 0 to 8 {
    kernel.for %l = 0 to 4 {
      %four = arith.constant 4 : index
      %base = arith.muli %o, %four : index
      %at = arith.addi %base, %l : index
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %X[%at] : memref<30xf32>
    }
  }
  func.return
}

// CHECK: kernel @tiled writes %X (memref<30xf32>) out of bounds: index %at of dimension 0 ranges over [0, 31], but that dimension has size 30 (indices 0 to 29)

// -----

func.func @backwards(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    %one = arith.constant 1 : index
    %before = arith.subi %i, %one : index
    %x = memref.load %X[%before] : memref<4xf32>
    memref.store %x, %Y[%i] : memref<4xf32>
  }
  func.return
}

// CHECK: kernel @backwards reads %X (memref<4xf32>) out of bounds: index %before of dimension 0 ranges over [-1, 2], but that dimension has size 4 (indices 0 to 3)
