func.func @fused_conv2d_add_relu(%data: memref<1x3x224x224xf32>, %weight: memref<16x3x3x3xf32>, %rhs: memref<16x1x1xf32>, %out: memref<1x16x224x224xf32>) attributes {kernel.kernel} {
  %pad = memref.alloc() : memref<1x3x226x226xf32>
  kernel.for %n = 0 to 1 {
    kernel.for %c = 0 to 3 parallel {
      kernel.for %hw = 0 to 51076 vectorized {
        kernel.block "pad_fill" (%vn = spatial %n, %vc = spatial %c, %vhw = spatial %hw) {
          %0 = arith.constant 226 : index
          %1 = arith.divsi %vhw, %0 : index
          %2 = arith.remsi %vhw, %0 : index
          %3 = arith.constant 0.000000e+00 : f32
          memref.store %3, %pad[%vn, %vc, %1, %2] : memref<1x3x226x226xf32>
        }
      }
      kernel.for %h = 0 to 224 {
        kernel.for %w = 0 to 224 vectorized {
          kernel.block "pad_copy" (%vn_1 = spatial %n, %vc_1 = spatial %c, %vh = spatial %h, %vw = spatial %w) {
            %4 = memref.load %data[%vn_1, %vc_1, %vh, %vw] : memref<1x3x224x224xf32>
            %5 = arith.constant 1 : index
            %6 = arith.addi %vh, %5 : index
            %7 = arith.addi %vw, %5 : index
            memref.store %4, %pad[%vn_1, %vc_1, %6, %7] : memref<1x3x226x226xf32>
          }
        }
      }
    }
  }
  kernel.for %t = 0 to 12544 parallel {
    %acc = memref.alloc() : memref<4x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vt = spatial %t, %vl = spatial %l) {
        %8 = arith.constant 0.000000e+00 : f32
        %9 = arith.constant 0 : index
        memref.store %8, %acc[%9, %vl] : memref<4x16xf32>
        %10 = arith.constant 1 : index
        memref.store %8, %acc[%10, %vl] : memref<4x16xf32>
        %11 = arith.constant 2 : index
        memref.store %8, %acc[%11, %vl] : memref<4x16xf32>
        %12 = arith.constant 3 : index
        memref.store %8, %acc[%12, %vl] : memref<4x16xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 unrolled {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vt_1 = spatial %t, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %13 = arith.constant 0 : index
              %14 = arith.constant 56 : index
              %15 = arith.divsi %vt_1, %14 : index
              %16 = arith.constant 14 : index
              %17 = arith.divsi %vt_1, %16 : index
              %18 = arith.constant 4 : index
              %19 = arith.remsi %17, %18 : index
              %20 = arith.remsi %vt_1, %16 : index
              %21 = arith.muli %19, %18 : index
              %22 = arith.constant 16 : index
              %23 = arith.muli %20, %22 : index
              %24 = arith.addi %15, %vkh : index
              %25 = arith.addi %23, %vl_1 : index
              %26 = arith.addi %25, %vkw : index
              %27 = memref.load %pad[%13, %vic, %24, %26] : memref<1x3x226x226xf32>
              %28 = memref.load %weight[%21, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %29 = memref.load %acc[%13, %vl_1] : memref<4x16xf32>
              %30 = arith.mulf %28, %27 : f32
              %31 = arith.addf %29, %30 : f32
              memref.store %31, %acc[%13, %vl_1] : memref<4x16xf32>
              %32 = arith.constant 1 : index
              %33 = arith.addi %21, %32 : index
              %34 = memref.load %weight[%33, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %35 = memref.load %acc[%32, %vl_1] : memref<4x16xf32>
              %36 = arith.mulf %34, %27 : f32
              %37 = arith.addf %35, %36 : f32
              memref.store %37, %acc[%32, %vl_1] : memref<4x16xf32>
              %38 = arith.constant 2 : index
              %39 = arith.addi %21, %38 : index
              %40 = memref.load %weight[%39, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %41 = memref.load %acc[%38, %vl_1] : memref<4x16xf32>
              %42 = arith.mulf %40, %27 : f32
              %43 = arith.addf %41, %42 : f32
              memref.store %43, %acc[%38, %vl_1] : memref<4x16xf32>
              %44 = arith.constant 3 : index
              %45 = arith.addi %21, %44 : index
              %46 = memref.load %weight[%45, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %47 = memref.load %acc[%44, %vl_1] : memref<4x16xf32>
              %48 = arith.mulf %46, %27 : f32
              %49 = arith.addf %47, %48 : f32
              memref.store %49, %acc[%44, %vl_1] : memref<4x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vt_2 = spatial %t, %vl_2 = spatial %l_2) {
        %50 = arith.constant 0 : index
        %51 = arith.constant 56 : index
        %52 = arith.divsi %vt_2, %51 : index
        %53 = arith.constant 14 : index
        %54 = arith.divsi %vt_2, %53 : index
        %55 = arith.constant 4 : index
        %56 = arith.remsi %54, %55 : index
        %57 = arith.remsi %vt_2, %53 : index
        %58 = arith.muli %56, %55 : index
        %59 = arith.constant 16 : index
        %60 = arith.muli %57, %59 : index
        %61 = arith.addi %60, %vl_2 : index
        %62 = memref.load %acc[%50, %vl_2] : memref<4x16xf32>
        %63 = memref.load %rhs[%58, %50, %50] : memref<16x1x1xf32>
        %64 = arith.addf %62, %63 : f32
        %65 = arith.constant 0.000000e+00 : f32
        %66 = arith.maximumf %64, %65 : f32
        memref.store %66, %out[%50, %58, %52, %61] : memref<1x16x224x224xf32>
        %67 = arith.constant 1 : index
        %68 = memref.load %acc[%67, %vl_2] : memref<4x16xf32>
        %69 = arith.addi %58, %67 : index
        %70 = memref.load %rhs[%69, %50, %50] : memref<16x1x1xf32>
        %71 = arith.addf %68, %70 : f32
        %72 = arith.maximumf %71, %65 : f32
        memref.store %72, %out[%50, %69, %52, %61] : memref<1x16x224x224xf32>
        %73 = arith.constant 2 : index
        %74 = memref.load %acc[%73, %vl_2] : memref<4x16xf32>
        %75 = arith.addi %58, %73 : index
        %76 = memref.load %rhs[%75, %50, %50] : memref<16x1x1xf32>
        %77 = arith.addf %74, %76 : f32
        %78 = arith.maximumf %77, %65 : f32
        memref.store %78, %out[%50, %75, %52, %61] : memref<1x16x224x224xf32>
        %79 = arith.constant 3 : index
        %80 = memref.load %acc[%79, %vl_2] : memref<4x16xf32>
        %81 = arith.addi %58, %79 : index
        %82 = memref.load %rhs[%81, %50, %50] : memref<16x1x1xf32>
        %83 = arith.addf %80, %82 : f32
        %84 = arith.maximumf %83, %65 : f32
        memref.store %84, %out[%50, %81, %52, %61] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc : memref<4x16xf32>
  }
  memref.dealloc %pad : memref<1x3x226x226xf32>
  func.return
}
