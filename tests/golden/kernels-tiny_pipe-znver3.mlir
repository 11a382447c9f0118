func.func @fused_conv2d_add_relu_batch_flatten(%data: memref<1x3x8x8xf32>, %weight: memref<1x3x3x3x16xf32>, %rhs: memref<16x1x1xf32>, %out: memref<1x1024xf32>) attributes {kernel.kernel} {
  %pad = memref.alloc() : memref<1x3x10x10xf32>
  kernel.for %n = 0 to 1 {
    kernel.for %c = 0 to 3 parallel {
      kernel.for %hw = 0 to 100 vectorized {
        kernel.block "pad_fill" (%vn = spatial %n, %vc = spatial %c, %vhw = spatial %hw) {
          %0 = arith.constant 10 : index
          %1 = arith.divsi %vhw, %0 : index
          %2 = arith.remsi %vhw, %0 : index
          %3 = arith.constant 0.000000e+00 : f32
          memref.store %3, %pad[%vn, %vc, %1, %2] : memref<1x3x10x10xf32>
        }
      }
      kernel.for %h = 0 to 8 {
        kernel.for %w = 0 to 8 vectorized {
          kernel.block "pad_copy" (%vn_1 = spatial %n, %vc_1 = spatial %c, %vh = spatial %h, %vw = spatial %w) {
            %4 = memref.load %data[%vn_1, %vc_1, %vh, %vw] : memref<1x3x8x8xf32>
            %5 = arith.constant 1 : index
            %6 = arith.addi %vh, %5 : index
            %7 = arith.addi %vw, %5 : index
            memref.store %4, %pad[%vn_1, %vc_1, %6, %7] : memref<1x3x10x10xf32>
          }
        }
      }
    }
  }
  kernel.for %pt = 0 to 16 {
    %acc = memref.alloc() : memref<4x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt = spatial %pt, %vl = spatial %l) {
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
            kernel.block "conv2d" (%vpt_1 = spatial %pt, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %13 = arith.constant 0 : index
              %14 = arith.constant 4 : index
              %15 = arith.muli %vpt_1, %14 : index
              %16 = memref.load %weight[%13, %vic, %vkh, %vkw, %vl_1] : memref<1x3x3x3x16xf32>
              %17 = arith.constant 8 : index
              %18 = arith.divsi %15, %17 : index
              %19 = arith.remsi %15, %17 : index
              %20 = arith.addi %18, %vkh : index
              %21 = arith.addi %19, %vkw : index
              %22 = memref.load %pad[%13, %vic, %20, %21] : memref<1x3x10x10xf32>
              %23 = memref.load %acc[%13, %vl_1] : memref<4x16xf32>
              %24 = arith.mulf %22, %16 : f32
              %25 = arith.addf %23, %24 : f32
              memref.store %25, %acc[%13, %vl_1] : memref<4x16xf32>
              %26 = arith.constant 1 : index
              %27 = arith.addi %15, %26 : index
              %28 = arith.divsi %27, %17 : index
              %29 = arith.remsi %27, %17 : index
              %30 = arith.addi %28, %vkh : index
              %31 = arith.addi %29, %vkw : index
              %32 = memref.load %pad[%13, %vic, %30, %31] : memref<1x3x10x10xf32>
              %33 = memref.load %acc[%26, %vl_1] : memref<4x16xf32>
              %34 = arith.mulf %32, %16 : f32
              %35 = arith.addf %33, %34 : f32
              memref.store %35, %acc[%26, %vl_1] : memref<4x16xf32>
              %36 = arith.constant 2 : index
              %37 = arith.addi %15, %36 : index
              %38 = arith.divsi %37, %17 : index
              %39 = arith.remsi %37, %17 : index
              %40 = arith.addi %38, %vkh : index
              %41 = arith.addi %39, %vkw : index
              %42 = memref.load %pad[%13, %vic, %40, %41] : memref<1x3x10x10xf32>
              %43 = memref.load %acc[%36, %vl_1] : memref<4x16xf32>
              %44 = arith.mulf %42, %16 : f32
              %45 = arith.addf %43, %44 : f32
              memref.store %45, %acc[%36, %vl_1] : memref<4x16xf32>
              %46 = arith.constant 3 : index
              %47 = arith.addi %15, %46 : index
              %48 = arith.divsi %47, %17 : index
              %49 = arith.remsi %47, %17 : index
              %50 = arith.addi %48, %vkh : index
              %51 = arith.addi %49, %vkw : index
              %52 = memref.load %pad[%13, %vic, %50, %51] : memref<1x3x10x10xf32>
              %53 = memref.load %acc[%46, %vl_1] : memref<4x16xf32>
              %54 = arith.mulf %52, %16 : f32
              %55 = arith.addf %53, %54 : f32
              memref.store %55, %acc[%46, %vl_1] : memref<4x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %56 = arith.constant 0 : index
        %57 = arith.constant 4 : index
        %58 = arith.muli %vpt_2, %57 : index
        %59 = arith.constant 16 : index
        %60 = arith.muli %56, %59 : index
        %61 = arith.addi %60, %vl_2 : index
        %62 = memref.load %acc[%56, %vl_2] : memref<4x16xf32>
        %63 = arith.constant 8 : index
        %64 = arith.divsi %58, %63 : index
        %65 = arith.remsi %58, %63 : index
        %66 = memref.load %rhs[%61, %56, %56] : memref<16x1x1xf32>
        %67 = arith.addf %62, %66 : f32
        %68 = arith.constant 0.000000e+00 : f32
        %69 = arith.maximumf %67, %68 : f32
        %70 = arith.constant 1024 : index
        %71 = arith.muli %56, %70 : index
        %72 = arith.constant 64 : index
        %73 = arith.muli %61, %72 : index
        %74 = arith.addi %71, %73 : index
        %75 = arith.muli %64, %63 : index
        %76 = arith.addi %74, %75 : index
        %77 = arith.addi %76, %65 : index
        memref.store %69, %out[%56, %77] : memref<1x1024xf32>
        %78 = arith.constant 1 : index
        %79 = memref.load %acc[%78, %vl_2] : memref<4x16xf32>
        %80 = arith.addi %58, %78 : index
        %81 = arith.divsi %80, %63 : index
        %82 = arith.remsi %80, %63 : index
        %83 = memref.load %rhs[%61, %56, %56] : memref<16x1x1xf32>
        %84 = arith.addf %79, %83 : f32
        %85 = arith.maximumf %84, %68 : f32
        %86 = arith.muli %56, %70 : index
        %87 = arith.muli %61, %72 : index
        %88 = arith.addi %86, %87 : index
        %89 = arith.muli %81, %63 : index
        %90 = arith.addi %88, %89 : index
        %91 = arith.addi %90, %82 : index
        memref.store %85, %out[%56, %91] : memref<1x1024xf32>
        %92 = arith.constant 2 : index
        %93 = memref.load %acc[%92, %vl_2] : memref<4x16xf32>
        %94 = arith.addi %58, %92 : index
        %95 = arith.divsi %94, %63 : index
        %96 = arith.remsi %94, %63 : index
        %97 = memref.load %rhs[%61, %56, %56] : memref<16x1x1xf32>
        %98 = arith.addf %93, %97 : f32
        %99 = arith.maximumf %98, %68 : f32
        %100 = arith.muli %56, %70 : index
        %101 = arith.muli %61, %72 : index
        %102 = arith.addi %100, %101 : index
        %103 = arith.muli %95, %63 : index
        %104 = arith.addi %102, %103 : index
        %105 = arith.addi %104, %96 : index
        memref.store %99, %out[%56, %105] : memref<1x1024xf32>
        %106 = arith.constant 3 : index
        %107 = memref.load %acc[%106, %vl_2] : memref<4x16xf32>
        %108 = arith.addi %58, %106 : index
        %109 = arith.divsi %108, %63 : index
        %110 = arith.remsi %108, %63 : index
        %111 = memref.load %rhs[%61, %56, %56] : memref<16x1x1xf32>
        %112 = arith.addf %107, %111 : f32
        %113 = arith.maximumf %112, %68 : f32
        %114 = arith.muli %56, %70 : index
        %115 = arith.muli %61, %72 : index
        %116 = arith.addi %114, %115 : index
        %117 = arith.muli %109, %63 : index
        %118 = arith.addi %116, %117 : index
        %119 = arith.addi %118, %110 : index
        memref.store %113, %out[%56, %119] : memref<1x1024xf32>
      }
    }
    memref.dealloc %acc : memref<4x16xf32>
  }
  memref.dealloc %pad : memref<1x3x10x10xf32>
  func.return
}
func.func @dense(%data: memref<1x1024xf32>, %weight: memref<1x1024x64xf32>, %out: memref<1x1xf32>) attributes {kernel.kernel} {
  kernel.for %pt = 0 to 1 {
    %acc = memref.alloc() : memref<1x64xf32>
    kernel.for %l = 0 to 64 vectorized {
      kernel.block "dense_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %0 = arith.constant 0.000000e+00 : f32
        %1 = arith.constant 0 : index
        memref.store %0, %acc[%1, %vl] : memref<1x64xf32>
      }
    }
    kernel.for %k = 0 to 1024 {
      kernel.for %l_1 = 0 to 64 vectorized {
        kernel.block "dense" (%vpt_1 = spatial %pt, %vk = reduce %k, %vl_1 = spatial %l_1) {
          %2 = arith.constant 0 : index
          %3 = memref.load %weight[%2, %vk, %vl_1] : memref<1x1024x64xf32>
          %4 = memref.load %data[%2, %vk] : memref<1x1024xf32>
          %5 = memref.load %acc[%2, %vl_1] : memref<1x64xf32>
          %6 = arith.mulf %4, %3 : f32
          %7 = arith.addf %5, %6 : f32
          memref.store %7, %acc[%2, %vl_1] : memref<1x64xf32>
        }
      }
    }
    kernel.for %l_2 = 0 to 1 vectorized {
      kernel.block "dense_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %8 = arith.constant 0 : index
        %9 = arith.constant 64 : index
        %10 = arith.muli %8, %9 : index
        %11 = arith.addi %10, %vl_2 : index
        %12 = memref.load %acc[%8, %vl_2] : memref<1x64xf32>
        memref.store %12, %out[%8, %11] : memref<1x1xf32>
      }
    }
    memref.dealloc %acc : memref<1x64xf32>
  }
  func.return
}
