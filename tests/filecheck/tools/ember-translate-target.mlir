// RUN: ember-translate %s --emit=asm --target="llvm -mcpu=skylake-avx512" | filecheck %s --check-prefix=AVX512
// RUN: ember-translate %s --emit=asm --target="llvm -mcpu=znver3" | filecheck %s --check-prefix=AVX2
// RUN: ember-translate %s --emit=asm --target="llvm -mcpu=x86-64 -mattr=+avx2,+fma" | filecheck %s --check-prefix=AVX2
// RUN: ember-translate %s --emit=asm --target="llvm -mcpu=skylake-avx512 -mattr=-avx" | filecheck %s --check-prefix=SSE
// RUN: ember-translate %s --emit=llvm-dialect --target="llvm -mcpu=skylake-avx512" | filecheck %s --check-prefix=DIALECT
// RUN: ember-translate %s --emit=llvm-ir --target="llvm -mcpu=znver3" | filecheck %s --check-prefix=IR
// RUN: not ember-translate %s --emit=asm --target="llvm -mcpu=skylake-avx51" 2>&1 | filecheck %s --check-prefix=BADCPU
// RUN: not ember-translate %s --emit=asm --target=interp 2>&1 | filecheck %s --check-prefix=NOTLLVM

// The target decides the vector code: every function asks LLVM for vectors
// as wide as the target's registers (LLVM's tuning would keep an AVX-512 CPU
// at 256 bits), so a dense product on skylake-avx512 runs as 16-lane (zmm)
// FMAs, on an AVX2 CPU as 8-lane (ymm) FMAs, and without AVX as SSE
// multiplies and adds.  The CPU need not be this machine's.
func.func @main(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %y = graph.dense %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// AVX512: vfmadd{{[0-9]+}}ps {{.*}}%zmm

// AVX2-NOT: zmm
// AVX2: vfmadd{{[0-9]+}}ps {{.*}}%ymm
// AVX2-NOT: zmm

// SSE-NOT: {{[yz]mm|vfmadd}}
// SSE: mulps
// SSE-NOT: {{[yz]mm|vfmadd}}

// DIALECT: llvm.func @dense(
// DIALECT-SAME: passthrough = {{\[\["prefer-vector-width", "512"\], \["min-legal-vector-width", "512"\]\]}}

// IR: define void @dense({{.*}} #[[ATTRIBUTES:[0-9]+]]
// IR: attributes #[[ATTRIBUTES]] = { {{.*}}"min-legal-vector-width"="256" "prefer-vector-width"="256" }

// BADCPU: ember-translate: error: unknown CPU 'skylake-avx51' in -mcpu of 'llvm -mcpu=skylake-avx51'; did you mean 'skylake-avx512'
// NOTLLVM: ember-translate: error: --target 'interp': ember-translate prints the stages of the 'llvm' compiler
