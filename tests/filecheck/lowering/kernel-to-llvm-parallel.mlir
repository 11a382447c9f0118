// RUN: ember-opt %s -p lower-kernel-to-llvm | filecheck %s
// RUN: ember-opt %s -p "lower-kernel-to-llvm{min-parallel-work=140}" | filecheck %s
// RUN: ember-opt %s -p "lower-kernel-to-llvm{min-parallel-work=141}" | filecheck %s --check-prefix=SERIAL

// min-parallel-work keeps loops doing fewer ops serial: @scale's loop does
// 7 x 5 x (kernel.block + load, mulf, store) = 140.
// SERIAL-NOT: GOMP_parallel

// An outermost parallel loop is outlined: the body into @scale__parallel0_body
// (a loop over [begin, end) with the captured buffers as noalias arguments,
// the constant re-created inside), the thread entry point into
// @scale__parallel0 (unpacks the captures and the loop's body, range, step
// and schedule counters, takes chunks of the range from ember_loop_next, its
// own block first). The kernel zeroes the counters and forks with
// GOMP_parallel when min(ember_num_threads, 7) > 1 and calls the body on the
// whole range otherwise. The nested parallel loop runs
// serially inside the body.
func.func @scale(%X: memref<7x5xf32>, %Y: memref<7x5xf32>) attributes {kernel.kernel} {
  %two = arith.constant 2.0 : f32
  kernel.for %i = 0 to 7 parallel {
    kernel.for %j = 0 to 5 parallel {
      kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
        %x = memref.load %X[%vi, %vj] : memref<7x5xf32>
        %y = arith.mulf %x, %two : f32
        memref.store %y, %Y[%vi, %vj] : memref<7x5xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: llvm.func @scale(%X: !llvm.ptr {llvm.noalias}, %Y: !llvm.ptr {llvm.noalias}) {
// CHECK:         %[[COUNT:.*]] = llvm.mlir.constant(7) : i64
// CHECK-NEXT:    %[[CELL:.*]] = llvm.mlir.addressof @ember_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[REQ32:.*]] = llvm.load %[[CELL]] : !llvm.ptr -> i32
// CHECK-NEXT:    %[[REQ:.*]] = llvm.sext %[[REQ32]] : i32 to i64
// CHECK-NEXT:    %[[FEWER:.*]] = llvm.icmp "slt" %[[REQ]], %[[COUNT]] : i64
// CHECK-NEXT:    %[[N:.*]] = llvm.select %[[FEWER]], %[[REQ]], %[[COUNT]] : i1, i64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[SEVERAL:.*]] = llvm.icmp "sgt" %[[N]], %[[ONE]] : i64
// The counters: 64 blocks of a cache line each, in the frame.
// CHECK-NEXT:    %[[WORDS:.*]] = llvm.mlir.constant(512) : i64
// CHECK-NEXT:    %[[COUNTERS:.*]] = llvm.alloca %[[WORDS]] x i64 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[LB:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[SLOTS:.*]] = llvm.mlir.constant(7) : i64
// CHECK-NEXT:    %[[DATA:.*]] = llvm.alloca %[[SLOTS]] x !llvm.ptr {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.cond_br %[[SEVERAL]], ^[[FORK:.*]], ^[[INLINE:.*]]
// The data: the captures, then the body's address, the trip count, the
// lower bound, the step and the counters, zeroed for the team first.
// CHECK-NEXT:  ^[[FORK]]:
// CHECK-NEXT:    %[[BODY:.*]] = llvm.mlir.addressof @scale__parallel0_body : !llvm.ptr
// CHECK-NEXT:    llvm.call @ember_loop_reset(%[[COUNTERS]], %[[N]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr inbounds %[[DATA]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %X, %[[S0]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr inbounds %[[DATA]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %Y, %[[S1]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[S2:.*]] = llvm.getelementptr inbounds %[[DATA]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[BODY]], %[[S2]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[S3:.*]] = llvm.getelementptr inbounds %[[DATA]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[COUNT]], %[[S3]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[S4:.*]] = llvm.getelementptr inbounds %[[DATA]][4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[LB]], %[[S4]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[S5:.*]] = llvm.getelementptr inbounds %[[DATA]][5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[ONE]], %[[S5]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[S6:.*]] = llvm.getelementptr inbounds %[[DATA]][6] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[COUNTERS]], %[[S6]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[TEAM:.*]] = llvm.trunc %[[N]] : i64 to i32
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @scale__parallel0 : !llvm.ptr
// CHECK-NEXT:    llvm.call @GOMP_parallel(%[[FN]], %[[DATA]], %[[TEAM]], %[[FLAGS]]) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    llvm.br ^[[AFTER:.*]]
// CHECK-NEXT:  ^[[INLINE]]:
// CHECK-NEXT:    llvm.call @scale__parallel0_body(%X, %Y, %[[LB]], %[[COUNT]]) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.br ^[[AFTER]]
// CHECK-NEXT:  ^[[AFTER]]:
// CHECK-NEXT:    llvm.return

// CHECK-LABEL: llvm.func @scale__parallel0_body(%X_1: !llvm.ptr {llvm.noalias}, %Y_1: !llvm.ptr {llvm.noalias}, %begin: i64, %end: i64) {
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[SOME:.*]] = llvm.icmp "slt" %begin, %end : i64
// CHECK:         llvm.cond_br %[[SOME]], ^[[LOOPS:.*]], ^[[DONE:.*]]
// CHECK-NEXT:  ^[[LOOPS]]:
// CHECK-NEXT:    llvm.br ^[[LOOP_I:.*]](%begin : i64)
// CHECK-NEXT:  ^[[LOOP_I]](%i: i64):
// The nested parallel loop is an ordinary loop here: no second fork.
// CHECK-NOT:     GOMP_parallel
// CHECK:         llvm.br ^[[LOOP_J:.*]](%{{.*}} : i64)
// CHECK-NEXT:  ^[[LOOP_J]](%j: i64):
// CHECK:         llvm.fmul %{{.*}}, %[[TWO]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK:         %[[NEXT:.*]] = llvm.add %i, %{{.*}} overflow<nsw> : i64
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt" %[[NEXT]], %end : i64
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[LOOP_I]](%[[NEXT]] : i64), ^{{.*}}
// CHECK:       ^[[DONE]]:
// CHECK-NEXT:    llvm.return

// The thread entry point takes everything from the data, and calls the body
// through its address: every loop whose captures have the same types has the
// same entry point, which a build compiles once.
// CHECK-LABEL: llvm.func @scale__parallel0(%data: !llvm.ptr {llvm.noalias}) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr inbounds %data[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr inbounds %data[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds %data[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[BODY:.*]] = llvm.load %[[P2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P3:.*]] = llvm.getelementptr inbounds %data[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[T:.*]] = llvm.load %[[P3]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[P4:.*]] = llvm.getelementptr inbounds %data[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[LOWER:.*]] = llvm.load %[[P4]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[P5:.*]] = llvm.getelementptr inbounds %data[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[STEP:.*]] = llvm.load %[[P5]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[P6:.*]] = llvm.getelementptr inbounds %data[6] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[COUNTERS:.*]] = llvm.load %[[P6]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[ME32:.*]] = llvm.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:    %[[ME:.*]] = llvm.sext %[[ME32]] : i32 to i64
// CHECK-NEXT:    %[[NTH32:.*]] = llvm.call @omp_get_num_threads() : () -> i32
// CHECK-NEXT:    %[[NTH:.*]] = llvm.sext %[[NTH32]] : i32 to i64
// The cursor: the blocks this thread emptied (0 at first), then the bounds
// of a chunk.
// CHECK-NEXT:    %[[THREE:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %[[VISITED:.*]] = llvm.alloca %[[THREE]] x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.getelementptr inbounds %[[VISITED]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[LAST:.*]] = llvm.getelementptr inbounds %[[VISITED]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.store %[[ZERO]], %[[VISITED]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[GOT:.*]] = llvm.call @ember_loop_next(%[[COUNTERS]], %[[T]], %[[ME]], %[[NTH]], %[[VISITED]], %[[FIRST]], %[[LAST]]) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i8
// CHECK:         llvm.cond_br %{{.*}}, ^[[CHUNK_LOOP:.*]], ^[[END:.*]]
// CHECK-NEXT:  ^[[CHUNK_LOOP]]:
// CHECK-NEXT:    %[[I0:.*]] = llvm.load %[[FIRST]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[I1:.*]] = llvm.load %[[LAST]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[O0:.*]] = llvm.mul %[[I0]], %[[STEP]] overflow<nsw> : i64
// CHECK-NEXT:    %[[BEGIN:.*]] = llvm.add %[[LOWER]], %[[O0]] overflow<nsw> : i64
// CHECK-NEXT:    %[[O1:.*]] = llvm.mul %[[I1]], %[[STEP]] overflow<nsw> : i64
// CHECK-NEXT:    %[[END_I:.*]] = llvm.add %[[LOWER]], %[[O1]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.call %[[BODY]](%[[X]], %[[Y]], %[[BEGIN]], %[[END_I]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    %[[MORE:.*]] = llvm.call @ember_loop_next(%[[COUNTERS]], %[[T]], %[[ME]], %[[NTH]], %[[VISITED]], %[[FIRST]], %[[LAST]]) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i8
// CHECK:         llvm.cond_br %{{.*}}, ^[[CHUNK_LOOP]], ^[[END]]
// CHECK-NEXT:  ^[[END]]:
// CHECK-NEXT:    llvm.return

// A parallel loop with one iteration forks nothing: it is an ordinary loop.
func.func @single(%Y: memref<1x4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 1 parallel {
    kernel.for %j = 0 to 4 {
      kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
        %one = arith.constant 1.0 : f32
        memref.store %one, %Y[%vi, %vj] : memref<1x4xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: llvm.func @single(%{{.*}}: !llvm.ptr {llvm.noalias}) {
// CHECK-NOT:     llvm.call
// CHECK:         llvm.return

// CHECK-DAG:   llvm.mlir.global external @ember_num_threads() {addr_space = 0 : i32} : i32
// CHECK-DAG:   llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-DAG:   llvm.func @omp_get_num_threads() -> i32
// CHECK-DAG:   llvm.func @omp_get_thread_num() -> i32
// CHECK-DAG:   llvm.func @ember_loop_reset(!llvm.ptr, i64)
// CHECK-DAG:   llvm.func @ember_loop_next(!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i8
