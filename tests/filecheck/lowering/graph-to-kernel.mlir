// RUN: ember-opt %s -p lower-graph-to-kernel | filecheck %s
// RUN: ember-opt %s -p lower-graph-to-kernel | ember-opt | filecheck %s

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

// conv2d: a padded f32 copy of the input, output channels in parallel, the
// reduction outside a vectorized loop over the output row, which accumulates
// in a per-row scratch buffer and is stored by its own block.
// CHECK-LABEL: func.func @conv2d(%data: memref<1x2x4x4xf32>, %weight: memref<3x2x3x3xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    %pad = memref.alloc() : memref<1x2x6x6xf32>
// CHECK:           kernel.block "pad_fill"
// CHECK:           kernel.block "pad_copy"
// CHECK:         kernel.for %n_2 = 0 to 1 {
// CHECK-NEXT:      kernel.for %oc = 0 to 3 parallel {
// CHECK-NEXT:        %acc = memref.alloc() : memref<4xf32>
// CHECK-NEXT:        kernel.for %oh = 0 to 4 {
// CHECK-NEXT:          kernel.for %ow = 0 to 4 vectorized {
// CHECK-NEXT:            kernel.block "conv2d_init" (%vn_2 = spatial %n_2, %voc = spatial %oc, %voh = spatial %oh, %vow = spatial %ow) {
// CHECK:                 kernel.for %ic = 0 to 2 {
// CHECK-NEXT:              kernel.for %kh = 0 to 3 {
// CHECK-NEXT:                kernel.for %kw = 0 to 3 {
// CHECK-NEXT:                  kernel.for %ow_1 = 0 to 4 vectorized {
// CHECK-NEXT:                    kernel.block "conv2d" (%vn_3 = spatial %n_2, %voc_1 = spatial %oc, %voh_1 = spatial %oh, %vow_1 = spatial %ow_1, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw) {
// CHECK:                           memref.load %pad[%vn_3, %vic, %{{.*}}, %{{.*}}] : memref<1x2x6x6xf32>
// CHECK:                           memref.load %weight[%voc_1, %vic, %vkh, %vkw] : memref<3x2x3x3xf32>
// CHECK:                           memref.store %{{.*}}, %acc[%vow_1] : memref<4xf32>
// CHECK:                 kernel.for %ow_2 = 0 to 4 vectorized {
// CHECK-NEXT:              kernel.block "conv2d_store" (%vn_4 = spatial %n_2, %voc_2 = spatial %oc, %voh_2 = spatial %oh, %vow_2 = spatial %ow_2) {
// CHECK-NEXT:                %{{.*}} = memref.load %acc[%vow_2] : memref<4xf32>
// CHECK-NEXT:                memref.store %{{.*}}, %out[%vn_4, %voc_2, %voh_2, %vow_2] : memref<1x3x4x4xf32>
// CHECK:               memref.dealloc %acc : memref<4xf32>
// CHECK:           memref.dealloc %pad : memref<1x2x6x6xf32>
// CHECK-NEXT:      func.return

// A broadcast op reads its 1-D operand at the channel index.
// CHECK-LABEL: func.func @bias_add(%data: memref<1x3x4x4xf32>, %bias: memref<3xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NEXT:    kernel.for %i0 = 0 to 1 {
// CHECK-NEXT:      kernel.for %i1 = 0 to 3 parallel {
// CHECK-NEXT:        kernel.for %i2 = 0 to 4 {
// CHECK-NEXT:          kernel.for %i3 = 0 to 4 vectorized {
// CHECK-NEXT:            kernel.block "bias_add" (%vi0 = spatial %i0, %vi1 = spatial %i1, %vi2 = spatial %i2, %vi3 = spatial %i3) {
// CHECK-NEXT:              %0 = memref.load %data[%vi0, %vi1, %vi2, %vi3] : memref<1x3x4x4xf32>
// CHECK-NEXT:              %1 = memref.load %bias[%vi1] : memref<3xf32>
// CHECK-NEXT:              %2 = arith.addf %0, %1 : f32
// CHECK-NEXT:              memref.store %2, %out[%vi0, %vi1, %vi2, %vi3] : memref<1x3x4x4xf32>

// CHECK-LABEL: func.func @relu(%x: memref<1x3x4x4xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK:             kernel.block "relu"
// CHECK-NEXT:          %0 = memref.load %x[%vi0, %vi1, %vi2, %vi3] : memref<1x3x4x4xf32>
// CHECK-NEXT:          %1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          %2 = arith.maximumf %0, %1 : f32
// CHECK-NEXT:          memref.store %2, %out[%vi0, %vi1, %vi2, %vi3] : memref<1x3x4x4xf32>

// Without padding, conv2d reads its input directly.
// CHECK-LABEL: func.func @conv2d_1(%data: memref<1x3x4x4xf32>, %weight: memref<3x3x1x1xf32>, %out: memref<1x3x4x4xf32>) attributes {kernel.kernel} {
// CHECK-NOT:     %pad
// CHECK:         memref.load %data[
// CHECK-NOT:   func.func @conv2d_2
