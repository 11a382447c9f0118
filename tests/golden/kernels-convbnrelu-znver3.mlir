func.func @fused_conv2d_add_relu(%data: memref<1x3x224x224xf32>, %weight: memref<16x3x3x3xf32>, %rhs: memref<16x1x1xf32>, %out: memref<1x16x224x224xf32>) attributes {kernel.kernel} {
  %pad = memref.alloc() : memref<1x3x226x226xf32>
  kernel.for %n = 0 to 1 {
    kernel.for %r = 0 to 226 parallel {
      kernel.for %c = 0 to 3 {
        kernel.for %x = 0 to 1 vectorized {
          kernel.block "pad_row" (%vn = spatial %n, %vc = spatial %c, %vr = spatial %r, %vx = spatial %x) {
            %0 = arith.constant 0.000000e+00 : f32
            memref.store %0, %pad[%vn, %vc, %vr, %vx] : memref<1x3x226x226xf32>
          }
        }
        kernel.for %x_1 = 0 to 224 vectorized {
          kernel.block "pad_row" (%vn_1 = spatial %n, %vc_1 = spatial %c, %vr_1 = spatial %r, %vx_1 = spatial %x_1) {
            %1 = arith.constant 0.000000e+00 : f32
            %2 = arith.constant -1 : index
            %3 = arith.addi %vr_1, %2 : index
            %4 = arith.constant 0 : index
            %5 = arith.cmpi sgt, %3, %4 : index
            %6 = arith.select %5, %3, %4 : index
            %7 = arith.constant 223 : index
            %8 = arith.cmpi slt, %6, %7 : index
            %9 = arith.select %8, %6, %7 : index
            %10 = arith.cmpi eq, %3, %9 : index
            %11 = memref.load %data[%vn_1, %vc_1, %9, %vx_1] : memref<1x3x224x224xf32>
            %12 = arith.select %10, %11, %1 : f32
            %13 = arith.constant 1 : index
            %14 = arith.addi %vx_1, %13 : index
            memref.store %12, %pad[%vn_1, %vc_1, %vr_1, %14] : memref<1x3x226x226xf32>
          }
        }
        kernel.for %x_2 = 0 to 1 vectorized {
          kernel.block "pad_row" (%vn_2 = spatial %n, %vc_2 = spatial %c, %vr_2 = spatial %r, %vx_2 = spatial %x_2) {
            %15 = arith.constant 0.000000e+00 : f32
            %16 = arith.constant 225 : index
            %17 = arith.addi %vx_2, %16 : index
            memref.store %15, %pad[%vn_2, %vc_2, %vr_2, %17] : memref<1x3x226x226xf32>
          }
        }
      }
    }
  }
  kernel.for %t = 0 to 12544 parallel {
    %acc = memref.alloc() : memref<4x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vt = spatial %t, %vl = spatial %l) {
        %18 = arith.constant 0.000000e+00 : f32
        %19 = arith.constant 0 : index
        memref.store %18, %acc[%19, %vl] : memref<4x16xf32>
        %20 = arith.constant 1 : index
        memref.store %18, %acc[%20, %vl] : memref<4x16xf32>
        %21 = arith.constant 2 : index
        memref.store %18, %acc[%21, %vl] : memref<4x16xf32>
        %22 = arith.constant 3 : index
        memref.store %18, %acc[%22, %vl] : memref<4x16xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 unrolled {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vt_1 = spatial %t, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %23 = arith.constant 0 : index
              %24 = arith.constant 56 : index
              %25 = arith.divsi %vt_1, %24 : index
              %26 = arith.constant 14 : index
              %27 = arith.divsi %vt_1, %26 : index
              %28 = arith.constant 4 : index
              %29 = arith.remsi %27, %28 : index
              %30 = arith.remsi %vt_1, %26 : index
              %31 = arith.muli %29, %28 : index
              %32 = arith.constant 16 : index
              %33 = arith.muli %30, %32 : index
              %34 = arith.addi %25, %vkh : index
              %35 = arith.addi %33, %vl_1 : index
              %36 = arith.addi %35, %vkw : index
              %37 = memref.load %pad[%23, %vic, %34, %36] : memref<1x3x226x226xf32>
              %38 = memref.load %weight[%31, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %39 = memref.load %acc[%23, %vl_1] : memref<4x16xf32>
              %40 = arith.mulf %38, %37 : f32
              %41 = arith.addf %39, %40 : f32
              memref.store %41, %acc[%23, %vl_1] : memref<4x16xf32>
              %42 = arith.constant 1 : index
              %43 = arith.addi %31, %42 : index
              %44 = memref.load %weight[%43, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %45 = memref.load %acc[%42, %vl_1] : memref<4x16xf32>
              %46 = arith.mulf %44, %37 : f32
              %47 = arith.addf %45, %46 : f32
              memref.store %47, %acc[%42, %vl_1] : memref<4x16xf32>
              %48 = arith.constant 2 : index
              %49 = arith.addi %31, %48 : index
              %50 = memref.load %weight[%49, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %51 = memref.load %acc[%48, %vl_1] : memref<4x16xf32>
              %52 = arith.mulf %50, %37 : f32
              %53 = arith.addf %51, %52 : f32
              memref.store %53, %acc[%48, %vl_1] : memref<4x16xf32>
              %54 = arith.constant 3 : index
              %55 = arith.addi %31, %54 : index
              %56 = memref.load %weight[%55, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %57 = memref.load %acc[%54, %vl_1] : memref<4x16xf32>
              %58 = arith.mulf %56, %37 : f32
              %59 = arith.addf %57, %58 : f32
              memref.store %59, %acc[%54, %vl_1] : memref<4x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vt_2 = spatial %t, %vl_2 = spatial %l_2) {
        %60 = arith.constant 0 : index
        %61 = arith.constant 56 : index
        %62 = arith.divsi %vt_2, %61 : index
        %63 = arith.constant 14 : index
        %64 = arith.divsi %vt_2, %63 : index
        %65 = arith.constant 4 : index
        %66 = arith.remsi %64, %65 : index
        %67 = arith.remsi %vt_2, %63 : index
        %68 = arith.muli %66, %65 : index
        %69 = arith.constant 16 : index
        %70 = arith.muli %67, %69 : index
        %71 = arith.addi %70, %vl_2 : index
        %72 = memref.load %acc[%60, %vl_2] : memref<4x16xf32>
        %73 = memref.load %rhs[%68, %60, %60] : memref<16x1x1xf32>
        %74 = arith.addf %72, %73 : f32
        %75 = arith.constant 0.000000e+00 : f32
        %76 = arith.maximumf %74, %75 : f32
        memref.store %76, %out[%60, %68, %62, %71] : memref<1x16x224x224xf32>
        %77 = arith.constant 1 : index
        %78 = memref.load %acc[%77, %vl_2] : memref<4x16xf32>
        %79 = arith.addi %68, %77 : index
        %80 = memref.load %rhs[%79, %60, %60] : memref<16x1x1xf32>
        %81 = arith.addf %78, %80 : f32
        %82 = arith.maximumf %81, %75 : f32
        memref.store %82, %out[%60, %79, %62, %71] : memref<1x16x224x224xf32>
        %83 = arith.constant 2 : index
        %84 = memref.load %acc[%83, %vl_2] : memref<4x16xf32>
        %85 = arith.addi %68, %83 : index
        %86 = memref.load %rhs[%85, %60, %60] : memref<16x1x1xf32>
        %87 = arith.addf %84, %86 : f32
        %88 = arith.maximumf %87, %75 : f32
        memref.store %88, %out[%60, %85, %62, %71] : memref<1x16x224x224xf32>
        %89 = arith.constant 3 : index
        %90 = memref.load %acc[%89, %vl_2] : memref<4x16xf32>
        %91 = arith.addi %68, %89 : index
        %92 = memref.load %rhs[%91, %60, %60] : memref<16x1x1xf32>
        %93 = arith.addf %90, %92 : f32
        %94 = arith.maximumf %93, %75 : f32
        memref.store %94, %out[%60, %91, %62, %71] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc : memref<4x16xf32>
  }
  memref.dealloc %pad : memref<1x3x226x226xf32>
  func.return
}
