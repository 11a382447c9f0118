func.func @fused_conv2d_add_relu_batch_flatten(%data: memref<1x3x8x8xf32>, %weight: memref<1x3x3x3x16xf32>, %rhs: memref<16x1x1xf32>, %out: memref<1x1024xf32>) attributes {kernel.kernel} {
  %pad = memref.alloc() : memref<1x3x10x10xf32>
  kernel.for %n = 0 to 1 {
    kernel.for %r = 0 to 10 parallel {
      kernel.for %c = 0 to 3 {
        kernel.for %x = 0 to 1 vectorized {
          kernel.block "pad_row" (%vn = spatial %n, %vc = spatial %c, %vr = spatial %r, %vx = spatial %x) {
            %0 = arith.constant 0.000000e+00 : f32
            memref.store %0, %pad[%vn, %vc, %vr, %vx] : memref<1x3x10x10xf32>
          }
        }
        kernel.for %x_1 = 0 to 8 vectorized {
          kernel.block "pad_row" (%vn_1 = spatial %n, %vc_1 = spatial %c, %vr_1 = spatial %r, %vx_1 = spatial %x_1) {
            %1 = arith.constant 0.000000e+00 : f32
            %2 = arith.constant -1 : index
            %3 = arith.addi %vr_1, %2 : index
            %4 = arith.constant 0 : index
            %5 = arith.cmpi sgt, %3, %4 : index
            %6 = arith.select %5, %3, %4 : index
            %7 = arith.constant 7 : index
            %8 = arith.cmpi slt, %6, %7 : index
            %9 = arith.select %8, %6, %7 : index
            %10 = arith.cmpi eq, %3, %9 : index
            %11 = memref.load %data[%vn_1, %vc_1, %9, %vx_1] : memref<1x3x8x8xf32>
            %12 = arith.select %10, %11, %1 : f32
            %13 = arith.constant 1 : index
            %14 = arith.addi %vx_1, %13 : index
            memref.store %12, %pad[%vn_1, %vc_1, %vr_1, %14] : memref<1x3x10x10xf32>
          }
        }
        kernel.for %x_2 = 0 to 1 vectorized {
          kernel.block "pad_row" (%vn_2 = spatial %n, %vc_2 = spatial %c, %vr_2 = spatial %r, %vx_2 = spatial %x_2) {
            %15 = arith.constant 0.000000e+00 : f32
            %16 = arith.constant 9 : index
            %17 = arith.addi %vx_2, %16 : index
            memref.store %15, %pad[%vn_2, %vc_2, %vr_2, %17] : memref<1x3x10x10xf32>
          }
        }
      }
    }
  }
  kernel.for %pt = 0 to 16 {
    %acc = memref.alloc() : memref<4x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt = spatial %pt, %vl = spatial %l) {
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
            kernel.block "conv2d" (%vpt_1 = spatial %pt, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %23 = arith.constant 0 : index
              %24 = arith.constant 4 : index
              %25 = arith.muli %vpt_1, %24 : index
              %26 = memref.load %weight[%23, %vic, %vkh, %vkw, %vl_1] : memref<1x3x3x3x16xf32>
              %27 = arith.constant 8 : index
              %28 = arith.divsi %25, %27 : index
              %29 = arith.remsi %25, %27 : index
              %30 = arith.addi %28, %vkh : index
              %31 = arith.addi %29, %vkw : index
              %32 = memref.load %pad[%23, %vic, %30, %31] : memref<1x3x10x10xf32>
              %33 = memref.load %acc[%23, %vl_1] : memref<4x16xf32>
              %34 = arith.mulf %32, %26 : f32
              %35 = arith.addf %33, %34 : f32
              memref.store %35, %acc[%23, %vl_1] : memref<4x16xf32>
              %36 = arith.constant 1 : index
              %37 = arith.addi %25, %36 : index
              %38 = arith.divsi %37, %27 : index
              %39 = arith.remsi %37, %27 : index
              %40 = arith.addi %38, %vkh : index
              %41 = arith.addi %39, %vkw : index
              %42 = memref.load %pad[%23, %vic, %40, %41] : memref<1x3x10x10xf32>
              %43 = memref.load %acc[%36, %vl_1] : memref<4x16xf32>
              %44 = arith.mulf %42, %26 : f32
              %45 = arith.addf %43, %44 : f32
              memref.store %45, %acc[%36, %vl_1] : memref<4x16xf32>
              %46 = arith.constant 2 : index
              %47 = arith.addi %25, %46 : index
              %48 = arith.divsi %47, %27 : index
              %49 = arith.remsi %47, %27 : index
              %50 = arith.addi %48, %vkh : index
              %51 = arith.addi %49, %vkw : index
              %52 = memref.load %pad[%23, %vic, %50, %51] : memref<1x3x10x10xf32>
              %53 = memref.load %acc[%46, %vl_1] : memref<4x16xf32>
              %54 = arith.mulf %52, %26 : f32
              %55 = arith.addf %53, %54 : f32
              memref.store %55, %acc[%46, %vl_1] : memref<4x16xf32>
              %56 = arith.constant 3 : index
              %57 = arith.addi %25, %56 : index
              %58 = arith.divsi %57, %27 : index
              %59 = arith.remsi %57, %27 : index
              %60 = arith.addi %58, %vkh : index
              %61 = arith.addi %59, %vkw : index
              %62 = memref.load %pad[%23, %vic, %60, %61] : memref<1x3x10x10xf32>
              %63 = memref.load %acc[%56, %vl_1] : memref<4x16xf32>
              %64 = arith.mulf %62, %26 : f32
              %65 = arith.addf %63, %64 : f32
              memref.store %65, %acc[%56, %vl_1] : memref<4x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %66 = arith.constant 0 : index
        %67 = arith.constant 4 : index
        %68 = arith.muli %vpt_2, %67 : index
        %69 = arith.constant 16 : index
        %70 = arith.muli %66, %69 : index
        %71 = arith.addi %70, %vl_2 : index
        %72 = memref.load %acc[%66, %vl_2] : memref<4x16xf32>
        %73 = arith.constant 8 : index
        %74 = arith.divsi %68, %73 : index
        %75 = arith.remsi %68, %73 : index
        %76 = memref.load %rhs[%71, %66, %66] : memref<16x1x1xf32>
        %77 = arith.addf %72, %76 : f32
        %78 = arith.constant 0.000000e+00 : f32
        %79 = arith.maximumf %77, %78 : f32
        %80 = arith.constant 1024 : index
        %81 = arith.muli %66, %80 : index
        %82 = arith.constant 64 : index
        %83 = arith.muli %71, %82 : index
        %84 = arith.addi %81, %83 : index
        %85 = arith.muli %74, %73 : index
        %86 = arith.addi %84, %85 : index
        %87 = arith.addi %86, %75 : index
        memref.store %79, %out[%66, %87] : memref<1x1024xf32>
        %88 = arith.constant 1 : index
        %89 = memref.load %acc[%88, %vl_2] : memref<4x16xf32>
        %90 = arith.addi %68, %88 : index
        %91 = arith.divsi %90, %73 : index
        %92 = arith.remsi %90, %73 : index
        %93 = memref.load %rhs[%71, %66, %66] : memref<16x1x1xf32>
        %94 = arith.addf %89, %93 : f32
        %95 = arith.maximumf %94, %78 : f32
        %96 = arith.muli %66, %80 : index
        %97 = arith.muli %71, %82 : index
        %98 = arith.addi %96, %97 : index
        %99 = arith.muli %91, %73 : index
        %100 = arith.addi %98, %99 : index
        %101 = arith.addi %100, %92 : index
        memref.store %95, %out[%66, %101] : memref<1x1024xf32>
        %102 = arith.constant 2 : index
        %103 = memref.load %acc[%102, %vl_2] : memref<4x16xf32>
        %104 = arith.addi %68, %102 : index
        %105 = arith.divsi %104, %73 : index
        %106 = arith.remsi %104, %73 : index
        %107 = memref.load %rhs[%71, %66, %66] : memref<16x1x1xf32>
        %108 = arith.addf %103, %107 : f32
        %109 = arith.maximumf %108, %78 : f32
        %110 = arith.muli %66, %80 : index
        %111 = arith.muli %71, %82 : index
        %112 = arith.addi %110, %111 : index
        %113 = arith.muli %105, %73 : index
        %114 = arith.addi %112, %113 : index
        %115 = arith.addi %114, %106 : index
        memref.store %109, %out[%66, %115] : memref<1x1024xf32>
        %116 = arith.constant 3 : index
        %117 = memref.load %acc[%116, %vl_2] : memref<4x16xf32>
        %118 = arith.addi %68, %116 : index
        %119 = arith.divsi %118, %73 : index
        %120 = arith.remsi %118, %73 : index
        %121 = memref.load %rhs[%71, %66, %66] : memref<16x1x1xf32>
        %122 = arith.addf %117, %121 : f32
        %123 = arith.maximumf %122, %78 : f32
        %124 = arith.muli %66, %80 : index
        %125 = arith.muli %71, %82 : index
        %126 = arith.addi %124, %125 : index
        %127 = arith.muli %119, %73 : index
        %128 = arith.addi %126, %127 : index
        %129 = arith.addi %128, %120 : index
        memref.store %123, %out[%66, %129] : memref<1x1024xf32>
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
