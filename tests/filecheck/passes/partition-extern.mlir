// RUN: ember-opt %s --split-input-file -p 'partition-extern{libs=blas}' | filecheck %s
// RUN: ember-opt %s --split-input-file -p partition-extern | filecheck %s
// RUN: not ember-opt %s -p 'partition-extern{libs=cudnn}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not ember-opt %s -p 'partition-extern{libs=blas,cublas}' 2>&1 | filecheck %s --check-prefix=UNKNOWN2

// libs defaults to blas.  An unknown library is an error listing the known
// ones, before any IR is touched.

// UNKNOWN:  ember-opt: error: partition-extern: unknown library 'cudnn' in libs=cudnn; known libraries: blas
// UNKNOWN2: ember-opt: error: partition-extern: unknown library 'cublas' in libs=blas,cublas; known libraries: blas

// A float32 dense (TVM semantics, data · weightᵀ) becomes one sgemm.  The
// bias_add and relu after it stay graph ops: fusion around the offloaded op
// still happens, only the anchor is opaque.

func.func @dense(%x: tensor<64x784xf32>, %w: tensor<1024x784xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %y = graph.dense %x, %w : (tensor<64x784xf32>, tensor<1024x784xf32>) -> tensor<64x1024xf32>
  %z = graph.bias_add %y, %b {axis = 1} : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  %r = graph.relu %z : tensor<64x1024xf32>
  func.return %r : tensor<64x1024xf32>
}

// CHECK-LABEL: func.func @dense
// CHECK-NEXT:    %y = graph.call_extern "blas.sgemm"(%x, %w) : (tensor<64x784xf32>, tensor<1024x784xf32>) -> tensor<64x1024xf32>
// CHECK-NEXT:    %z = graph.bias_add %y, %b {axis = 1} : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
// CHECK-NEXT:    %r = graph.relu %z : tensor<64x1024xf32>
// CHECK-NEXT:    func.return %r : tensor<64x1024xf32>

// -----

// A matmul, batch axes broadcast as numpy does, becomes "blas.matmul".

func.func @matmul(%a: tensor<2x4x8xf32>, %b: tensor<8x3xf32>) -> tensor<2x4x3xf32> {
  %c = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  func.return %c : tensor<2x4x3xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %c = graph.call_extern "blas.matmul"(%a, %b) : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    func.return %c

// -----

// A conv2d (groups = 1) becomes im2col + sgemm.  The registry passes tensors
// only, so strides, padding and dilation travel as an int64 constant:
// [stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w].

func.func @conv2d(%data: tensor<1x3x224x224xf32>, %weight: tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32> {
  %conv = graph.conv2d %data, %weight {strides = [2, 2], padding = [3, 3, 3, 3]} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
  func.return %conv : tensor<1x64x112x112xf32>
}

// CHECK-LABEL: func.func @conv2d
// CHECK-NEXT:    %conv_attrs = graph.constant {value = dense<[2, 2, 3, 3, 3, 3, 1, 1]> : tensor<8xi64>} : tensor<8xi64>
// CHECK-NEXT:    %conv = graph.call_extern "blas.conv2d"(%data, %weight, %conv_attrs) : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<8xi64>) -> tensor<1x64x112x112xf32>
// CHECK-NEXT:    func.return %conv

// -----

// Not offloaded: float16 (OpenBLAS has no half-precision GEMM), grouped and
// depthwise convolutions (many tiny GEMMs; ember's own kernels win).

func.func @stays(%h: tensor<2x8xf16>, %hw: tensor<4x8xf16>, %x: tensor<1x4x6x6xf32>, %dw: tensor<4x1x3x3xf32>, %hm: tensor<8x2xf16>) -> (tensor<2x4xf16>, tensor<1x4x4x4xf32>, tensor<2x2xf16>) {
  %y = graph.dense %h, %hw : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
  %z = graph.conv2d %x, %dw {groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  %m = graph.matmul %h, %hm : (tensor<2x8xf16>, tensor<8x2xf16>) -> tensor<2x2xf16>
  func.return %y, %z, %m : tensor<2x4xf16>, tensor<1x4x4x4xf32>, tensor<2x2xf16>
}

// CHECK-LABEL: func.func @stays
// CHECK-NEXT:    %y = graph.dense %h, %hw
// CHECK-NEXT:    %z = graph.conv2d %x, %dw {groups = 4}
// CHECK-NEXT:    %m = graph.matmul %h, %hm
// CHECK-NOT:     graph.call_extern
