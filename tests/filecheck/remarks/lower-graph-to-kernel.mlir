// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=256},kernel-pad-input,kernel-tensorize{vector-bits=256}' --remarks-analysis=lower-graph-to-kernel --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s
// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=512},kernel-pad-input,kernel-tensorize{vector-bits=512}' --remarks-analysis=lower-graph-to-kernel --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX512
// RUN: ember-opt %s -p 'fuse-ops,lower-graph-to-kernel{vector-bits=128},kernel-pad-input,kernel-tensorize{vector-bits=128 winograd-min-channels=16}' --remarks=kernel-tensorize -o /dev/null 2>&1 | filecheck %s --check-prefix=WINOGRAD

// The schedule each kernel got is an analysis remark at the graph ops it
// computes: the lowering emitted the naive convolution, and kernel-tensorize
// chose direct or (winograd-min-channels) Winograd convolution, the register
// tile and weight panels, which follow the vector width.

func.func @main(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %c : tensor<1x32x8x8xf32>
  func.return %r : tensor<1x32x8x8xf32>
}

// CHECK: lower-graph-to-kernel.mlir:11:3: remark: [lower-graph-to-kernel] analysis: kernel @fused_conv2d_relu: direct convolution; loops left to the schedule passes (the target's default schedule: ember-translate --emit=schedule)
// CHECK: lower-graph-to-kernel.mlir:11:3: remark: [kernel-tensorize] kernel @fused_conv2d_relu: conv2d as a micro-kernel: direct convolution, register tile {{[0-9]+}} pixels x 16 channels, weight packed in panels of 16 (per call)
// AVX512: remark: [lower-graph-to-kernel] analysis: kernel @fused_conv2d_relu: direct convolution; loops left to the schedule passes
// AVX512: remark: [kernel-tensorize] kernel @fused_conv2d_relu: conv2d as a micro-kernel: direct convolution, register tile 7 pixels x 32 channels, weight packed in panels of 32 (per call)
// WINOGRAD: lower-graph-to-kernel.mlir:11:3: remark: [kernel-tensorize] kernel @fused_conv2d_relu: conv2d as a micro-kernel: Winograd F(2x2, 3x3) convolution, the whole layer in a planned workspace, weight transformed per call
