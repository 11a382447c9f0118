// RUN: ember-opt %s -p 'lower-graph-to-kernel{vector-bits=256},kernel-tensorize{vector-bits=256}' --remarks=kernel-tensorize --remarks-analysis=lower-graph-to-kernel -o /dev/null 2>&1 | filecheck %s
// RUN: ember-opt %s -p 'lower-graph-to-kernel{vector-bits=512},kernel-tensorize{vector-bits=512}' --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX512

// The lowering leaves matmul naive; kernel-tensorize says which micro-kernel
// each got, at the graph op it computes: row tiles over B in column panels,
// packed by the kernel since A has 64 rows; a short A reads B in place.
func.func @mm(%a: tensor<64x8xf32>, %b: tensor<8x40xf32>, %c: tensor<4x8xf32>) -> (tensor<64x40xf32>, tensor<4x40xf32>) {
  %0 = graph.matmul %a, %b : (tensor<64x8xf32>, tensor<8x40xf32>) -> tensor<64x40xf32>
  %1 = graph.matmul %c, %b : (tensor<4x8xf32>, tensor<8x40xf32>) -> tensor<4x40xf32>
  func.return %0, %1 : tensor<64x40xf32>, tensor<4x40xf32>
}

// CHECK: kernel-tensorize.mlir:8:3: remark: [lower-graph-to-kernel] analysis: kernel @matmul: loops left to the schedule passes (the target's default schedule: ember-translate --emit=schedule)
// CHECK: kernel-tensorize.mlir:8:3: remark: [kernel-tensorize] kernel @matmul: matmul as a micro-kernel: register tile 5 rows x 16 columns, B packed in column panels of 16 (per call)
// CHECK: kernel-tensorize.mlir:9:3: remark: [kernel-tensorize] kernel @matmul_1: matmul as a micro-kernel: register tile 5 rows x 16 columns, B read in place
// AVX512: remark: [kernel-tensorize] kernel @matmul: matmul as a micro-kernel: register tile 7 rows x 32 columns, B packed in column panels of 32 (per call)
