// RUN: ember-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Every diagnostic of the pipeline dialect's verifiers, one chunk each.

// Types must match at every connection: stage input vs the producer.

func.func @mod0(%data: tensor<1x8xf32>) -> tensor<1x8xf32> {
  func.return %data : tensor<1x8xf32>
}
func.func @mod1(%data_n: tensor<1x16xf32>) -> tensor<1x16xf32> {
  func.return %data_n : tensor<1x16xf32>
}
pipeline.graph @net(%data: tensor<1x8xf32>) -> tensor<1x16xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %b = pipeline.stage @mod1(%a) {target = "llvm", device = "cpu:0"} : (tensor<1x8xf32>) -> tensor<1x16xf32>
  pipeline.yield %b : tensor<1x16xf32>
}

// CHECK: pipeline.stage @mod1: input 0 ("data_n") has type tensor<1x16xf32> but @mod0 output 0 gives tensor<1x8xf32>

// -----

// ... and a global input feeding a stage.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<3xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<3xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: input 0 ("x") has type tensor<2xf32> but global input 0 ("data") gives tensor<3xf32>

// -----

// A stage's outputs are the callee's results.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xi32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xi32>
  pipeline.yield %a : tensor<2xi32>
}

// CHECK: pipeline.stage @mod0: output 0 is declared tensor<2xi32> but @mod0 returns tensor<2xf32>

// -----

func.func @mod0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: the stage passes 1 input but @mod0 takes 2 (x, w)

// -----

func.func @mod0(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  func.return %x, %x : tensor<2xf32>, tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: the stage has 1 output but @mod0 returns 2

// -----

pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod7(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod7: no function @mod7 in the module

// -----

// A stage's callee must be a func.func, not another pipeline.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @inner(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @inner(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @inner: @inner is a pipeline.graph, not a func.func

// -----

func.func private @ext(tensor<2xf32>) -> tensor<2xf32>
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @ext(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @ext: @ext is a declaration without a body; a stage needs a function it can build

// -----

// No self-dependency.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%a) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: input 0 is fed by its own output 0; a stage cannot depend on itself

// -----

// No cycle: a stage output feeds only later stages.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @mod1(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%b) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  %b = pipeline.stage @mod1(%a) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %b : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: input 0 comes from @mod1 output 0, a later stage; a stage output may feed only later stages or global outputs

// -----

// A global input feeds stage inputs only, never a global output.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a, %data : tensor<2xf32>, tensor<2xf32>
}

// CHECK: pipeline.yield in @net: global output 1 comes from global input 0 ("data"); a global input may feed only stage inputs

// -----

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<3xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.yield in @net: global output 0 has type tensor<3xf32> but @mod0 output 0 gives tensor<2xf32>

// -----

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.yield in @net: yields 1 value but @net returns 2

// -----

// Only stages in a pipeline body.

pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.relu %data : tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.graph @net: only pipeline.stage ops and a final pipeline.yield may appear in a pipeline, found graph.relu

// -----

pipeline.graph @net() -> () {
  pipeline.yield
}

// CHECK: pipeline.graph @net: a pipeline needs at least one stage

// -----

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
}

// CHECK: pipeline.graph @net: the body must end with pipeline.yield

// -----

// Placement: device syntax, and the device kind a known target runs on.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "gpu0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: device "gpu0" must be cpu:N or cuda:N

// -----

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "cuda", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: target "cuda" runs on cuda devices, not on "cpu:0"

// -----

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
pipeline.graph @net(%data: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%data) {target = "", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}

// CHECK: pipeline.stage @mod0: target must be a non-empty string

// -----

// A stage lives in a pipeline.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = pipeline.stage @mod0(%x) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}

// CHECK: 'pipeline.stage' expects parent op 'pipeline.graph'

// -----

// The body's global inputs are the signature's.

func.func @mod0(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
"pipeline.graph"() <{sym_name = "net", function_type = (tensor<3xf32>) -> tensor<2xf32>}> ({
^bb0(%data: tensor<2xf32>):
  %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<2xf32>) -> tensor<2xf32>
  pipeline.yield %a : tensor<2xf32>
}) : () -> ()

// CHECK: pipeline.graph @net: global input 0 ("data") is tensor<2xf32> but the signature declares tensor<3xf32>
