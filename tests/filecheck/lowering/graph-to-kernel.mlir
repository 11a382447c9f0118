// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256},kernel-pad-input,kernel-tensorize{vector-bits=256},kernel-vectorize,kernel-parallelize" | filecheck %s
// RUN: ember-opt %s -p "lower-graph-to-kernel{vector-bits=256},kernel-pad-input,kernel-tensorize{vector-bits=256},kernel-vectorize,kernel-parallelize" | ember-opt | filecheck %s

// Every compute op becomes a graph.call_kernel of a generated kernel;
// constants and extern calls stay; identical kernels are shared and kernels
// of the same op with other shapes get a numeric suffix.

func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %v: tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %s = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %0 = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.bias_add %0, %s : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %2 = graph.relu %1 : tensor<1x3x4x4xf32>
  %3 = graph.conv2d %2, %v : (tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %4 = graph.conv2d %3, %v : (tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %5 = graph.call_extern "env.relu"(%4) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %5 : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %s = graph.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT:    %0 = graph.call_kernel @conv2d(%x, %w) : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.call_kernel @bias_add(%0, %s) : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %2 = graph.call_kernel @relu(%1) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %3 = graph.call_kernel @conv2d_1(%2, %v) : (tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %4 = graph.call_kernel @conv2d_1(%3, %v) : (tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %5 = graph.call_extern "env.relu"(%4) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    func.return %5 : tensor<1x3x4x4xf32>

// conv2d: a padded f32 copy of the input (kernel-pad-input; of 2 channels,
// which the conv reads all of: one parallel loop over the padded rows, each
// row's left padding, data and right padding); the weight packed into panels of output channels (here
// at run time: it is an argument, not a constant); then a register-blocked
// micro-kernel over (panel, tile of flattened output pixels) pairs (a
// parallel loop, but serial here: the product is too small for threads):
// a tile of accumulators is zeroed, updated by the reduction over
// (ic, kh, kw) with a vectorized loop over the panel's lanes innermost (the
// window loops unrolled: 3 × 3 steps of 8 × 8 multiply-adds fit the
// micro-kernel's unroll budget, 3 × 2 × 3 × 3 do not), and stored, only
// the real channels, through the epilogue.
// CHECK-LABEL: func.func @conv2d(%data: memref<1x2x4x4xf32>, %weight: memref<3x2x3x3xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x2x6x6xf32>
// CHECK-NEXT:    kernel.for %n = 0 to 1 {
// CHECK-NEXT:      kernel.for %r = 0 to 6 parallel {
// CHECK-NEXT:        kernel.for %c = 0 to 2 {
// CHECK-NEXT:          kernel.for %x = 0 to 1 vectorized {
// CHECK-NEXT:            kernel.block "pad_row"
// CHECK:               kernel.for %x_1 = 0 to 4 vectorized {
// CHECK-NEXT:            kernel.block "pad_row"
// CHECK:                   memref.load %data[
// CHECK:               kernel.for %x_2 = 0 to 1 vectorized {
// CHECK-NEXT:            kernel.block "pad_row"
// CHECK:         %panels = memref.alloc() : memref<1x2x3x3x8xf32>
// CHECK:           kernel.block "pack_zero"
// CHECK:           kernel.block "pack"
// CHECK:             memref.load %weight[%{{.*}}] : memref<3x2x3x3xf32>
// CHECK:             memref.store %{{.*}}, %panels[%{{.*}}] : memref<1x2x3x3x8xf32>
// CHECK:         kernel.for %pt = 0 to 2 {
// CHECK-NEXT:      %acc = memref.alloc() : memref<8x8xf32>
// CHECK-NEXT:      kernel.for %l = 0 to 8 vectorized {
// CHECK-NEXT:        kernel.block "conv2d_init" (%vpt = spatial %pt, %vl = spatial %l) {
// CHECK:           kernel.for %ic = 0 to 2 {
// CHECK-NEXT:        kernel.for %kh = 0 to 3 unrolled {
// CHECK-NEXT:          kernel.for %kw = 0 to 3 unrolled {
// CHECK-NEXT:            kernel.for %l_1 = 0 to 8 vectorized {
// CHECK-NEXT:              kernel.block "conv2d" (%vpt_1 = spatial %pt, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
// CHECK:                       %[[W:.*]] = memref.load %panels[%{{.*}}, %vic, %vkh, %vkw, %vl_1] : memref<1x2x3x3x8xf32>
// CHECK:                       %[[X:.*]] = memref.load %pad[%{{.*}}, %vic, %{{.*}}, %{{.*}}] : memref<1x2x6x6xf32>
// CHECK-NEXT:                  %[[A:.*]] = memref.load %acc[%{{.*}}, %vl_1] : memref<8x8xf32>
// CHECK-NEXT:                  %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                  %[[S:.*]] = arith.addf %[[A]], %[[P]] : f32
// CHECK-NEXT:                  memref.store %[[S]], %acc[%{{.*}}, %vl_1] : memref<8x8xf32>
// CHECK:           kernel.for %l_2 = 0 to 3 vectorized {
// CHECK-NEXT:        kernel.block "conv2d_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
// CHECK:               memref.load %acc[%{{.*}}, %vl_2] : memref<8x8xf32>
// CHECK:               memref.store %{{.*}}, %out[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x3x4x4xf32>
// CHECK:           memref.dealloc %acc : memref<8x8xf32>
// CHECK:         memref.dealloc %pad : memref<1x2x6x6xf32>
// CHECK-NEXT:    func.return

// A broadcast op reads its 1-D operand at the channel index.  The plane
// (the last two axes) is one vectorized loop, split back by division.
// CHECK-LABEL: func.func @bias_add(%data: memref<1x3x4x4xf32>, %bias: memref<3xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    kernel.for %i0 = 0 to 1 {
// CHECK-NEXT:      kernel.for %i1 = 0 to 3 parallel {
// CHECK-NEXT:        kernel.for %hw = 0 to 16 vectorized {
// CHECK-NEXT:          kernel.block "bias_add" (%vi0 = spatial %i0, %vi1 = spatial %i1, %vhw = spatial %hw) {
// CHECK-NEXT:            %0 = arith.constant 4 : index
// CHECK-NEXT:            %1 = arith.divsi %vhw, %0 : index
// CHECK-NEXT:            %2 = arith.remsi %vhw, %0 : index
// CHECK-NEXT:            %3 = memref.load %data[%vi0, %vi1, %1, %2] : memref<1x3x4x4xf32>
// CHECK-NEXT:            %4 = memref.load %bias[%vi1] : memref<3xf32>
// CHECK-NEXT:            %5 = arith.addf %3, %4 : f32
// CHECK-NEXT:            memref.store %5, %out[%vi0, %vi1, %1, %2] : memref<1x3x4x4xf32>

// CHECK-LABEL: func.func @relu(%x: memref<1x3x4x4xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK:             kernel.block "relu"
// CHECK:               %[[X:.*]] = memref.load %x[%vi0, %vi1, %{{.*}}, %{{.*}}] : memref<1x3x4x4xf32>
// CHECK-NEXT:          %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          %[[Y:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:          memref.store %[[Y]], %out[%vi0, %vi1, %{{.*}}, %{{.*}}] : memref<1x3x4x4xf32>

// Without padding, conv2d reads its input directly.
// CHECK-LABEL: func.func @conv2d_1(%data: memref<1x3x4x4xf32>, %weight: memref<3x3x1x1xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NOT:     %pad
// CHECK:         memref.load %data[
// CHECK-NOT:   func.func @conv2d_2
