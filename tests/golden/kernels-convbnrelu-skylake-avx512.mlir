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
  kernel.for %t = 0 to 1568 parallel {
    %acc = memref.alloc() : memref<6x32xf32>
    kernel.for %l = 0 to 32 vectorized {
      kernel.block "conv2d_init" (%vt = spatial %t, %vl = spatial %l) {
        %18 = arith.constant 0.000000e+00 : f32
        %19 = arith.constant 0 : index
        memref.store %18, %acc[%19, %vl] : memref<6x32xf32>
        %20 = arith.constant 1 : index
        memref.store %18, %acc[%20, %vl] : memref<6x32xf32>
        %21 = arith.constant 2 : index
        memref.store %18, %acc[%21, %vl] : memref<6x32xf32>
        %22 = arith.constant 3 : index
        memref.store %18, %acc[%22, %vl] : memref<6x32xf32>
        %23 = arith.constant 4 : index
        memref.store %18, %acc[%23, %vl] : memref<6x32xf32>
        %24 = arith.constant 5 : index
        memref.store %18, %acc[%24, %vl] : memref<6x32xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 32 vectorized {
            kernel.block "conv2d" (%vt_1 = spatial %t, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %25 = arith.constant 0 : index
              %26 = arith.constant 7 : index
              %27 = arith.divsi %vt_1, %26 : index
              %28 = arith.remsi %vt_1, %26 : index
              %29 = arith.constant 6 : index
              %30 = arith.muli %25, %29 : index
              %31 = arith.constant 32 : index
              %32 = arith.muli %28, %31 : index
              %33 = arith.addi %27, %vkh : index
              %34 = arith.addi %32, %vl_1 : index
              %35 = arith.addi %34, %vkw : index
              %36 = memref.load %pad[%25, %vic, %33, %35] : memref<1x3x226x226xf32>
              %37 = memref.load %weight[%30, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %38 = memref.load %acc[%25, %vl_1] : memref<6x32xf32>
              %39 = arith.mulf %37, %36 : f32
              %40 = arith.addf %38, %39 : f32
              memref.store %40, %acc[%25, %vl_1] : memref<6x32xf32>
              %41 = arith.constant 1 : index
              %42 = arith.addi %30, %41 : index
              %43 = memref.load %weight[%42, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %44 = memref.load %acc[%41, %vl_1] : memref<6x32xf32>
              %45 = arith.mulf %43, %36 : f32
              %46 = arith.addf %44, %45 : f32
              memref.store %46, %acc[%41, %vl_1] : memref<6x32xf32>
              %47 = arith.constant 2 : index
              %48 = arith.addi %30, %47 : index
              %49 = memref.load %weight[%48, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %50 = memref.load %acc[%47, %vl_1] : memref<6x32xf32>
              %51 = arith.mulf %49, %36 : f32
              %52 = arith.addf %50, %51 : f32
              memref.store %52, %acc[%47, %vl_1] : memref<6x32xf32>
              %53 = arith.constant 3 : index
              %54 = arith.addi %30, %53 : index
              %55 = memref.load %weight[%54, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %56 = memref.load %acc[%53, %vl_1] : memref<6x32xf32>
              %57 = arith.mulf %55, %36 : f32
              %58 = arith.addf %56, %57 : f32
              memref.store %58, %acc[%53, %vl_1] : memref<6x32xf32>
              %59 = arith.constant 4 : index
              %60 = arith.addi %30, %59 : index
              %61 = memref.load %weight[%60, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %62 = memref.load %acc[%59, %vl_1] : memref<6x32xf32>
              %63 = arith.mulf %61, %36 : f32
              %64 = arith.addf %62, %63 : f32
              memref.store %64, %acc[%59, %vl_1] : memref<6x32xf32>
              %65 = arith.constant 5 : index
              %66 = arith.addi %30, %65 : index
              %67 = memref.load %weight[%66, %vic, %vkh, %vkw] : memref<16x3x3x3xf32>
              %68 = memref.load %acc[%65, %vl_1] : memref<6x32xf32>
              %69 = arith.mulf %67, %36 : f32
              %70 = arith.addf %68, %69 : f32
              memref.store %70, %acc[%65, %vl_1] : memref<6x32xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 32 vectorized {
      kernel.block "conv2d_store" (%vt_2 = spatial %t, %vl_2 = spatial %l_2) {
        %71 = arith.constant 0 : index
        %72 = arith.constant 7 : index
        %73 = arith.divsi %vt_2, %72 : index
        %74 = arith.remsi %vt_2, %72 : index
        %75 = arith.constant 6 : index
        %76 = arith.muli %71, %75 : index
        %77 = arith.constant 32 : index
        %78 = arith.muli %74, %77 : index
        %79 = arith.addi %78, %vl_2 : index
        %80 = memref.load %acc[%71, %vl_2] : memref<6x32xf32>
        %81 = memref.load %rhs[%76, %71, %71] : memref<16x1x1xf32>
        %82 = arith.addf %80, %81 : f32
        %83 = arith.constant 0.000000e+00 : f32
        %84 = arith.maximumf %82, %83 : f32
        memref.store %84, %out[%71, %76, %73, %79] : memref<1x16x224x224xf32>
        %85 = arith.constant 1 : index
        %86 = memref.load %acc[%85, %vl_2] : memref<6x32xf32>
        %87 = arith.addi %76, %85 : index
        %88 = memref.load %rhs[%87, %71, %71] : memref<16x1x1xf32>
        %89 = arith.addf %86, %88 : f32
        %90 = arith.maximumf %89, %83 : f32
        memref.store %90, %out[%71, %87, %73, %79] : memref<1x16x224x224xf32>
        %91 = arith.constant 2 : index
        %92 = memref.load %acc[%91, %vl_2] : memref<6x32xf32>
        %93 = arith.addi %76, %91 : index
        %94 = memref.load %rhs[%93, %71, %71] : memref<16x1x1xf32>
        %95 = arith.addf %92, %94 : f32
        %96 = arith.maximumf %95, %83 : f32
        memref.store %96, %out[%71, %93, %73, %79] : memref<1x16x224x224xf32>
        %97 = arith.constant 3 : index
        %98 = memref.load %acc[%97, %vl_2] : memref<6x32xf32>
        %99 = arith.addi %76, %97 : index
        %100 = memref.load %rhs[%99, %71, %71] : memref<16x1x1xf32>
        %101 = arith.addf %98, %100 : f32
        %102 = arith.maximumf %101, %83 : f32
        memref.store %102, %out[%71, %99, %73, %79] : memref<1x16x224x224xf32>
        %103 = arith.constant 4 : index
        %104 = memref.load %acc[%103, %vl_2] : memref<6x32xf32>
        %105 = arith.addi %76, %103 : index
        %106 = memref.load %rhs[%105, %71, %71] : memref<16x1x1xf32>
        %107 = arith.addf %104, %106 : f32
        %108 = arith.maximumf %107, %83 : f32
        memref.store %108, %out[%71, %105, %73, %79] : memref<1x16x224x224xf32>
        %109 = arith.constant 5 : index
        %110 = memref.load %acc[%109, %vl_2] : memref<6x32xf32>
        %111 = arith.addi %76, %109 : index
        %112 = memref.load %rhs[%111, %71, %71] : memref<16x1x1xf32>
        %113 = arith.addf %110, %112 : f32
        %114 = arith.maximumf %113, %83 : f32
        memref.store %114, %out[%71, %111, %73, %79] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc : memref<6x32xf32>
  }
  kernel.for %t_1 = 0 to 3136 parallel {
    %acc_1 = memref.alloc() : memref<5x32xf32>
    kernel.for %l_3 = 0 to 32 vectorized {
      kernel.block "conv2d_init" (%vt_3 = spatial %t_1, %vl_3 = spatial %l_3) {
        %115 = arith.constant 0.000000e+00 : f32
        %116 = arith.constant 0 : index
        memref.store %115, %acc_1[%116, %vl_3] : memref<5x32xf32>
        %117 = arith.constant 1 : index
        memref.store %115, %acc_1[%117, %vl_3] : memref<5x32xf32>
        %118 = arith.constant 2 : index
        memref.store %115, %acc_1[%118, %vl_3] : memref<5x32xf32>
        %119 = arith.constant 3 : index
        memref.store %115, %acc_1[%119, %vl_3] : memref<5x32xf32>
        %120 = arith.constant 4 : index
        memref.store %115, %acc_1[%120, %vl_3] : memref<5x32xf32>
      }
    }
    kernel.for %ic_1 = 0 to 3 {
      kernel.for %kh_1 = 0 to 3 {
        kernel.for %kw_1 = 0 to 3 unrolled {
          kernel.for %l_4 = 0 to 32 vectorized {
            kernel.block "conv2d" (%vt_4 = spatial %t_1, %vic_1 = reduce %ic_1, %vkh_1 = reduce %kh_1, %vkw_1 = reduce %kw_1, %vl_4 = spatial %l_4) {
              %121 = arith.constant 0 : index
              %122 = arith.constant 14 : index
              %123 = arith.divsi %vt_4, %122 : index
              %124 = arith.constant 7 : index
              %125 = arith.divsi %vt_4, %124 : index
              %126 = arith.constant 2 : index
              %127 = arith.remsi %125, %126 : index
              %128 = arith.remsi %vt_4, %124 : index
              %129 = arith.constant 5 : index
              %130 = arith.muli %127, %129 : index
              %131 = arith.constant 6 : index
              %132 = arith.addi %130, %131 : index
              %133 = arith.constant 32 : index
              %134 = arith.muli %128, %133 : index
              %135 = arith.addi %123, %vkh_1 : index
              %136 = arith.addi %134, %vl_4 : index
              %137 = arith.addi %136, %vkw_1 : index
              %138 = memref.load %pad[%121, %vic_1, %135, %137] : memref<1x3x226x226xf32>
              %139 = memref.load %weight[%132, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %140 = memref.load %acc_1[%121, %vl_4] : memref<5x32xf32>
              %141 = arith.mulf %139, %138 : f32
              %142 = arith.addf %140, %141 : f32
              memref.store %142, %acc_1[%121, %vl_4] : memref<5x32xf32>
              %143 = arith.constant 1 : index
              %144 = arith.addi %132, %143 : index
              %145 = memref.load %weight[%144, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %146 = memref.load %acc_1[%143, %vl_4] : memref<5x32xf32>
              %147 = arith.mulf %145, %138 : f32
              %148 = arith.addf %146, %147 : f32
              memref.store %148, %acc_1[%143, %vl_4] : memref<5x32xf32>
              %149 = arith.addi %132, %126 : index
              %150 = memref.load %weight[%149, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %151 = memref.load %acc_1[%126, %vl_4] : memref<5x32xf32>
              %152 = arith.mulf %150, %138 : f32
              %153 = arith.addf %151, %152 : f32
              memref.store %153, %acc_1[%126, %vl_4] : memref<5x32xf32>
              %154 = arith.constant 3 : index
              %155 = arith.addi %132, %154 : index
              %156 = memref.load %weight[%155, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %157 = memref.load %acc_1[%154, %vl_4] : memref<5x32xf32>
              %158 = arith.mulf %156, %138 : f32
              %159 = arith.addf %157, %158 : f32
              memref.store %159, %acc_1[%154, %vl_4] : memref<5x32xf32>
              %160 = arith.constant 4 : index
              %161 = arith.addi %132, %160 : index
              %162 = memref.load %weight[%161, %vic_1, %vkh_1, %vkw_1] : memref<16x3x3x3xf32>
              %163 = memref.load %acc_1[%160, %vl_4] : memref<5x32xf32>
              %164 = arith.mulf %162, %138 : f32
              %165 = arith.addf %163, %164 : f32
              memref.store %165, %acc_1[%160, %vl_4] : memref<5x32xf32>
            }
          }
        }
      }
    }
    kernel.for %l_5 = 0 to 32 vectorized {
      kernel.block "conv2d_store" (%vt_5 = spatial %t_1, %vl_5 = spatial %l_5) {
        %166 = arith.constant 0 : index
        %167 = arith.constant 14 : index
        %168 = arith.divsi %vt_5, %167 : index
        %169 = arith.constant 7 : index
        %170 = arith.divsi %vt_5, %169 : index
        %171 = arith.constant 2 : index
        %172 = arith.remsi %170, %171 : index
        %173 = arith.remsi %vt_5, %169 : index
        %174 = arith.constant 5 : index
        %175 = arith.muli %172, %174 : index
        %176 = arith.constant 6 : index
        %177 = arith.addi %175, %176 : index
        %178 = arith.constant 32 : index
        %179 = arith.muli %173, %178 : index
        %180 = arith.addi %179, %vl_5 : index
        %181 = memref.load %acc_1[%166, %vl_5] : memref<5x32xf32>
        %182 = memref.load %rhs[%177, %166, %166] : memref<16x1x1xf32>
        %183 = arith.addf %181, %182 : f32
        %184 = arith.constant 0.000000e+00 : f32
        %185 = arith.maximumf %183, %184 : f32
        memref.store %185, %out[%166, %177, %168, %180] : memref<1x16x224x224xf32>
        %186 = arith.constant 1 : index
        %187 = memref.load %acc_1[%186, %vl_5] : memref<5x32xf32>
        %188 = arith.addi %177, %186 : index
        %189 = memref.load %rhs[%188, %166, %166] : memref<16x1x1xf32>
        %190 = arith.addf %187, %189 : f32
        %191 = arith.maximumf %190, %184 : f32
        memref.store %191, %out[%166, %188, %168, %180] : memref<1x16x224x224xf32>
        %192 = memref.load %acc_1[%171, %vl_5] : memref<5x32xf32>
        %193 = arith.addi %177, %171 : index
        %194 = memref.load %rhs[%193, %166, %166] : memref<16x1x1xf32>
        %195 = arith.addf %192, %194 : f32
        %196 = arith.maximumf %195, %184 : f32
        memref.store %196, %out[%166, %193, %168, %180] : memref<1x16x224x224xf32>
        %197 = arith.constant 3 : index
        %198 = memref.load %acc_1[%197, %vl_5] : memref<5x32xf32>
        %199 = arith.addi %177, %197 : index
        %200 = memref.load %rhs[%199, %166, %166] : memref<16x1x1xf32>
        %201 = arith.addf %198, %200 : f32
        %202 = arith.maximumf %201, %184 : f32
        memref.store %202, %out[%166, %199, %168, %180] : memref<1x16x224x224xf32>
        %203 = arith.constant 4 : index
        %204 = memref.load %acc_1[%203, %vl_5] : memref<5x32xf32>
        %205 = arith.addi %177, %203 : index
        %206 = memref.load %rhs[%205, %166, %166] : memref<16x1x1xf32>
        %207 = arith.addf %204, %206 : f32
        %208 = arith.maximumf %207, %184 : f32
        memref.store %208, %out[%166, %205, %168, %180] : memref<1x16x224x224xf32>
      }
    }
    memref.dealloc %acc_1 : memref<5x32xf32>
  }
  memref.dealloc %pad : memref<1x3x226x226xf32>
  func.return
}
