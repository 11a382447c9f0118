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
  kernel.for %t = 0 to 1568 parallel {
    %acc = memref.alloc() : memref<6x32xf32>
    kernel.for %l = 0 to 32 vectorized {
      kernel.block "conv2d_init" (%vt = spatial %t, %vl = spatial %l) {
        %8 = arith.constant 0.000000e+00 : f32
        %9 = arith.constant 0 : index
        memref.store %8, %acc[%9, %vl] : memref<6x32xf32>
        %10 = arith.constant 1 : index
        memref.store %8, %acc[%10, %vl] : memref<6x32xf32>
        %11 = arith.constant 2 : index
        memref.store %8, %acc[%11, %vl] : memref<6x32xf32>
        %12 = arith.constant 3 : index
        memref.store %8, %acc[%12, %vl] : memref<6x32xf32>
        %13 = arith.constant 4 : index
        memref.store %8, %acc[%13, %vl] : memref<6x32xf32>
        %14 = arith.constant 5 : index
        memref.store %8, %acc[%14, %vl] : memref<6x32xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 32 vectorized {
            kernel.block "conv2d" (%vt_1 = spatial %t, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %15 = arith.constant 0 : index
              %16 = arith.constant 7 : index
              %17 = arith.divsi %vt_1, %16 : index
              %18 = arith.remsi %vt_1, %16 : index
              %19 = arith.constant 6 : index
              %20 = arith.muli %15, %19 : index
              %21 = arith.constant 32 : index
              %22 = arith.muli %18, %21 : index
              %23 = arith.addi %17, %vkh : index
              %24 = arith.addi %22, %vl_1 : index
              %25 = arith.addi %24, %vkw : index
              %26 = memref.load %pad[%15, %vic, %23, %25] : memref<1x3x226x226xf32>
              %27 = memref.load %weight[%20, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %28 = memref.load %acc[%15, %vl_1] : memref<6x32xf32>
              %29 = arith.mulf %27, %26 : f32
              %30 = arith.addf %28, %29 : f32
              memref.store %30, %acc[%15, %vl_1] : memref<6x32xf32>
              %31 = arith.constant 1 : index
              %32 = arith.addi %20, %31 : index
              %33 = memref.load %weight[%32, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %34 = memref.load %acc[%31, %vl_1] : memref<6x32xf32>
              %35 = arith.mulf %33, %26 : f32
              %36 = arith.addf %34, %35 : f32
              memref.store %36, %acc[%31, %vl_1] : memref<6x32xf32>
              %37 = arith.constant 2 : index
              %38 = arith.addi %20, %37 : index
              %39 = memref.load %weight[%38, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %40 = memref.load %acc[%37, %vl_1] : memref<6x32xf32>
              %41 = arith.mulf %39, %26 : f32
              %42 = arith.addf %40, %41 : f32
              memref.store %42, %acc[%37, %vl_1] : memref<6x32xf32>
              %43 = arith.constant 3 : index
              %44 = arith.addi %20, %43 : index
              %45 = memref.load %weight[%44, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %46 = memref.load %acc[%43, %vl_1] : memref<6x32xf32>
              %47 = arith.mulf %45, %26 : f32
              %48 = arith.addf %46, %47 : f32
              memref.store %48, %acc[%43, %vl_1] : memref<6x32xf32>
              %49 = arith.constant 4 : index
              %50 = arith.addi %20, %49 : index
              %51 = memref.load %weight[%50, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %52 = memref.load %acc[%49, %vl_1] : memref<6x32xf32>
              %53 = arith.mulf %51, %26 : f32
              %54 = arith.addf %52, %53 : f32
              memref.store %54, %acc[%49, %vl_1] : memref<6x32xf32>
              %55 = arith.constant 5 : index
              %56 = arith.addi %20, %55 : index
              %57 = memref.load %weight[%56, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %58 = memref.load %acc[%55, %vl_1] : memref<6x32xf32>
              %59 = arith.mulf %57, %26 : f32
              %60 = arith.addf %58, %59 : f32
              memref.store %60, %acc[%55, %vl_1] : memref<6x32xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 32 vectorized {
      kernel.block "conv2d_store" (%vt_2 = spatial %t, %vl_2 = spatial %l_2) {
        %61 = arith.constant 0 : index
        %62 = arith.constant 7 : index
        %63 = arith.divsi %vt_2, %62 : index
        %64 = arith.remsi %vt_2, %62 : index
        %65 = arith.constant 6 : index
        %66 = arith.muli %61, %65 : index
        %67 = arith.constant 32 : index
        %68 = arith.muli %64, %67 : index
        %69 = arith.addi %68, %vl_2 : index
        %70 = memref.load %acc[%61, %vl_2] : memref<6x32xf32>
        %71 = memref.load %rhs[%66, %61, %61] : memref<16x1x1xf32>
        %72 = arith.addf %70, %71 : f32
        %73 = arith.constant 0.000000e+00 : f32
        %74 = arith.maximumf %72, %73 : f32
        memref.store %74, %out[%61, %66, %63, %69] : memref<1x16x224x224xf32>
        %75 = arith.constant 1 : index
        %76 = memref.load %acc[%75, %vl_2] : memref<6x32xf32>
        %77 = arith.addi %66, %75 : index
        %78 = memref.load %rhs[%77, %61, %61] : memref<16x1x1xf32>
        %79 = arith.addf %76, %78 : f32
        %80 = arith.maximumf %79, %73 : f32
        memref.store %80, %out[%61, %77, %63, %69] : memref<1x16x224x224xf32>
        %81 = arith.constant 2 : index
        %82 = memref.load %acc[%81, %vl_2] : memref<6x32xf32>
        %83 = arith.addi %66, %81 : index
        %84 = memref.load %rhs[%83, %61, %61] : memref<16x1x1xf32>
        %85 = arith.addf %82, %84 : f32
        %86 = arith.maximumf %85, %73 : f32
        memref.store %86, %out[%61, %83, %63, %69] : memref<1x16x224x224xf32>
        %87 = arith.constant 3 : index
        %88 = memref.load %acc[%87, %vl_2] : memref<6x32xf32>
        %89 = arith.addi %66, %87 : index
        %90 = memref.load %rhs[%89, %61, %61] : memref<16x1x1xf32>
        %91 = arith.addf %88, %90 : f32
        %92 = arith.maximumf %91, %73 : f32
        memref.store %92, %out[%61, %89, %63, %69] : memref<1x16x224x224xf32>
        %93 = arith.constant 4 : index
        %94 = memref.load %acc[%93, %vl_2] : memref<6x32xf32>
        %95 = arith.addi %66, %93 : index
        %96 = memref.load %rhs[%95, %61, %61] : memref<16x1x1xf32>
        %97 = arith.addf %94, %96 : f32
        %98 = arith.maximumf %97, %73 : f32
        memref.store %98, %out[%61, %95, %63, %69] : memref<1x16x224x224xf32>
        %99 = arith.constant 5 : index
        %100 = memref.load %acc[%99, %vl_2] : memref<6x32xf32>
        %101 = arith.addi %66, %99 : index
        %102 = memref.load %rhs[%101, %61, %61] : memref<16x1x1xf32>
        %103 = arith.addf %100, %102 : f32
        %104 = arith.maximumf %103, %73 : f32
        memref.store %104, %out[%61, %101, %63, %69] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc : memref<6x32xf32>
  }
  kernel.for %t_1 = 0 to 3136 parallel {
    %acc_1 = memref.alloc() : memref<5x32xf32>
    kernel.for %l_3 = 0 to 32 vectorized {
      kernel.block "conv2d_init" (%vt_3 = spatial %t_1, %vl_3 = spatial %l_3) {
        %105 = arith.constant 0.000000e+00 : f32
        %106 = arith.constant 0 : index
        memref.store %105, %acc_1[%106, %vl_3] : memref<5x32xf32>
        %107 = arith.constant 1 : index
        memref.store %105, %acc_1[%107, %vl_3] : memref<5x32xf32>
        %108 = arith.constant 2 : index
        memref.store %105, %acc_1[%108, %vl_3] : memref<5x32xf32>
        %109 = arith.constant 3 : index
        memref.store %105, %acc_1[%109, %vl_3] : memref<5x32xf32>
        %110 = arith.constant 4 : index
        memref.store %105, %acc_1[%110, %vl_3] : memref<5x32xf32>
      }
    }
    kernel.for %ic_1 = 0 to 3 {
      kernel.for %kh_1 = 0 to 3 {
        kernel.for %kw_1 = 0 to 3 unrolled {
          kernel.for %l_4 = 0 to 32 vectorized {
            kernel.block "conv2d" (%vt_4 = spatial %t_1, %vic_1 = reduce %ic_1, %vkh_1 = reduce %kh_1, %vkw_1 = reduce %kw_1, %vl_4 = spatial %l_4) {
              %111 = arith.constant 0 : index
              %112 = arith.constant 14 : index
              %113 = arith.divsi %vt_4, %112 : index
              %114 = arith.constant 7 : index
              %115 = arith.divsi %vt_4, %114 : index
              %116 = arith.constant 2 : index
              %117 = arith.remsi %115, %116 : index
              %118 = arith.remsi %vt_4, %114 : index
              %119 = arith.constant 5 : index
              %120 = arith.muli %117, %119 : index
              %121 = arith.constant 6 : index
              %122 = arith.addi %120, %121 : index
              %123 = arith.constant 32 : index
              %124 = arith.muli %118, %123 : index
              %125 = arith.addi %113, %vkh_1 : index
              %126 = arith.addi %124, %vl_4 : index
              %127 = arith.addi %126, %vkw_1 : index
              %128 = memref.load %pad[%111, %vic_1, %125, %127] : memref<1x3x226x226xf32>
              %129 = memref.load %weight[%122, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %130 = memref.load %acc_1[%111, %vl_4] : memref<5x32xf32>
              %131 = arith.mulf %129, %128 : f32
              %132 = arith.addf %130, %131 : f32
              memref.store %132, %acc_1[%111, %vl_4] : memref<5x32xf32>
              %133 = arith.constant 1 : index
              %134 = arith.addi %122, %133 : index
              %135 = memref.load %weight[%134, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %136 = memref.load %acc_1[%133, %vl_4] : memref<5x32xf32>
              %137 = arith.mulf %135, %128 : f32
              %138 = arith.addf %136, %137 : f32
              memref.store %138, %acc_1[%133, %vl_4] : memref<5x32xf32>
              %139 = arith.addi %122, %116 : index
              %140 = memref.load %weight[%139, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %141 = memref.load %acc_1[%116, %vl_4] : memref<5x32xf32>
              %142 = arith.mulf %140, %128 : f32
              %143 = arith.addf %141, %142 : f32
              memref.store %143, %acc_1[%116, %vl_4] : memref<5x32xf32>
              %144 = arith.constant 3 : index
              %145 = arith.addi %122, %144 : index
              %146 = memref.load %weight[%145, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %147 = memref.load %acc_1[%144, %vl_4] : memref<5x32xf32>
              %148 = arith.mulf %146, %128 : f32
              %149 = arith.addf %147, %148 : f32
              memref.store %149, %acc_1[%144, %vl_4] : memref<5x32xf32>
              %150 = arith.constant 4 : index
              %151 = arith.addi %122, %150 : index
              %152 = memref.load %weight[%151, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %153 = memref.load %acc_1[%150, %vl_4] : memref<5x32xf32>
              %154 = arith.mulf %152, %128 : f32
              %155 = arith.addf %153, %154 : f32
              memref.store %155, %acc_1[%150, %vl_4] : memref<5x32xf32>
            }
          }
        }
      }
    }
    kernel.for %l_5 = 0 to 32 vectorized {
      kernel.block "conv2d_store" (%vt_5 = spatial %t_1, %vl_5 = spatial %l_5) {
        %156 = arith.constant 0 : index
        %157 = arith.constant 14 : index
        %158 = arith.divsi %vt_5, %157 : index
        %159 = arith.constant 7 : index
        %160 = arith.divsi %vt_5, %159 : index
        %161 = arith.constant 2 : index
        %162 = arith.remsi %160, %161 : index
        %163 = arith.remsi %vt_5, %159 : index
        %164 = arith.constant 5 : index
        %165 = arith.muli %162, %164 : index
        %166 = arith.constant 6 : index
        %167 = arith.addi %165, %166 : index
        %168 = arith.constant 32 : index
        %169 = arith.muli %163, %168 : index
        %170 = arith.addi %169, %vl_5 : index
        %171 = memref.load %acc_1[%156, %vl_5] : memref<5x32xf32>
        %172 = memref.load %rhs[%167, %156, %156] : memref<16x1x1xf32>
        %173 = arith.addf %171, %172 : f32
        %174 = arith.constant 0.000000e+00 : f32
        %175 = arith.maximumf %173, %174 : f32
        memref.store %175, %out[%156, %167, %158, %170] : memref<1x16x224x224xf32>
        %176 = arith.constant 1 : index
        %177 = memref.load %acc_1[%176, %vl_5] : memref<5x32xf32>
        %178 = arith.addi %167, %176 : index
        %179 = memref.load %rhs[%178, %156, %156] : memref<16x1x1xf32>
        %180 = arith.addf %177, %179 : f32
        %181 = arith.maximumf %180, %174 : f32
        memref.store %181, %out[%156, %178, %158, %170] : memref<1x16x224x224xf32>
        %182 = memref.load %acc_1[%161, %vl_5] : memref<5x32xf32>
        %183 = arith.addi %167, %161 : index
        %184 = memref.load %rhs[%183, %156, %156] : memref<16x1x1xf32>
        %185 = arith.addf %182, %184 : f32
        %186 = arith.maximumf %185, %174 : f32
        memref.store %186, %out[%156, %183, %158, %170] : memref<1x16x224x224xf32>
        %187 = arith.constant 3 : index
        %188 = memref.load %acc_1[%187, %vl_5] : memref<5x32xf32>
        %189 = arith.addi %167, %187 : index
        %190 = memref.load %rhs[%189, %156, %156] : memref<16x1x1xf32>
        %191 = arith.addf %188, %190 : f32
        %192 = arith.maximumf %191, %174 : f32
        memref.store %192, %out[%156, %189, %158, %170] : memref<1x16x224x224xf32>
        %193 = arith.constant 4 : index
        %194 = memref.load %acc_1[%193, %vl_5] : memref<5x32xf32>
        %195 = arith.addi %167, %193 : index
        %196 = memref.load %rhs[%195, %156, %156] : memref<16x1x1xf32>
        %197 = arith.addf %194, %196 : f32
        %198 = arith.maximumf %197, %174 : f32
        memref.store %198, %out[%156, %195, %158, %170] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc_1 : memref<5x32xf32>
  }
  memref.dealloc %pad : memref<1x3x226x226xf32>
  func.return
}
