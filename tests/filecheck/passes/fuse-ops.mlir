// RUN: ember-opt %s --split-input-file -p fuse-ops | filecheck %s
// RUN: ember-opt %s --split-input-file -p 'fuse-ops{max-depth=2}' | filecheck %s --check-prefix=DEPTH
// RUN: ember-opt %s --split-input-file -p fuse-ops,lower-graph-to-kernel | filecheck %s --check-prefix=KERNEL

// An anchor (conv2d) and the elementwise/broadcast ops after it become one
// private function marked graph.fused, named after its ops; the group is
// replaced by a call.  lower-graph-to-kernel makes ONE kernel of it.

func.func @conv_add_relu(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %a = graph.add %c, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = graph.relu %a : tensor<1x3x4x4xf32>
  func.return %r : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @conv_add_relu
// CHECK-NEXT:    %r = func.call @fused_conv2d_add_relu(%x, %w, %b) : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    func.return %r : tensor<1x3x4x4xf32>
// CHECK:       func.func private @fused_conv2d_add_relu(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> attributes {graph.fused} {
// CHECK-NEXT:    %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %a = graph.add %c, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %r = graph.relu %a : tensor<1x3x4x4xf32>
// CHECK-NEXT:    func.return %r : tensor<1x3x4x4xf32>

// At most two ops per group: conv2d + add, then relu alone.
// DEPTH-LABEL: func.func @conv_add_relu
// DEPTH-NEXT:    %a = func.call @fused_conv2d_add(%x, %w, %b)
// DEPTH-NEXT:    %r = graph.relu %a : tensor<1x3x4x4xf32>

// KERNEL-LABEL: func.func @conv_add_relu
// KERNEL-NEXT:    %r = graph.call_kernel @fused_conv2d_add_relu(%x, %w, %b) : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
// KERNEL-NEXT:    func.return %r : tensor<1x3x4x4xf32>
// KERNEL-NOT:   graph.fused
// KERNEL:       func.func @fused_conv2d_add_relu({{.*}}) attributes {kernel.kernel}
// KERNEL-NOT:   graph.fused

// -----

// Does NOT fire past a value with several consumers: the dense result is
// read by relu and by sigmoid, so fusing either would recompute the dense
// or store an intermediate.  Every op stays (a group of one is no group).

func.func @two_consumers(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %r = graph.relu %d : tensor<2x4xf32>
  %s = graph.sigmoid %d : tensor<2x4xf32>
  func.return %r, %s : tensor<2x4xf32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @two_consumers
// CHECK-NEXT:    %d = graph.dense %x, %w
// CHECK-NEXT:    %r = graph.relu %d
// CHECK-NEXT:    %s = graph.sigmoid %d
// CHECK-NEXT:    func.return %r, %s
// CHECK-NOT:   func.func

// KERNEL-LABEL: func.func @two_consumers
// KERNEL-NEXT:    %d = graph.call_kernel @dense(%x, %w)
// KERNEL-NEXT:    %r = graph.call_kernel @relu(%d)
// KERNEL-NEXT:    %s = graph.call_kernel @sigmoid(%d)

// -----

// Does NOT fire when an intermediate is also a function result: the relu
// reads the dense, but the dense value must leave as it is.

func.func @intermediate_returned(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %r = graph.relu %d : tensor<2x4xf32>
  func.return %d, %r : tensor<2x4xf32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @intermediate_returned
// CHECK-NEXT:    %d = graph.dense %x, %w
// CHECK-NEXT:    %r = graph.relu %d
// CHECK-NEXT:    func.return %d, %r
// CHECK-NOT:   func.func

// -----

// Does NOT fire across an opaque op: graph.call_extern (an offloaded op)
// between the dense and the relu; they stay apart.

func.func @extern_between(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x4xf32> {
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %e = graph.call_extern "env.scale"(%d) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %e : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @extern_between
// CHECK-NEXT:    %d = graph.dense %x, %w
// CHECK-NEXT:    %e = graph.call_extern "env.scale"(%d)
// CHECK-NEXT:    %r = graph.relu %e
// CHECK-NEXT:    func.return %r
// CHECK-NOT:   func.func

// -----

// Softmax is opaque too: it neither joins the dense before it nor starts a
// group with the relu after it.

func.func @softmax_between(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x4xf32> {
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %s = graph.softmax %d : tensor<2x4xf32>
  %r = graph.relu %s : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @softmax_between
// CHECK-NEXT:    %d = graph.dense %x, %w
// CHECK-NEXT:    %s = graph.softmax %d
// CHECK-NEXT:    %r = graph.relu %s
// CHECK-NEXT:    func.return %r
// CHECK-NOT:   func.func

// -----

// Two anchors never share a group: dense + bias_add + relu, then the next
// dense starts its own group.  Weights stay outside (constants are data).

func.func @mlp(%x: tensor<1x8xf32>, %w0: tensor<4x8xf32>, %b0: tensor<4xf32>, %w1: tensor<2x4xf32>) -> tensor<1x2xf32> {
  %w1c = graph.constant {value = dense<[1.0, -1.0]> : tensor<2xf32>} : tensor<2xf32>
  %d0 = graph.dense %x, %w0 : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
  %h0 = graph.bias_add %d0, %b0 : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %r0 = graph.relu %h0 : tensor<1x4xf32>
  %d1 = graph.dense %r0, %w1 : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %h1 = graph.bias_add %d1, %w1c : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %h1 : tensor<1x2xf32>
}

// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %w1c = graph.constant
// CHECK-NEXT:    %r0 = func.call @fused_dense_bias_add_relu(%x, %w0, %b0)
// CHECK-NEXT:    %h1 = func.call @fused_dense_bias_add(%r0, %w1, %w1c)
// CHECK-NEXT:    func.return %h1
// CHECK:       func.func private @fused_dense_bias_add_relu
// CHECK:       func.func private @fused_dense_bias_add(

// KERNEL-LABEL: func.func @mlp
// KERNEL:         %r0 = graph.call_kernel @fused_dense_bias_add_relu(
// KERNEL-NEXT:    %h1 = graph.call_kernel @fused_dense_bias_add(
// KERNEL-NEXT:    func.return %h1

// -----

// Chains of elementwise and broadcast ops fuse without an anchor.  The
// operand the add takes from outside (%y) may be defined after the group's
// first op: it does not depend on the group, so there is no cycle.

func.func @elementwise_chain(%x: tensor<4x4xf32>, %z: tensor<4xf32>) -> tensor<4x4xf32> {
  %e = graph.exp %x : tensor<4x4xf32>
  %y = graph.negative %z : tensor<4xf32>
  %a = graph.add %e, %y : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %r = graph.relu %a : tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @elementwise_chain
// CHECK-NEXT:    %y = graph.negative %z
// CHECK-NEXT:    %r = func.call @fused_exp_add_relu(%x, %y)
// CHECK-NEXT:    func.return %r
// CHECK:       func.func private @fused_exp_add_relu(%x: tensor<4x4xf32>, %y: tensor<4xf32>) -> tensor<4x4xf32> attributes {graph.fused} {
// CHECK-NEXT:    %e = graph.exp %x
// CHECK-NEXT:    %a = graph.add %e, %y
// CHECK-NEXT:    %r = graph.relu %a
// CHECK-NEXT:    func.return %r

// -----

// A diamond whose paths both stay in the group is one group: the conv value
// has two consumers, but both are fused, so nothing escapes.  The residual
// input %skip comes from outside.

func.func @diamond(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %skip: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %c = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %s = graph.sigmoid %c : tensor<1x2x4x4xf32>
  %m = graph.multiply %c, %s : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a = graph.add %m, %skip : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %a : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %a = func.call @fused_conv2d_sigmoid_multiply_add(%x, %w, %skip)
// CHECK-NEXT:    func.return %a

// -----

// A group stops where the lowering could not keep going in one loop nest:
// the add broadcasts the 1x4 dense result to 3x4 (each dense value would be
// needed at three indices), so it is not fused.

func.func @broadcast_stops(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %d = graph.dense %x, %w : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
  %r = graph.relu %d : tensor<1x4xf32>
  %a = graph.add %r, %y : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %a : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @broadcast_stops
// CHECK-NEXT:    %r = func.call @fused_dense_relu(%x, %w)
// CHECK-NEXT:    %a = graph.add %r, %y
// CHECK-NEXT:    func.return %a

// -----

// Identical groups share one fused function (weights are arguments);
// a group of the same ops with other shapes gets a numbered name.

func.func @shared(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %z: tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
  %a = graph.exp %x : tensor<2x3xf32>
  %ra = graph.relu %a : tensor<2x3xf32>
  %b = graph.exp %y : tensor<2x3xf32>
  %rb = graph.relu %b : tensor<2x3xf32>
  %c = graph.exp %z : tensor<3x2xf32>
  %rc = graph.relu %c : tensor<3x2xf32>
  func.return %ra, %rb, %rc : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %ra = func.call @fused_exp_relu(%x)
// CHECK-NEXT:    %rb = func.call @fused_exp_relu(%y)
// CHECK-NEXT:    %rc = func.call @fused_exp_relu_1(%z)
// CHECK:       func.func private @fused_exp_relu(
// CHECK:       func.func private @fused_exp_relu_1(
// CHECK-NOT:   func.func

// KERNEL-LABEL: func.func @shared
// KERNEL-NEXT:    %ra = graph.call_kernel @fused_exp_relu(%x)
// KERNEL-NEXT:    %rb = graph.call_kernel @fused_exp_relu(%y)
// KERNEL-NEXT:    %rc = graph.call_kernel @fused_exp_relu_1(%z)
