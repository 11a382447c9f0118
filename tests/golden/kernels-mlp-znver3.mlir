func.func @fused_dense_bias_add_relu(%data: memref<1x784xf32>, %weight: memref<2x784x64xf32>, %bias: memref<128xf32>, %out: memref<1x128xf32>) attributes {kernel.kernel} {
  kernel.for %pt = 0 to 2 {
    %acc = memref.alloc() : memref<1x64xf32>
    kernel.for %l = 0 to 64 vectorized {
      kernel.block "dense_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %0 = arith.constant 0.000000e+00 : f32
        %1 = arith.constant 0 : index
        memref.store %0, %acc[%1, %vl] : memref<1x64xf32>
      }
    }
    kernel.for %k = 0 to 784 {
      kernel.for %l_1 = 0 to 64 vectorized {
        kernel.block "dense" (%vpt_1 = spatial %pt, %vk = reduce %k, %vl_1 = spatial %l_1) {
          %2 = arith.constant 0 : index
          %3 = memref.load %weight[%vpt_1, %vk, %vl_1] : memref<2x784x64xf32>
          %4 = memref.load %data[%2, %vk] : memref<1x784xf32>
          %5 = memref.load %acc[%2, %vl_1] : memref<1x64xf32>
          %6 = arith.mulf %4, %3 : f32
          %7 = arith.addf %5, %6 : f32
          memref.store %7, %acc[%2, %vl_1] : memref<1x64xf32>
        }
      }
    }
    kernel.for %l_2 = 0 to 64 vectorized {
      kernel.block "dense_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %8 = arith.constant 0 : index
        %9 = arith.constant 64 : index
        %10 = arith.muli %vpt_2, %9 : index
        %11 = arith.addi %10, %vl_2 : index
        %12 = memref.load %acc[%8, %vl_2] : memref<1x64xf32>
        %13 = memref.load %bias[%11] : memref<128xf32>
        %14 = arith.addf %12, %13 : f32
        %15 = arith.constant 0.000000e+00 : f32
        %16 = arith.maximumf %14, %15 : f32
        memref.store %16, %out[%8, %11] : memref<1x128xf32>
      }
    }
    memref.dealloc %acc : memref<1x64xf32>
  }
  func.return
}
func.func @fused_dense_bias_add(%data: memref<1x128xf32>, %weight: memref<1x128x64xf32>, %bias: memref<10xf32>, %out: memref<1x10xf32>) attributes {kernel.kernel} {
  kernel.for %pt = 0 to 1 {
    %acc = memref.alloc() : memref<1x64xf32>
    kernel.for %l = 0 to 64 vectorized {
      kernel.block "dense_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %0 = arith.constant 0.000000e+00 : f32
        %1 = arith.constant 0 : index
        memref.store %0, %acc[%1, %vl] : memref<1x64xf32>
      }
    }
    kernel.for %k = 0 to 128 {
      kernel.for %l_1 = 0 to 64 vectorized {
        kernel.block "dense" (%vpt_1 = spatial %pt, %vk = reduce %k, %vl_1 = spatial %l_1) {
          %2 = arith.constant 0 : index
          %3 = memref.load %weight[%2, %vk, %vl_1] : memref<1x128x64xf32>
          %4 = memref.load %data[%2, %vk] : memref<1x128xf32>
          %5 = memref.load %acc[%2, %vl_1] : memref<1x64xf32>
          %6 = arith.mulf %4, %3 : f32
          %7 = arith.addf %5, %6 : f32
          memref.store %7, %acc[%2, %vl_1] : memref<1x64xf32>
        }
      }
    }
    kernel.for %l_2 = 0 to 10 vectorized {
      kernel.block "dense_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %8 = arith.constant 0 : index
        %9 = arith.constant 64 : index
        %10 = arith.muli %8, %9 : index
        %11 = arith.addi %10, %vl_2 : index
        %12 = memref.load %acc[%8, %vl_2] : memref<1x64xf32>
        %13 = memref.load %bias[%11] : memref<10xf32>
        %14 = arith.addf %12, %13 : f32
        memref.store %14, %out[%8, %11] : memref<1x10xf32>
      }
    }
    memref.dealloc %acc : memref<1x64xf32>
  }
  func.return
}
