// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=256},kernel-pad-input,kernel-tensorize{vector-bits=256}' --remarks-analysis=lower-graph-to-kernel --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s
// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=512},kernel-pad-input,kernel-tensorize{vector-bits=512}' --remarks-analysis=lower-graph-to-kernel --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX512
// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=256 winograd-min-channels=16}' --remarks-analysis=lower-graph-to-kernel -o /dev/null 2>&1 | filecheck %s --check-prefix=WINOGRAD

// The schedule each kernel got is an analysis remark at the graph ops it
// computes: the lowering chose direct or Winograd convolution, and
// kernel-tensorize the register tile and weight panels, which follow the
// vector width.

func.func @main(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %c : tensor<1x32x8x8xf32>
  func.return %r : tensor<1x32x8x8xf32>
}

// CHECK: lower-graph-to-kernel.mlir:11:3: remark: [lower-graph-to-kernel] analysis: kernel @fused_conv2d_relu: direct convolution; loops left to the schedule passes (kernel-pad-input, kernel-tensorize, kernel-vectorize, kernel-parallelize)
// CHECK: lower-graph-to-kernel.mlir:11:3: remark: [kernel-tensorize] kernel @fused_conv2d_relu: conv2d as a micro-kernel: direct convolution, register tile {{[0-9]+}} pixels x 16 channels, weight packed in panels of 16 (per call)
// AVX512: remark: [lower-graph-to-kernel] analysis: kernel @fused_conv2d_relu: direct convolution; loops left to the schedule passes
// AVX512: remark: [kernel-tensorize] kernel @fused_conv2d_relu: conv2d as a micro-kernel: direct convolution, register tile 7 pixels x 32 channels, weight packed in panels of 32 (per call)
// WINOGRAD: remark: [lower-graph-to-kernel] analysis: kernel @fused_conv2d_relu: Winograd F(2x2, 3x3) convolution; parallel loop of {{.*}}(256-bit vectors)
