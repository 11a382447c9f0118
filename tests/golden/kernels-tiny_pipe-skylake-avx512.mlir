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
  kernel.for %pt = 0 to 4 {
    %acc = memref.alloc() : memref<13x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %18 = arith.constant 0.000000e+00 : f32
        %19 = arith.constant 0 : index
        memref.store %18, %acc[%19, %vl] : memref<13x16xf32>
        %20 = arith.constant 1 : index
        memref.store %18, %acc[%20, %vl] : memref<13x16xf32>
        %21 = arith.constant 2 : index
        memref.store %18, %acc[%21, %vl] : memref<13x16xf32>
        %22 = arith.constant 3 : index
        memref.store %18, %acc[%22, %vl] : memref<13x16xf32>
        %23 = arith.constant 4 : index
        memref.store %18, %acc[%23, %vl] : memref<13x16xf32>
        %24 = arith.constant 5 : index
        memref.store %18, %acc[%24, %vl] : memref<13x16xf32>
        %25 = arith.constant 6 : index
        memref.store %18, %acc[%25, %vl] : memref<13x16xf32>
        %26 = arith.constant 7 : index
        memref.store %18, %acc[%26, %vl] : memref<13x16xf32>
        %27 = arith.constant 8 : index
        memref.store %18, %acc[%27, %vl] : memref<13x16xf32>
        %28 = arith.constant 9 : index
        memref.store %18, %acc[%28, %vl] : memref<13x16xf32>
        %29 = arith.constant 10 : index
        memref.store %18, %acc[%29, %vl] : memref<13x16xf32>
        %30 = arith.constant 11 : index
        memref.store %18, %acc[%30, %vl] : memref<13x16xf32>
        %31 = arith.constant 12 : index
        memref.store %18, %acc[%31, %vl] : memref<13x16xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vpt_1 = spatial %pt, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %32 = arith.constant 0 : index
              %33 = arith.constant 13 : index
              %34 = arith.muli %vpt_1, %33 : index
              %35 = memref.load %weight[%32, %vic, %vkh, %vkw, %vl_1] : memref<1x3x3x3x16xf32>
              %36 = arith.constant 8 : index
              %37 = arith.divsi %34, %36 : index
              %38 = arith.remsi %34, %36 : index
              %39 = arith.addi %37, %vkh : index
              %40 = arith.addi %38, %vkw : index
              %41 = memref.load %pad[%32, %vic, %39, %40] : memref<1x3x10x10xf32>
              %42 = memref.load %acc[%32, %vl_1] : memref<13x16xf32>
              %43 = arith.mulf %41, %35 : f32
              %44 = arith.addf %42, %43 : f32
              memref.store %44, %acc[%32, %vl_1] : memref<13x16xf32>
              %45 = arith.constant 1 : index
              %46 = arith.addi %34, %45 : index
              %47 = arith.divsi %46, %36 : index
              %48 = arith.remsi %46, %36 : index
              %49 = arith.addi %47, %vkh : index
              %50 = arith.addi %48, %vkw : index
              %51 = memref.load %pad[%32, %vic, %49, %50] : memref<1x3x10x10xf32>
              %52 = memref.load %acc[%45, %vl_1] : memref<13x16xf32>
              %53 = arith.mulf %51, %35 : f32
              %54 = arith.addf %52, %53 : f32
              memref.store %54, %acc[%45, %vl_1] : memref<13x16xf32>
              %55 = arith.constant 2 : index
              %56 = arith.addi %34, %55 : index
              %57 = arith.divsi %56, %36 : index
              %58 = arith.remsi %56, %36 : index
              %59 = arith.addi %57, %vkh : index
              %60 = arith.addi %58, %vkw : index
              %61 = memref.load %pad[%32, %vic, %59, %60] : memref<1x3x10x10xf32>
              %62 = memref.load %acc[%55, %vl_1] : memref<13x16xf32>
              %63 = arith.mulf %61, %35 : f32
              %64 = arith.addf %62, %63 : f32
              memref.store %64, %acc[%55, %vl_1] : memref<13x16xf32>
              %65 = arith.constant 3 : index
              %66 = arith.addi %34, %65 : index
              %67 = arith.divsi %66, %36 : index
              %68 = arith.remsi %66, %36 : index
              %69 = arith.addi %67, %vkh : index
              %70 = arith.addi %68, %vkw : index
              %71 = memref.load %pad[%32, %vic, %69, %70] : memref<1x3x10x10xf32>
              %72 = memref.load %acc[%65, %vl_1] : memref<13x16xf32>
              %73 = arith.mulf %71, %35 : f32
              %74 = arith.addf %72, %73 : f32
              memref.store %74, %acc[%65, %vl_1] : memref<13x16xf32>
              %75 = arith.constant 4 : index
              %76 = arith.addi %34, %75 : index
              %77 = arith.divsi %76, %36 : index
              %78 = arith.remsi %76, %36 : index
              %79 = arith.addi %77, %vkh : index
              %80 = arith.addi %78, %vkw : index
              %81 = memref.load %pad[%32, %vic, %79, %80] : memref<1x3x10x10xf32>
              %82 = memref.load %acc[%75, %vl_1] : memref<13x16xf32>
              %83 = arith.mulf %81, %35 : f32
              %84 = arith.addf %82, %83 : f32
              memref.store %84, %acc[%75, %vl_1] : memref<13x16xf32>
              %85 = arith.constant 5 : index
              %86 = arith.addi %34, %85 : index
              %87 = arith.divsi %86, %36 : index
              %88 = arith.remsi %86, %36 : index
              %89 = arith.addi %87, %vkh : index
              %90 = arith.addi %88, %vkw : index
              %91 = memref.load %pad[%32, %vic, %89, %90] : memref<1x3x10x10xf32>
              %92 = memref.load %acc[%85, %vl_1] : memref<13x16xf32>
              %93 = arith.mulf %91, %35 : f32
              %94 = arith.addf %92, %93 : f32
              memref.store %94, %acc[%85, %vl_1] : memref<13x16xf32>
              %95 = arith.constant 6 : index
              %96 = arith.addi %34, %95 : index
              %97 = arith.divsi %96, %36 : index
              %98 = arith.remsi %96, %36 : index
              %99 = arith.addi %97, %vkh : index
              %100 = arith.addi %98, %vkw : index
              %101 = memref.load %pad[%32, %vic, %99, %100] : memref<1x3x10x10xf32>
              %102 = memref.load %acc[%95, %vl_1] : memref<13x16xf32>
              %103 = arith.mulf %101, %35 : f32
              %104 = arith.addf %102, %103 : f32
              memref.store %104, %acc[%95, %vl_1] : memref<13x16xf32>
              %105 = arith.constant 7 : index
              %106 = arith.addi %34, %105 : index
              %107 = arith.divsi %106, %36 : index
              %108 = arith.remsi %106, %36 : index
              %109 = arith.addi %107, %vkh : index
              %110 = arith.addi %108, %vkw : index
              %111 = memref.load %pad[%32, %vic, %109, %110] : memref<1x3x10x10xf32>
              %112 = memref.load %acc[%105, %vl_1] : memref<13x16xf32>
              %113 = arith.mulf %111, %35 : f32
              %114 = arith.addf %112, %113 : f32
              memref.store %114, %acc[%105, %vl_1] : memref<13x16xf32>
              %115 = arith.addi %34, %36 : index
              %116 = arith.divsi %115, %36 : index
              %117 = arith.remsi %115, %36 : index
              %118 = arith.addi %116, %vkh : index
              %119 = arith.addi %117, %vkw : index
              %120 = memref.load %pad[%32, %vic, %118, %119] : memref<1x3x10x10xf32>
              %121 = memref.load %acc[%36, %vl_1] : memref<13x16xf32>
              %122 = arith.mulf %120, %35 : f32
              %123 = arith.addf %121, %122 : f32
              memref.store %123, %acc[%36, %vl_1] : memref<13x16xf32>
              %124 = arith.constant 9 : index
              %125 = arith.addi %34, %124 : index
              %126 = arith.divsi %125, %36 : index
              %127 = arith.remsi %125, %36 : index
              %128 = arith.addi %126, %vkh : index
              %129 = arith.addi %127, %vkw : index
              %130 = memref.load %pad[%32, %vic, %128, %129] : memref<1x3x10x10xf32>
              %131 = memref.load %acc[%124, %vl_1] : memref<13x16xf32>
              %132 = arith.mulf %130, %35 : f32
              %133 = arith.addf %131, %132 : f32
              memref.store %133, %acc[%124, %vl_1] : memref<13x16xf32>
              %134 = arith.constant 10 : index
              %135 = arith.addi %34, %134 : index
              %136 = arith.divsi %135, %36 : index
              %137 = arith.remsi %135, %36 : index
              %138 = arith.addi %136, %vkh : index
              %139 = arith.addi %137, %vkw : index
              %140 = memref.load %pad[%32, %vic, %138, %139] : memref<1x3x10x10xf32>
              %141 = memref.load %acc[%134, %vl_1] : memref<13x16xf32>
              %142 = arith.mulf %140, %35 : f32
              %143 = arith.addf %141, %142 : f32
              memref.store %143, %acc[%134, %vl_1] : memref<13x16xf32>
              %144 = arith.constant 11 : index
              %145 = arith.addi %34, %144 : index
              %146 = arith.divsi %145, %36 : index
              %147 = arith.remsi %145, %36 : index
              %148 = arith.addi %146, %vkh : index
              %149 = arith.addi %147, %vkw : index
              %150 = memref.load %pad[%32, %vic, %148, %149] : memref<1x3x10x10xf32>
              %151 = memref.load %acc[%144, %vl_1] : memref<13x16xf32>
              %152 = arith.mulf %150, %35 : f32
              %153 = arith.addf %151, %152 : f32
              memref.store %153, %acc[%144, %vl_1] : memref<13x16xf32>
              %154 = arith.constant 12 : index
              %155 = arith.addi %34, %154 : index
              %156 = arith.divsi %155, %36 : index
              %157 = arith.remsi %155, %36 : index
              %158 = arith.addi %156, %vkh : index
              %159 = arith.addi %157, %vkw : index
              %160 = memref.load %pad[%32, %vic, %158, %159] : memref<1x3x10x10xf32>
              %161 = memref.load %acc[%154, %vl_1] : memref<13x16xf32>
              %162 = arith.mulf %160, %35 : f32
              %163 = arith.addf %161, %162 : f32
              memref.store %163, %acc[%154, %vl_1] : memref<13x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %164 = arith.constant 0 : index
        %165 = arith.constant 13 : index
        %166 = arith.muli %vpt_2, %165 : index
        %167 = arith.constant 16 : index
        %168 = arith.muli %164, %167 : index
        %169 = arith.addi %168, %vl_2 : index
        %170 = memref.load %acc[%164, %vl_2] : memref<13x16xf32>
        %171 = arith.constant 8 : index
        %172 = arith.divsi %166, %171 : index
        %173 = arith.remsi %166, %171 : index
        %174 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %175 = arith.addf %170, %174 : f32
        %176 = arith.constant 0.000000e+00 : f32
        %177 = arith.maximumf %175, %176 : f32
        %178 = arith.constant 1024 : index
        %179 = arith.muli %164, %178 : index
        %180 = arith.constant 64 : index
        %181 = arith.muli %169, %180 : index
        %182 = arith.addi %179, %181 : index
        %183 = arith.muli %172, %171 : index
        %184 = arith.addi %182, %183 : index
        %185 = arith.addi %184, %173 : index
        memref.store %177, %out[%164, %185] : memref<1x1024xf32>
        %186 = arith.constant 1 : index
        %187 = memref.load %acc[%186, %vl_2] : memref<13x16xf32>
        %188 = arith.addi %166, %186 : index
        %189 = arith.divsi %188, %171 : index
        %190 = arith.remsi %188, %171 : index
        %191 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %192 = arith.addf %187, %191 : f32
        %193 = arith.maximumf %192, %176 : f32
        %194 = arith.muli %164, %178 : index
        %195 = arith.muli %169, %180 : index
        %196 = arith.addi %194, %195 : index
        %197 = arith.muli %189, %171 : index
        %198 = arith.addi %196, %197 : index
        %199 = arith.addi %198, %190 : index
        memref.store %193, %out[%164, %199] : memref<1x1024xf32>
        %200 = arith.constant 2 : index
        %201 = memref.load %acc[%200, %vl_2] : memref<13x16xf32>
        %202 = arith.addi %166, %200 : index
        %203 = arith.divsi %202, %171 : index
        %204 = arith.remsi %202, %171 : index
        %205 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %206 = arith.addf %201, %205 : f32
        %207 = arith.maximumf %206, %176 : f32
        %208 = arith.muli %164, %178 : index
        %209 = arith.muli %169, %180 : index
        %210 = arith.addi %208, %209 : index
        %211 = arith.muli %203, %171 : index
        %212 = arith.addi %210, %211 : index
        %213 = arith.addi %212, %204 : index
        memref.store %207, %out[%164, %213] : memref<1x1024xf32>
        %214 = arith.constant 3 : index
        %215 = memref.load %acc[%214, %vl_2] : memref<13x16xf32>
        %216 = arith.addi %166, %214 : index
        %217 = arith.divsi %216, %171 : index
        %218 = arith.remsi %216, %171 : index
        %219 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %220 = arith.addf %215, %219 : f32
        %221 = arith.maximumf %220, %176 : f32
        %222 = arith.muli %164, %178 : index
        %223 = arith.muli %169, %180 : index
        %224 = arith.addi %222, %223 : index
        %225 = arith.muli %217, %171 : index
        %226 = arith.addi %224, %225 : index
        %227 = arith.addi %226, %218 : index
        memref.store %221, %out[%164, %227] : memref<1x1024xf32>
        %228 = arith.constant 4 : index
        %229 = memref.load %acc[%228, %vl_2] : memref<13x16xf32>
        %230 = arith.addi %166, %228 : index
        %231 = arith.divsi %230, %171 : index
        %232 = arith.remsi %230, %171 : index
        %233 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %234 = arith.addf %229, %233 : f32
        %235 = arith.maximumf %234, %176 : f32
        %236 = arith.muli %164, %178 : index
        %237 = arith.muli %169, %180 : index
        %238 = arith.addi %236, %237 : index
        %239 = arith.muli %231, %171 : index
        %240 = arith.addi %238, %239 : index
        %241 = arith.addi %240, %232 : index
        memref.store %235, %out[%164, %241] : memref<1x1024xf32>
        %242 = arith.constant 5 : index
        %243 = memref.load %acc[%242, %vl_2] : memref<13x16xf32>
        %244 = arith.addi %166, %242 : index
        %245 = arith.divsi %244, %171 : index
        %246 = arith.remsi %244, %171 : index
        %247 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %248 = arith.addf %243, %247 : f32
        %249 = arith.maximumf %248, %176 : f32
        %250 = arith.muli %164, %178 : index
        %251 = arith.muli %169, %180 : index
        %252 = arith.addi %250, %251 : index
        %253 = arith.muli %245, %171 : index
        %254 = arith.addi %252, %253 : index
        %255 = arith.addi %254, %246 : index
        memref.store %249, %out[%164, %255] : memref<1x1024xf32>
        %256 = arith.constant 6 : index
        %257 = memref.load %acc[%256, %vl_2] : memref<13x16xf32>
        %258 = arith.addi %166, %256 : index
        %259 = arith.divsi %258, %171 : index
        %260 = arith.remsi %258, %171 : index
        %261 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %262 = arith.addf %257, %261 : f32
        %263 = arith.maximumf %262, %176 : f32
        %264 = arith.muli %164, %178 : index
        %265 = arith.muli %169, %180 : index
        %266 = arith.addi %264, %265 : index
        %267 = arith.muli %259, %171 : index
        %268 = arith.addi %266, %267 : index
        %269 = arith.addi %268, %260 : index
        memref.store %263, %out[%164, %269] : memref<1x1024xf32>
        %270 = arith.constant 7 : index
        %271 = memref.load %acc[%270, %vl_2] : memref<13x16xf32>
        %272 = arith.addi %166, %270 : index
        %273 = arith.divsi %272, %171 : index
        %274 = arith.remsi %272, %171 : index
        %275 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %276 = arith.addf %271, %275 : f32
        %277 = arith.maximumf %276, %176 : f32
        %278 = arith.muli %164, %178 : index
        %279 = arith.muli %169, %180 : index
        %280 = arith.addi %278, %279 : index
        %281 = arith.muli %273, %171 : index
        %282 = arith.addi %280, %281 : index
        %283 = arith.addi %282, %274 : index
        memref.store %277, %out[%164, %283] : memref<1x1024xf32>
        %284 = memref.load %acc[%171, %vl_2] : memref<13x16xf32>
        %285 = arith.addi %166, %171 : index
        %286 = arith.divsi %285, %171 : index
        %287 = arith.remsi %285, %171 : index
        %288 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %289 = arith.addf %284, %288 : f32
        %290 = arith.maximumf %289, %176 : f32
        %291 = arith.muli %164, %178 : index
        %292 = arith.muli %169, %180 : index
        %293 = arith.addi %291, %292 : index
        %294 = arith.muli %286, %171 : index
        %295 = arith.addi %293, %294 : index
        %296 = arith.addi %295, %287 : index
        memref.store %290, %out[%164, %296] : memref<1x1024xf32>
        %297 = arith.constant 9 : index
        %298 = memref.load %acc[%297, %vl_2] : memref<13x16xf32>
        %299 = arith.addi %166, %297 : index
        %300 = arith.divsi %299, %171 : index
        %301 = arith.remsi %299, %171 : index
        %302 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %303 = arith.addf %298, %302 : f32
        %304 = arith.maximumf %303, %176 : f32
        %305 = arith.muli %164, %178 : index
        %306 = arith.muli %169, %180 : index
        %307 = arith.addi %305, %306 : index
        %308 = arith.muli %300, %171 : index
        %309 = arith.addi %307, %308 : index
        %310 = arith.addi %309, %301 : index
        memref.store %304, %out[%164, %310] : memref<1x1024xf32>
        %311 = arith.constant 10 : index
        %312 = memref.load %acc[%311, %vl_2] : memref<13x16xf32>
        %313 = arith.addi %166, %311 : index
        %314 = arith.divsi %313, %171 : index
        %315 = arith.remsi %313, %171 : index
        %316 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %317 = arith.addf %312, %316 : f32
        %318 = arith.maximumf %317, %176 : f32
        %319 = arith.muli %164, %178 : index
        %320 = arith.muli %169, %180 : index
        %321 = arith.addi %319, %320 : index
        %322 = arith.muli %314, %171 : index
        %323 = arith.addi %321, %322 : index
        %324 = arith.addi %323, %315 : index
        memref.store %318, %out[%164, %324] : memref<1x1024xf32>
        %325 = arith.constant 11 : index
        %326 = memref.load %acc[%325, %vl_2] : memref<13x16xf32>
        %327 = arith.addi %166, %325 : index
        %328 = arith.divsi %327, %171 : index
        %329 = arith.remsi %327, %171 : index
        %330 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %331 = arith.addf %326, %330 : f32
        %332 = arith.maximumf %331, %176 : f32
        %333 = arith.muli %164, %178 : index
        %334 = arith.muli %169, %180 : index
        %335 = arith.addi %333, %334 : index
        %336 = arith.muli %328, %171 : index
        %337 = arith.addi %335, %336 : index
        %338 = arith.addi %337, %329 : index
        memref.store %332, %out[%164, %338] : memref<1x1024xf32>
        %339 = arith.constant 12 : index
        %340 = memref.load %acc[%339, %vl_2] : memref<13x16xf32>
        %341 = arith.addi %166, %339 : index
        %342 = arith.divsi %341, %171 : index
        %343 = arith.remsi %341, %171 : index
        %344 = memref.load %rhs[%169, %164, %164] : memref<16x1x1xf32>
        %345 = arith.addf %340, %344 : f32
        %346 = arith.maximumf %345, %176 : f32
        %347 = arith.muli %164, %178 : index
        %348 = arith.muli %169, %180 : index
        %349 = arith.addi %347, %348 : index
        %350 = arith.muli %342, %171 : index
        %351 = arith.addi %349, %350 : index
        %352 = arith.addi %351, %343 : index
        memref.store %346, %out[%164, %352] : memref<1x1024xf32>
      }
    }
    memref.dealloc %acc : memref<13x16xf32>
  }
  kernel.for %pt_1 = 0 to 1 {
    %acc_1 = memref.alloc() : memref<12x16xf32>
    kernel.for %l_3 = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt_3 = spatial %pt_1, %vl_3 = spatial %l_3) {
        %353 = arith.constant 0.000000e+00 : f32
        %354 = arith.constant 0 : index
        memref.store %353, %acc_1[%354, %vl_3] : memref<12x16xf32>
        %355 = arith.constant 1 : index
        memref.store %353, %acc_1[%355, %vl_3] : memref<12x16xf32>
        %356 = arith.constant 2 : index
        memref.store %353, %acc_1[%356, %vl_3] : memref<12x16xf32>
        %357 = arith.constant 3 : index
        memref.store %353, %acc_1[%357, %vl_3] : memref<12x16xf32>
        %358 = arith.constant 4 : index
        memref.store %353, %acc_1[%358, %vl_3] : memref<12x16xf32>
        %359 = arith.constant 5 : index
        memref.store %353, %acc_1[%359, %vl_3] : memref<12x16xf32>
        %360 = arith.constant 6 : index
        memref.store %353, %acc_1[%360, %vl_3] : memref<12x16xf32>
        %361 = arith.constant 7 : index
        memref.store %353, %acc_1[%361, %vl_3] : memref<12x16xf32>
        %362 = arith.constant 8 : index
        memref.store %353, %acc_1[%362, %vl_3] : memref<12x16xf32>
        %363 = arith.constant 9 : index
        memref.store %353, %acc_1[%363, %vl_3] : memref<12x16xf32>
        %364 = arith.constant 10 : index
        memref.store %353, %acc_1[%364, %vl_3] : memref<12x16xf32>
        %365 = arith.constant 11 : index
        memref.store %353, %acc_1[%365, %vl_3] : memref<12x16xf32>
      }
    }
    kernel.for %ic_1 = 0 to 3 {
      kernel.for %kh_1 = 0 to 3 {
        kernel.for %kw_1 = 0 to 3 unrolled {
          kernel.for %l_4 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vpt_4 = spatial %pt_1, %vic_1 = reduce %ic_1, %vkh_1 = reduce %kh_1, %vkw_1 = reduce %kw_1, %vl_4 = spatial %l_4) {
              %366 = arith.constant 0 : index
              %367 = arith.constant 12 : index
              %368 = arith.muli %366, %367 : index
              %369 = arith.constant 52 : index
              %370 = arith.addi %368, %369 : index
              %371 = memref.load %weight[%366, %vic_1, %vkh_1, %vkw_1, %vl_4] : memref<1x3x3x3x16xf32>
              %372 = arith.constant 8 : index
              %373 = arith.divsi %370, %372 : index
              %374 = arith.remsi %370, %372 : index
              %375 = arith.addi %373, %vkh_1 : index
              %376 = arith.addi %374, %vkw_1 : index
              %377 = memref.load %pad[%366, %vic_1, %375, %376] : memref<1x3x10x10xf32>
              %378 = memref.load %acc_1[%366, %vl_4] : memref<12x16xf32>
              %379 = arith.mulf %377, %371 : f32
              %380 = arith.addf %378, %379 : f32
              memref.store %380, %acc_1[%366, %vl_4] : memref<12x16xf32>
              %381 = arith.constant 1 : index
              %382 = arith.addi %370, %381 : index
              %383 = arith.divsi %382, %372 : index
              %384 = arith.remsi %382, %372 : index
              %385 = arith.addi %383, %vkh_1 : index
              %386 = arith.addi %384, %vkw_1 : index
              %387 = memref.load %pad[%366, %vic_1, %385, %386] : memref<1x3x10x10xf32>
              %388 = memref.load %acc_1[%381, %vl_4] : memref<12x16xf32>
              %389 = arith.mulf %387, %371 : f32
              %390 = arith.addf %388, %389 : f32
              memref.store %390, %acc_1[%381, %vl_4] : memref<12x16xf32>
              %391 = arith.constant 2 : index
              %392 = arith.addi %370, %391 : index
              %393 = arith.divsi %392, %372 : index
              %394 = arith.remsi %392, %372 : index
              %395 = arith.addi %393, %vkh_1 : index
              %396 = arith.addi %394, %vkw_1 : index
              %397 = memref.load %pad[%366, %vic_1, %395, %396] : memref<1x3x10x10xf32>
              %398 = memref.load %acc_1[%391, %vl_4] : memref<12x16xf32>
              %399 = arith.mulf %397, %371 : f32
              %400 = arith.addf %398, %399 : f32
              memref.store %400, %acc_1[%391, %vl_4] : memref<12x16xf32>
              %401 = arith.constant 3 : index
              %402 = arith.addi %370, %401 : index
              %403 = arith.divsi %402, %372 : index
              %404 = arith.remsi %402, %372 : index
              %405 = arith.addi %403, %vkh_1 : index
              %406 = arith.addi %404, %vkw_1 : index
              %407 = memref.load %pad[%366, %vic_1, %405, %406] : memref<1x3x10x10xf32>
              %408 = memref.load %acc_1[%401, %vl_4] : memref<12x16xf32>
              %409 = arith.mulf %407, %371 : f32
              %410 = arith.addf %408, %409 : f32
              memref.store %410, %acc_1[%401, %vl_4] : memref<12x16xf32>
              %411 = arith.constant 4 : index
              %412 = arith.addi %370, %411 : index
              %413 = arith.divsi %412, %372 : index
              %414 = arith.remsi %412, %372 : index
              %415 = arith.addi %413, %vkh_1 : index
              %416 = arith.addi %414, %vkw_1 : index
              %417 = memref.load %pad[%366, %vic_1, %415, %416] : memref<1x3x10x10xf32>
              %418 = memref.load %acc_1[%411, %vl_4] : memref<12x16xf32>
              %419 = arith.mulf %417, %371 : f32
              %420 = arith.addf %418, %419 : f32
              memref.store %420, %acc_1[%411, %vl_4] : memref<12x16xf32>
              %421 = arith.constant 5 : index
              %422 = arith.addi %370, %421 : index
              %423 = arith.divsi %422, %372 : index
              %424 = arith.remsi %422, %372 : index
              %425 = arith.addi %423, %vkh_1 : index
              %426 = arith.addi %424, %vkw_1 : index
              %427 = memref.load %pad[%366, %vic_1, %425, %426] : memref<1x3x10x10xf32>
              %428 = memref.load %acc_1[%421, %vl_4] : memref<12x16xf32>
              %429 = arith.mulf %427, %371 : f32
              %430 = arith.addf %428, %429 : f32
              memref.store %430, %acc_1[%421, %vl_4] : memref<12x16xf32>
              %431 = arith.constant 6 : index
              %432 = arith.addi %370, %431 : index
              %433 = arith.divsi %432, %372 : index
              %434 = arith.remsi %432, %372 : index
              %435 = arith.addi %433, %vkh_1 : index
              %436 = arith.addi %434, %vkw_1 : index
              %437 = memref.load %pad[%366, %vic_1, %435, %436] : memref<1x3x10x10xf32>
              %438 = memref.load %acc_1[%431, %vl_4] : memref<12x16xf32>
              %439 = arith.mulf %437, %371 : f32
              %440 = arith.addf %438, %439 : f32
              memref.store %440, %acc_1[%431, %vl_4] : memref<12x16xf32>
              %441 = arith.constant 7 : index
              %442 = arith.addi %370, %441 : index
              %443 = arith.divsi %442, %372 : index
              %444 = arith.remsi %442, %372 : index
              %445 = arith.addi %443, %vkh_1 : index
              %446 = arith.addi %444, %vkw_1 : index
              %447 = memref.load %pad[%366, %vic_1, %445, %446] : memref<1x3x10x10xf32>
              %448 = memref.load %acc_1[%441, %vl_4] : memref<12x16xf32>
              %449 = arith.mulf %447, %371 : f32
              %450 = arith.addf %448, %449 : f32
              memref.store %450, %acc_1[%441, %vl_4] : memref<12x16xf32>
              %451 = arith.addi %370, %372 : index
              %452 = arith.divsi %451, %372 : index
              %453 = arith.remsi %451, %372 : index
              %454 = arith.addi %452, %vkh_1 : index
              %455 = arith.addi %453, %vkw_1 : index
              %456 = memref.load %pad[%366, %vic_1, %454, %455] : memref<1x3x10x10xf32>
              %457 = memref.load %acc_1[%372, %vl_4] : memref<12x16xf32>
              %458 = arith.mulf %456, %371 : f32
              %459 = arith.addf %457, %458 : f32
              memref.store %459, %acc_1[%372, %vl_4] : memref<12x16xf32>
              %460 = arith.constant 9 : index
              %461 = arith.addi %370, %460 : index
              %462 = arith.divsi %461, %372 : index
              %463 = arith.remsi %461, %372 : index
              %464 = arith.addi %462, %vkh_1 : index
              %465 = arith.addi %463, %vkw_1 : index
              %466 = memref.load %pad[%366, %vic_1, %464, %465] : memref<1x3x10x10xf32>
              %467 = memref.load %acc_1[%460, %vl_4] : memref<12x16xf32>
              %468 = arith.mulf %466, %371 : f32
              %469 = arith.addf %467, %468 : f32
              memref.store %469, %acc_1[%460, %vl_4] : memref<12x16xf32>
              %470 = arith.constant 10 : index
              %471 = arith.addi %370, %470 : index
              %472 = arith.divsi %471, %372 : index
              %473 = arith.remsi %471, %372 : index
              %474 = arith.addi %472, %vkh_1 : index
              %475 = arith.addi %473, %vkw_1 : index
              %476 = memref.load %pad[%366, %vic_1, %474, %475] : memref<1x3x10x10xf32>
              %477 = memref.load %acc_1[%470, %vl_4] : memref<12x16xf32>
              %478 = arith.mulf %476, %371 : f32
              %479 = arith.addf %477, %478 : f32
              memref.store %479, %acc_1[%470, %vl_4] : memref<12x16xf32>
              %480 = arith.constant 11 : index
              %481 = arith.addi %370, %480 : index
              %482 = arith.divsi %481, %372 : index
              %483 = arith.remsi %481, %372 : index
              %484 = arith.addi %482, %vkh_1 : index
              %485 = arith.addi %483, %vkw_1 : index
              %486 = memref.load %pad[%366, %vic_1, %484, %485] : memref<1x3x10x10xf32>
              %487 = memref.load %acc_1[%480, %vl_4] : memref<12x16xf32>
              %488 = arith.mulf %486, %371 : f32
              %489 = arith.addf %487, %488 : f32
              memref.store %489, %acc_1[%480, %vl_4] : memref<12x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_5 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_5 = spatial %pt_1, %vl_5 = spatial %l_5) {
        %490 = arith.constant 0 : index
        %491 = arith.constant 12 : index
        %492 = arith.muli %490, %491 : index
        %493 = arith.constant 52 : index
        %494 = arith.addi %492, %493 : index
        %495 = arith.constant 16 : index
        %496 = arith.muli %490, %495 : index
        %497 = arith.addi %496, %vl_5 : index
        %498 = memref.load %acc_1[%490, %vl_5] : memref<12x16xf32>
        %499 = arith.constant 8 : index
        %500 = arith.divsi %494, %499 : index
        %501 = arith.remsi %494, %499 : index
        %502 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %503 = arith.addf %498, %502 : f32
        %504 = arith.constant 0.000000e+00 : f32
        %505 = arith.maximumf %503, %504 : f32
        %506 = arith.constant 1024 : index
        %507 = arith.muli %490, %506 : index
        %508 = arith.constant 64 : index
        %509 = arith.muli %497, %508 : index
        %510 = arith.addi %507, %509 : index
        %511 = arith.muli %500, %499 : index
        %512 = arith.addi %510, %511 : index
        %513 = arith.addi %512, %501 : index
        memref.store %505, %out[%490, %513] : memref<1x1024xf32>
        %514 = arith.constant 1 : index
        %515 = memref.load %acc_1[%514, %vl_5] : memref<12x16xf32>
        %516 = arith.addi %494, %514 : index
        %517 = arith.divsi %516, %499 : index
        %518 = arith.remsi %516, %499 : index
        %519 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %520 = arith.addf %515, %519 : f32
        %521 = arith.maximumf %520, %504 : f32
        %522 = arith.muli %490, %506 : index
        %523 = arith.muli %497, %508 : index
        %524 = arith.addi %522, %523 : index
        %525 = arith.muli %517, %499 : index
        %526 = arith.addi %524, %525 : index
        %527 = arith.addi %526, %518 : index
        memref.store %521, %out[%490, %527] : memref<1x1024xf32>
        %528 = arith.constant 2 : index
        %529 = memref.load %acc_1[%528, %vl_5] : memref<12x16xf32>
        %530 = arith.addi %494, %528 : index
        %531 = arith.divsi %530, %499 : index
        %532 = arith.remsi %530, %499 : index
        %533 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %534 = arith.addf %529, %533 : f32
        %535 = arith.maximumf %534, %504 : f32
        %536 = arith.muli %490, %506 : index
        %537 = arith.muli %497, %508 : index
        %538 = arith.addi %536, %537 : index
        %539 = arith.muli %531, %499 : index
        %540 = arith.addi %538, %539 : index
        %541 = arith.addi %540, %532 : index
        memref.store %535, %out[%490, %541] : memref<1x1024xf32>
        %542 = arith.constant 3 : index
        %543 = memref.load %acc_1[%542, %vl_5] : memref<12x16xf32>
        %544 = arith.addi %494, %542 : index
        %545 = arith.divsi %544, %499 : index
        %546 = arith.remsi %544, %499 : index
        %547 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %548 = arith.addf %543, %547 : f32
        %549 = arith.maximumf %548, %504 : f32
        %550 = arith.muli %490, %506 : index
        %551 = arith.muli %497, %508 : index
        %552 = arith.addi %550, %551 : index
        %553 = arith.muli %545, %499 : index
        %554 = arith.addi %552, %553 : index
        %555 = arith.addi %554, %546 : index
        memref.store %549, %out[%490, %555] : memref<1x1024xf32>
        %556 = arith.constant 4 : index
        %557 = memref.load %acc_1[%556, %vl_5] : memref<12x16xf32>
        %558 = arith.addi %494, %556 : index
        %559 = arith.divsi %558, %499 : index
        %560 = arith.remsi %558, %499 : index
        %561 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %562 = arith.addf %557, %561 : f32
        %563 = arith.maximumf %562, %504 : f32
        %564 = arith.muli %490, %506 : index
        %565 = arith.muli %497, %508 : index
        %566 = arith.addi %564, %565 : index
        %567 = arith.muli %559, %499 : index
        %568 = arith.addi %566, %567 : index
        %569 = arith.addi %568, %560 : index
        memref.store %563, %out[%490, %569] : memref<1x1024xf32>
        %570 = arith.constant 5 : index
        %571 = memref.load %acc_1[%570, %vl_5] : memref<12x16xf32>
        %572 = arith.addi %494, %570 : index
        %573 = arith.divsi %572, %499 : index
        %574 = arith.remsi %572, %499 : index
        %575 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %576 = arith.addf %571, %575 : f32
        %577 = arith.maximumf %576, %504 : f32
        %578 = arith.muli %490, %506 : index
        %579 = arith.muli %497, %508 : index
        %580 = arith.addi %578, %579 : index
        %581 = arith.muli %573, %499 : index
        %582 = arith.addi %580, %581 : index
        %583 = arith.addi %582, %574 : index
        memref.store %577, %out[%490, %583] : memref<1x1024xf32>
        %584 = arith.constant 6 : index
        %585 = memref.load %acc_1[%584, %vl_5] : memref<12x16xf32>
        %586 = arith.addi %494, %584 : index
        %587 = arith.divsi %586, %499 : index
        %588 = arith.remsi %586, %499 : index
        %589 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %590 = arith.addf %585, %589 : f32
        %591 = arith.maximumf %590, %504 : f32
        %592 = arith.muli %490, %506 : index
        %593 = arith.muli %497, %508 : index
        %594 = arith.addi %592, %593 : index
        %595 = arith.muli %587, %499 : index
        %596 = arith.addi %594, %595 : index
        %597 = arith.addi %596, %588 : index
        memref.store %591, %out[%490, %597] : memref<1x1024xf32>
        %598 = arith.constant 7 : index
        %599 = memref.load %acc_1[%598, %vl_5] : memref<12x16xf32>
        %600 = arith.addi %494, %598 : index
        %601 = arith.divsi %600, %499 : index
        %602 = arith.remsi %600, %499 : index
        %603 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %604 = arith.addf %599, %603 : f32
        %605 = arith.maximumf %604, %504 : f32
        %606 = arith.muli %490, %506 : index
        %607 = arith.muli %497, %508 : index
        %608 = arith.addi %606, %607 : index
        %609 = arith.muli %601, %499 : index
        %610 = arith.addi %608, %609 : index
        %611 = arith.addi %610, %602 : index
        memref.store %605, %out[%490, %611] : memref<1x1024xf32>
        %612 = memref.load %acc_1[%499, %vl_5] : memref<12x16xf32>
        %613 = arith.addi %494, %499 : index
        %614 = arith.divsi %613, %499 : index
        %615 = arith.remsi %613, %499 : index
        %616 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %617 = arith.addf %612, %616 : f32
        %618 = arith.maximumf %617, %504 : f32
        %619 = arith.muli %490, %506 : index
        %620 = arith.muli %497, %508 : index
        %621 = arith.addi %619, %620 : index
        %622 = arith.muli %614, %499 : index
        %623 = arith.addi %621, %622 : index
        %624 = arith.addi %623, %615 : index
        memref.store %618, %out[%490, %624] : memref<1x1024xf32>
        %625 = arith.constant 9 : index
        %626 = memref.load %acc_1[%625, %vl_5] : memref<12x16xf32>
        %627 = arith.addi %494, %625 : index
        %628 = arith.divsi %627, %499 : index
        %629 = arith.remsi %627, %499 : index
        %630 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %631 = arith.addf %626, %630 : f32
        %632 = arith.maximumf %631, %504 : f32
        %633 = arith.muli %490, %506 : index
        %634 = arith.muli %497, %508 : index
        %635 = arith.addi %633, %634 : index
        %636 = arith.muli %628, %499 : index
        %637 = arith.addi %635, %636 : index
        %638 = arith.addi %637, %629 : index
        memref.store %632, %out[%490, %638] : memref<1x1024xf32>
        %639 = arith.constant 10 : index
        %640 = memref.load %acc_1[%639, %vl_5] : memref<12x16xf32>
        %641 = arith.addi %494, %639 : index
        %642 = arith.divsi %641, %499 : index
        %643 = arith.remsi %641, %499 : index
        %644 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %645 = arith.addf %640, %644 : f32
        %646 = arith.maximumf %645, %504 : f32
        %647 = arith.muli %490, %506 : index
        %648 = arith.muli %497, %508 : index
        %649 = arith.addi %647, %648 : index
        %650 = arith.muli %642, %499 : index
        %651 = arith.addi %649, %650 : index
        %652 = arith.addi %651, %643 : index
        memref.store %646, %out[%490, %652] : memref<1x1024xf32>
        %653 = arith.constant 11 : index
        %654 = memref.load %acc_1[%653, %vl_5] : memref<12x16xf32>
        %655 = arith.addi %494, %653 : index
        %656 = arith.divsi %655, %499 : index
        %657 = arith.remsi %655, %499 : index
        %658 = memref.load %rhs[%497, %490, %490] : memref<16x1x1xf32>
        %659 = arith.addf %654, %658 : f32
        %660 = arith.maximumf %659, %504 : f32
        %661 = arith.muli %490, %506 : index
        %662 = arith.muli %497, %508 : index
        %663 = arith.addi %661, %662 : index
        %664 = arith.muli %656, %499 : index
        %665 = arith.addi %663, %664 : index
        %666 = arith.addi %665, %657 : index
        memref.store %660, %out[%490, %666] : memref<1x1024xf32>
      }
    }
    memref.dealloc %acc_1 : memref<12x16xf32>
  }
  memref.dealloc %pad : memref<1x3x10x10xf32>
  func.return
}
func.func @dense(%data: memref<1x1024xf32>, %weight: memref<1x1024x128xf32>, %out: memref<1x1xf32>) attributes {kernel.kernel} {
  kernel.for %pt = 0 to 1 {
    %acc = memref.alloc() : memref<1x128xf32>
    kernel.for %l = 0 to 128 vectorized {
      kernel.block "dense_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %0 = arith.constant 0.000000e+00 : f32
        %1 = arith.constant 0 : index
        memref.store %0, %acc[%1, %vl] : memref<1x128xf32>
      }
    }
    kernel.for %k = 0 to 1024 {
      kernel.for %l_1 = 0 to 128 vectorized {
        kernel.block "dense" (%vpt_1 = spatial %pt, %vk = reduce %k, %vl_1 = spatial %l_1) {
          %2 = arith.constant 0 : index
          %3 = memref.load %weight[%2, %vk, %vl_1] : memref<1x1024x128xf32>
          %4 = memref.load %data[%2, %vk] : memref<1x1024xf32>
          %5 = memref.load %acc[%2, %vl_1] : memref<1x128xf32>
          %6 = arith.mulf %4, %3 : f32
          %7 = arith.addf %5, %6 : f32
          memref.store %7, %acc[%2, %vl_1] : memref<1x128xf32>
        }
      }
    }
    kernel.for %l_2 = 0 to 1 vectorized {
      kernel.block "dense_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %8 = arith.constant 0 : index
        %9 = arith.constant 128 : index
        %10 = arith.muli %8, %9 : index
        %11 = arith.addi %10, %vl_2 : index
        %12 = memref.load %acc[%8, %vl_2] : memref<1x128xf32>
        memref.store %12, %out[%8, %11] : memref<1x1xf32>
      }
    }
    memref.dealloc %acc : memref<1x128xf32>
  }
  func.return
}
