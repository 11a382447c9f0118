// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A value may be used only where its definition dominates the use: after
// it in the same block, or in a region nested below that point.  xDSL's
// parser resolves forward references and does not check this itself.

func.func @own_definition(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: {{.*}}invalid-use-before-def.mlir:8:3: error: %0 is used by its own definition
// CHECK-NEXT: %0 = graph.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

func.func @later(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %1, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: error: %1 is used before it is defined
// CHECK-NEXT: %0 = graph.add %1, %x

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      memref.store %z, %Y[%vi] : memref<4xf32>
    }
  }
  %z = arith.constant 0.0 : f32
  func.return
}

// CHECK: error: %z is used before it is defined
// CHECK-NEXT: memref.store %z, %Y[%vi] : memref<4xf32>

// -----

func.func @k(%Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %z = arith.constant 0.0 : f32
    }
    kernel.block "Z" (%vi = spatial %i) {
      memref.store %z, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}

// A value of a sibling region is out of scope already for the parser.
// CHECK: error: use of undefined value %z

// -----

func.func @mod0(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

pipeline.graph @net(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = pipeline.stage @mod0(%b) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipeline.stage @mod0(%x) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>) -> tensor<4xf32>
  pipeline.yield %a : tensor<4xf32>
}

// Pipeline graphs: the stage verifier says it in pipeline terms first.
// CHECK: error: pipeline.stage @mod0: input 0 comes from @mod0 output 0, a later stage
// CHECK-NEXT: %a = pipeline.stage @mod0(%b)

// -----

// Uses in nested regions of values defined before them are fine.
func.func @fine(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  %zero = arith.constant 0.0 : f32
  kernel.for %i = 0 to 4 {
    kernel.block "Y" (%vi = spatial %i) {
      %x = memref.load %X[%vi] : memref<4xf32>
      %y = arith.maximumf %x, %zero : f32
      memref.store %y, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}

// CHECK: func.func @fine
