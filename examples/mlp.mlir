// A two-layer perceptron for 28x28 digits (dense weights are units x in, as
// in TVM's relay.nn.dense): 784 -> 128 -> relu -> 10.
//
//   ember-run examples/mlp.mlir --random-inputs --seed 0 --output out.npz
func.func @main(%data: tensor<1x784xf32>, %w0: tensor<128x784xf32>, %b0: tensor<128xf32>,
                %w1: tensor<10x128xf32>, %b1: tensor<10xf32>) -> tensor<1x10xf32> {
  %dense0 = graph.dense %data, %w0 : (tensor<1x784xf32>, tensor<128x784xf32>) -> tensor<1x128xf32>
  %bias0 = graph.bias_add %dense0, %b0 {axis = 1} : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  %relu0 = graph.relu %bias0 : tensor<1x128xf32>
  %dense1 = graph.dense %relu0, %w1 : (tensor<1x128xf32>, tensor<10x128xf32>) -> tensor<1x10xf32>
  %out = graph.bias_add %dense1, %b1 {axis = 1} : (tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  func.return %out : tensor<1x10xf32>
}
