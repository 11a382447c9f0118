// conv2d (16 filters, 3x3, padding 1, no bias) -> batch_norm -> relu on one
// 224x224 RGB image: the block that fuse-ops turns into one kernel.
// Parameters are function arguments; bind-params turns them into constants.
//
//   ember-run examples/convbnrelu.mlir --random-inputs --seed 0
func.func @main(%data: tensor<1x3x224x224xf32>, %weight: tensor<16x3x3x3xf32>,
                %bn_gamma: tensor<16xf32>, %bn_beta: tensor<16xf32>,
                %bn_mean: tensor<16xf32>, %bn_var: tensor<16xf32>) -> tensor<1x16x224x224xf32> {
  %conv = graph.conv2d %data, %weight {strides = [1, 1], padding = [1, 1, 1, 1]} : (tensor<1x3x224x224xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x224x224xf32>
  %bn = graph.batch_norm %conv, %bn_gamma, %bn_beta, %bn_mean, %bn_var {epsilon = 1.0e-05 : f32} : (tensor<1x16x224x224xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x224x224xf32>
  %out = graph.relu %bn : tensor<1x16x224x224xf32>
  func.return %out : tensor<1x16x224x224xf32>
}
