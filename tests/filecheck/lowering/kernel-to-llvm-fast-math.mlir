// RUN: ember-opt %s -p lower-kernel-to-llvm | filecheck %s
// RUN: ember-opt %s -p "lower-kernel-to-llvm{fast_math=true}" | filecheck %s --check-prefix=FAST

// Float semantics of the lowering.  By default only reassociation and FMA
// contraction are allowed, and maximumf/minimumf propagate NaN from either
// side: against a constant that wins ties with a zero, an unordered compare
// (true for NaN) and a select; otherwise the llvm.maximum/minimum intrinsic.
// fast_math=true (the opt-in of ember.build) allows every fast-math flag.
func.func @clamp(%A: memref<8xf32>, %B: memref<8xf32>, %C: memref<8xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 8 {
    kernel.block "C" (%vi = spatial %i) {
      %a = memref.load %A[%vi] : memref<8xf32>
      %b = memref.load %B[%vi] : memref<8xf32>
      %zero = arith.constant 0.0 : f32
      %negzero = arith.constant -0.0 : f32
      %six = arith.constant 6.0 : f32
      %q = arith.divf %a, %b : f32
      %r = arith.maximumf %q, %zero : f32
      %s = arith.minimumf %r, %six : f32
      %t = arith.minimumf %s, %zero : f32
      %u = arith.maximumf %t, %negzero : f32
      %v = arith.maximumf %u, %b : f32
      %w = arith.negf %v : f32
      memref.store %w, %C[%vi] : memref<8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: llvm.func @clamp(
// CHECK:         %[[Q:.*]] = llvm.fdiv %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK-NEXT:    %[[RC:.*]] = llvm.fcmp "ugt" %[[Q]], %[[ZERO:.*]] : f32
// CHECK-NEXT:    %[[R:.*]] = llvm.select %[[RC]], %[[Q]], %[[ZERO]] : i1, f32
// CHECK-NEXT:    %[[SC:.*]] = llvm.fcmp "ult" %[[R]], %[[SIX:.*]] : f32
// CHECK-NEXT:    %[[S:.*]] = llvm.select %[[SC]], %[[R]], %[[SIX]] : i1, f32
// A +0.0 bound of a minimum, or -0.0 of a maximum, loses the tie with the
// other zero: only the intrinsic gets the sign of a zero result right.
// CHECK-NEXT:    %[[T:.*]] = llvm.call_intrinsic "llvm.minimum.f32"(%[[S]], %[[ZERO]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[U:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[T]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %[[V:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[U]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.fneg %[[V]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32

// FAST-LABEL: llvm.func @clamp(
// FAST:         %[[Q:.*]] = llvm.fdiv %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<fast>} : f32
// FAST-NEXT:    %[[RC:.*]] = llvm.fcmp "ogt" %[[Q]], %[[ZERO:.*]] : f32
// FAST-NEXT:    %{{.*}} = llvm.select %[[RC]], %[[Q]], %[[ZERO]] : i1, f32
// FAST-NOT:     llvm.call_intrinsic
// FAST:         llvm.fneg %{{.*}} {fastmathFlags = #llvm.fastmath<fast>} : f32
