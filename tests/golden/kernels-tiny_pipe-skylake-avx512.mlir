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
  kernel.for %pt = 0 to 4 {
    %acc = memref.alloc() : memref<13x16xf32>
    kernel.for %l = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt = spatial %pt, %vl = spatial %l) {
        %8 = arith.constant 0.000000e+00 : f32
        %9 = arith.constant 0 : index
        memref.store %8, %acc[%9, %vl] : memref<13x16xf32>
        %10 = arith.constant 1 : index
        memref.store %8, %acc[%10, %vl] : memref<13x16xf32>
        %11 = arith.constant 2 : index
        memref.store %8, %acc[%11, %vl] : memref<13x16xf32>
        %12 = arith.constant 3 : index
        memref.store %8, %acc[%12, %vl] : memref<13x16xf32>
        %13 = arith.constant 4 : index
        memref.store %8, %acc[%13, %vl] : memref<13x16xf32>
        %14 = arith.constant 5 : index
        memref.store %8, %acc[%14, %vl] : memref<13x16xf32>
        %15 = arith.constant 6 : index
        memref.store %8, %acc[%15, %vl] : memref<13x16xf32>
        %16 = arith.constant 7 : index
        memref.store %8, %acc[%16, %vl] : memref<13x16xf32>
        %17 = arith.constant 8 : index
        memref.store %8, %acc[%17, %vl] : memref<13x16xf32>
        %18 = arith.constant 9 : index
        memref.store %8, %acc[%18, %vl] : memref<13x16xf32>
        %19 = arith.constant 10 : index
        memref.store %8, %acc[%19, %vl] : memref<13x16xf32>
        %20 = arith.constant 11 : index
        memref.store %8, %acc[%20, %vl] : memref<13x16xf32>
        %21 = arith.constant 12 : index
        memref.store %8, %acc[%21, %vl] : memref<13x16xf32>
      }
    }
    kernel.for %ic = 0 to 3 {
      kernel.for %kh = 0 to 3 {
        kernel.for %kw = 0 to 3 unrolled {
          kernel.for %l_1 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vpt_1 = spatial %pt, %vic = reduce %ic, %vkh = reduce %kh, %vkw = reduce %kw, %vl_1 = spatial %l_1) {
              %22 = arith.constant 0 : index
              %23 = arith.constant 13 : index
              %24 = arith.muli %vpt_1, %23 : index
              %25 = memref.load %weight[%22, %vic, %vkh, %vkw, %vl_1] : memref<1x3x3x3x16xf32>
              %26 = arith.constant 8 : index
              %27 = arith.divsi %24, %26 : index
              %28 = arith.remsi %24, %26 : index
              %29 = arith.addi %27, %vkh : index
              %30 = arith.addi %28, %vkw : index
              %31 = memref.load %pad[%22, %vic, %29, %30] : memref<1x3x10x10xf32>
              %32 = memref.load %acc[%22, %vl_1] : memref<13x16xf32>
              %33 = arith.mulf %31, %25 : f32
              %34 = arith.addf %32, %33 : f32
              memref.store %34, %acc[%22, %vl_1] : memref<13x16xf32>
              %35 = arith.constant 1 : index
              %36 = arith.addi %24, %35 : index
              %37 = arith.divsi %36, %26 : index
              %38 = arith.remsi %36, %26 : index
              %39 = arith.addi %37, %vkh : index
              %40 = arith.addi %38, %vkw : index
              %41 = memref.load %pad[%22, %vic, %39, %40] : memref<1x3x10x10xf32>
              %42 = memref.load %acc[%35, %vl_1] : memref<13x16xf32>
              %43 = arith.mulf %41, %25 : f32
              %44 = arith.addf %42, %43 : f32
              memref.store %44, %acc[%35, %vl_1] : memref<13x16xf32>
              %45 = arith.constant 2 : index
              %46 = arith.addi %24, %45 : index
              %47 = arith.divsi %46, %26 : index
              %48 = arith.remsi %46, %26 : index
              %49 = arith.addi %47, %vkh : index
              %50 = arith.addi %48, %vkw : index
              %51 = memref.load %pad[%22, %vic, %49, %50] : memref<1x3x10x10xf32>
              %52 = memref.load %acc[%45, %vl_1] : memref<13x16xf32>
              %53 = arith.mulf %51, %25 : f32
              %54 = arith.addf %52, %53 : f32
              memref.store %54, %acc[%45, %vl_1] : memref<13x16xf32>
              %55 = arith.constant 3 : index
              %56 = arith.addi %24, %55 : index
              %57 = arith.divsi %56, %26 : index
              %58 = arith.remsi %56, %26 : index
              %59 = arith.addi %57, %vkh : index
              %60 = arith.addi %58, %vkw : index
              %61 = memref.load %pad[%22, %vic, %59, %60] : memref<1x3x10x10xf32>
              %62 = memref.load %acc[%55, %vl_1] : memref<13x16xf32>
              %63 = arith.mulf %61, %25 : f32
              %64 = arith.addf %62, %63 : f32
              memref.store %64, %acc[%55, %vl_1] : memref<13x16xf32>
              %65 = arith.constant 4 : index
              %66 = arith.addi %24, %65 : index
              %67 = arith.divsi %66, %26 : index
              %68 = arith.remsi %66, %26 : index
              %69 = arith.addi %67, %vkh : index
              %70 = arith.addi %68, %vkw : index
              %71 = memref.load %pad[%22, %vic, %69, %70] : memref<1x3x10x10xf32>
              %72 = memref.load %acc[%65, %vl_1] : memref<13x16xf32>
              %73 = arith.mulf %71, %25 : f32
              %74 = arith.addf %72, %73 : f32
              memref.store %74, %acc[%65, %vl_1] : memref<13x16xf32>
              %75 = arith.constant 5 : index
              %76 = arith.addi %24, %75 : index
              %77 = arith.divsi %76, %26 : index
              %78 = arith.remsi %76, %26 : index
              %79 = arith.addi %77, %vkh : index
              %80 = arith.addi %78, %vkw : index
              %81 = memref.load %pad[%22, %vic, %79, %80] : memref<1x3x10x10xf32>
              %82 = memref.load %acc[%75, %vl_1] : memref<13x16xf32>
              %83 = arith.mulf %81, %25 : f32
              %84 = arith.addf %82, %83 : f32
              memref.store %84, %acc[%75, %vl_1] : memref<13x16xf32>
              %85 = arith.constant 6 : index
              %86 = arith.addi %24, %85 : index
              %87 = arith.divsi %86, %26 : index
              %88 = arith.remsi %86, %26 : index
              %89 = arith.addi %87, %vkh : index
              %90 = arith.addi %88, %vkw : index
              %91 = memref.load %pad[%22, %vic, %89, %90] : memref<1x3x10x10xf32>
              %92 = memref.load %acc[%85, %vl_1] : memref<13x16xf32>
              %93 = arith.mulf %91, %25 : f32
              %94 = arith.addf %92, %93 : f32
              memref.store %94, %acc[%85, %vl_1] : memref<13x16xf32>
              %95 = arith.constant 7 : index
              %96 = arith.addi %24, %95 : index
              %97 = arith.divsi %96, %26 : index
              %98 = arith.remsi %96, %26 : index
              %99 = arith.addi %97, %vkh : index
              %100 = arith.addi %98, %vkw : index
              %101 = memref.load %pad[%22, %vic, %99, %100] : memref<1x3x10x10xf32>
              %102 = memref.load %acc[%95, %vl_1] : memref<13x16xf32>
              %103 = arith.mulf %101, %25 : f32
              %104 = arith.addf %102, %103 : f32
              memref.store %104, %acc[%95, %vl_1] : memref<13x16xf32>
              %105 = arith.addi %24, %26 : index
              %106 = arith.divsi %105, %26 : index
              %107 = arith.remsi %105, %26 : index
              %108 = arith.addi %106, %vkh : index
              %109 = arith.addi %107, %vkw : index
              %110 = memref.load %pad[%22, %vic, %108, %109] : memref<1x3x10x10xf32>
              %111 = memref.load %acc[%26, %vl_1] : memref<13x16xf32>
              %112 = arith.mulf %110, %25 : f32
              %113 = arith.addf %111, %112 : f32
              memref.store %113, %acc[%26, %vl_1] : memref<13x16xf32>
              %114 = arith.constant 9 : index
              %115 = arith.addi %24, %114 : index
              %116 = arith.divsi %115, %26 : index
              %117 = arith.remsi %115, %26 : index
              %118 = arith.addi %116, %vkh : index
              %119 = arith.addi %117, %vkw : index
              %120 = memref.load %pad[%22, %vic, %118, %119] : memref<1x3x10x10xf32>
              %121 = memref.load %acc[%114, %vl_1] : memref<13x16xf32>
              %122 = arith.mulf %120, %25 : f32
              %123 = arith.addf %121, %122 : f32
              memref.store %123, %acc[%114, %vl_1] : memref<13x16xf32>
              %124 = arith.constant 10 : index
              %125 = arith.addi %24, %124 : index
              %126 = arith.divsi %125, %26 : index
              %127 = arith.remsi %125, %26 : index
              %128 = arith.addi %126, %vkh : index
              %129 = arith.addi %127, %vkw : index
              %130 = memref.load %pad[%22, %vic, %128, %129] : memref<1x3x10x10xf32>
              %131 = memref.load %acc[%124, %vl_1] : memref<13x16xf32>
              %132 = arith.mulf %130, %25 : f32
              %133 = arith.addf %131, %132 : f32
              memref.store %133, %acc[%124, %vl_1] : memref<13x16xf32>
              %134 = arith.constant 11 : index
              %135 = arith.addi %24, %134 : index
              %136 = arith.divsi %135, %26 : index
              %137 = arith.remsi %135, %26 : index
              %138 = arith.addi %136, %vkh : index
              %139 = arith.addi %137, %vkw : index
              %140 = memref.load %pad[%22, %vic, %138, %139] : memref<1x3x10x10xf32>
              %141 = memref.load %acc[%134, %vl_1] : memref<13x16xf32>
              %142 = arith.mulf %140, %25 : f32
              %143 = arith.addf %141, %142 : f32
              memref.store %143, %acc[%134, %vl_1] : memref<13x16xf32>
              %144 = arith.constant 12 : index
              %145 = arith.addi %24, %144 : index
              %146 = arith.divsi %145, %26 : index
              %147 = arith.remsi %145, %26 : index
              %148 = arith.addi %146, %vkh : index
              %149 = arith.addi %147, %vkw : index
              %150 = memref.load %pad[%22, %vic, %148, %149] : memref<1x3x10x10xf32>
              %151 = memref.load %acc[%144, %vl_1] : memref<13x16xf32>
              %152 = arith.mulf %150, %25 : f32
              %153 = arith.addf %151, %152 : f32
              memref.store %153, %acc[%144, %vl_1] : memref<13x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_2 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_2 = spatial %pt, %vl_2 = spatial %l_2) {
        %154 = arith.constant 0 : index
        %155 = arith.constant 13 : index
        %156 = arith.muli %vpt_2, %155 : index
        %157 = arith.constant 16 : index
        %158 = arith.muli %154, %157 : index
        %159 = arith.addi %158, %vl_2 : index
        %160 = memref.load %acc[%154, %vl_2] : memref<13x16xf32>
        %161 = arith.constant 8 : index
        %162 = arith.divsi %156, %161 : index
        %163 = arith.remsi %156, %161 : index
        %164 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %165 = arith.addf %160, %164 : f32
        %166 = arith.constant 0.000000e+00 : f32
        %167 = arith.maximumf %165, %166 : f32
        %168 = arith.constant 1024 : index
        %169 = arith.muli %154, %168 : index
        %170 = arith.constant 64 : index
        %171 = arith.muli %159, %170 : index
        %172 = arith.addi %169, %171 : index
        %173 = arith.muli %162, %161 : index
        %174 = arith.addi %172, %173 : index
        %175 = arith.addi %174, %163 : index
        memref.store %167, %out[%154, %175] : memref<1x1024xf32>
        %176 = arith.constant 1 : index
        %177 = memref.load %acc[%176, %vl_2] : memref<13x16xf32>
        %178 = arith.addi %156, %176 : index
        %179 = arith.divsi %178, %161 : index
        %180 = arith.remsi %178, %161 : index
        %181 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %182 = arith.addf %177, %181 : f32
        %183 = arith.maximumf %182, %166 : f32
        %184 = arith.muli %154, %168 : index
        %185 = arith.muli %159, %170 : index
        %186 = arith.addi %184, %185 : index
        %187 = arith.muli %179, %161 : index
        %188 = arith.addi %186, %187 : index
        %189 = arith.addi %188, %180 : index
        memref.store %183, %out[%154, %189] : memref<1x1024xf32>
        %190 = arith.constant 2 : index
        %191 = memref.load %acc[%190, %vl_2] : memref<13x16xf32>
        %192 = arith.addi %156, %190 : index
        %193 = arith.divsi %192, %161 : index
        %194 = arith.remsi %192, %161 : index
        %195 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %196 = arith.addf %191, %195 : f32
        %197 = arith.maximumf %196, %166 : f32
        %198 = arith.muli %154, %168 : index
        %199 = arith.muli %159, %170 : index
        %200 = arith.addi %198, %199 : index
        %201 = arith.muli %193, %161 : index
        %202 = arith.addi %200, %201 : index
        %203 = arith.addi %202, %194 : index
        memref.store %197, %out[%154, %203] : memref<1x1024xf32>
        %204 = arith.constant 3 : index
        %205 = memref.load %acc[%204, %vl_2] : memref<13x16xf32>
        %206 = arith.addi %156, %204 : index
        %207 = arith.divsi %206, %161 : index
        %208 = arith.remsi %206, %161 : index
        %209 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %210 = arith.addf %205, %209 : f32
        %211 = arith.maximumf %210, %166 : f32
        %212 = arith.muli %154, %168 : index
        %213 = arith.muli %159, %170 : index
        %214 = arith.addi %212, %213 : index
        %215 = arith.muli %207, %161 : index
        %216 = arith.addi %214, %215 : index
        %217 = arith.addi %216, %208 : index
        memref.store %211, %out[%154, %217] : memref<1x1024xf32>
        %218 = arith.constant 4 : index
        %219 = memref.load %acc[%218, %vl_2] : memref<13x16xf32>
        %220 = arith.addi %156, %218 : index
        %221 = arith.divsi %220, %161 : index
        %222 = arith.remsi %220, %161 : index
        %223 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %224 = arith.addf %219, %223 : f32
        %225 = arith.maximumf %224, %166 : f32
        %226 = arith.muli %154, %168 : index
        %227 = arith.muli %159, %170 : index
        %228 = arith.addi %226, %227 : index
        %229 = arith.muli %221, %161 : index
        %230 = arith.addi %228, %229 : index
        %231 = arith.addi %230, %222 : index
        memref.store %225, %out[%154, %231] : memref<1x1024xf32>
        %232 = arith.constant 5 : index
        %233 = memref.load %acc[%232, %vl_2] : memref<13x16xf32>
        %234 = arith.addi %156, %232 : index
        %235 = arith.divsi %234, %161 : index
        %236 = arith.remsi %234, %161 : index
        %237 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %238 = arith.addf %233, %237 : f32
        %239 = arith.maximumf %238, %166 : f32
        %240 = arith.muli %154, %168 : index
        %241 = arith.muli %159, %170 : index
        %242 = arith.addi %240, %241 : index
        %243 = arith.muli %235, %161 : index
        %244 = arith.addi %242, %243 : index
        %245 = arith.addi %244, %236 : index
        memref.store %239, %out[%154, %245] : memref<1x1024xf32>
        %246 = arith.constant 6 : index
        %247 = memref.load %acc[%246, %vl_2] : memref<13x16xf32>
        %248 = arith.addi %156, %246 : index
        %249 = arith.divsi %248, %161 : index
        %250 = arith.remsi %248, %161 : index
        %251 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %252 = arith.addf %247, %251 : f32
        %253 = arith.maximumf %252, %166 : f32
        %254 = arith.muli %154, %168 : index
        %255 = arith.muli %159, %170 : index
        %256 = arith.addi %254, %255 : index
        %257 = arith.muli %249, %161 : index
        %258 = arith.addi %256, %257 : index
        %259 = arith.addi %258, %250 : index
        memref.store %253, %out[%154, %259] : memref<1x1024xf32>
        %260 = arith.constant 7 : index
        %261 = memref.load %acc[%260, %vl_2] : memref<13x16xf32>
        %262 = arith.addi %156, %260 : index
        %263 = arith.divsi %262, %161 : index
        %264 = arith.remsi %262, %161 : index
        %265 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %266 = arith.addf %261, %265 : f32
        %267 = arith.maximumf %266, %166 : f32
        %268 = arith.muli %154, %168 : index
        %269 = arith.muli %159, %170 : index
        %270 = arith.addi %268, %269 : index
        %271 = arith.muli %263, %161 : index
        %272 = arith.addi %270, %271 : index
        %273 = arith.addi %272, %264 : index
        memref.store %267, %out[%154, %273] : memref<1x1024xf32>
        %274 = memref.load %acc[%161, %vl_2] : memref<13x16xf32>
        %275 = arith.addi %156, %161 : index
        %276 = arith.divsi %275, %161 : index
        %277 = arith.remsi %275, %161 : index
        %278 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %279 = arith.addf %274, %278 : f32
        %280 = arith.maximumf %279, %166 : f32
        %281 = arith.muli %154, %168 : index
        %282 = arith.muli %159, %170 : index
        %283 = arith.addi %281, %282 : index
        %284 = arith.muli %276, %161 : index
        %285 = arith.addi %283, %284 : index
        %286 = arith.addi %285, %277 : index
        memref.store %280, %out[%154, %286] : memref<1x1024xf32>
        %287 = arith.constant 9 : index
        %288 = memref.load %acc[%287, %vl_2] : memref<13x16xf32>
        %289 = arith.addi %156, %287 : index
        %290 = arith.divsi %289, %161 : index
        %291 = arith.remsi %289, %161 : index
        %292 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %293 = arith.addf %288, %292 : f32
        %294 = arith.maximumf %293, %166 : f32
        %295 = arith.muli %154, %168 : index
        %296 = arith.muli %159, %170 : index
        %297 = arith.addi %295, %296 : index
        %298 = arith.muli %290, %161 : index
        %299 = arith.addi %297, %298 : index
        %300 = arith.addi %299, %291 : index
        memref.store %294, %out[%154, %300] : memref<1x1024xf32>
        %301 = arith.constant 10 : index
        %302 = memref.load %acc[%301, %vl_2] : memref<13x16xf32>
        %303 = arith.addi %156, %301 : index
        %304 = arith.divsi %303, %161 : index
        %305 = arith.remsi %303, %161 : index
        %306 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %307 = arith.addf %302, %306 : f32
        %308 = arith.maximumf %307, %166 : f32
        %309 = arith.muli %154, %168 : index
        %310 = arith.muli %159, %170 : index
        %311 = arith.addi %309, %310 : index
        %312 = arith.muli %304, %161 : index
        %313 = arith.addi %311, %312 : index
        %314 = arith.addi %313, %305 : index
        memref.store %308, %out[%154, %314] : memref<1x1024xf32>
        %315 = arith.constant 11 : index
        %316 = memref.load %acc[%315, %vl_2] : memref<13x16xf32>
        %317 = arith.addi %156, %315 : index
        %318 = arith.divsi %317, %161 : index
        %319 = arith.remsi %317, %161 : index
        %320 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %321 = arith.addf %316, %320 : f32
        %322 = arith.maximumf %321, %166 : f32
        %323 = arith.muli %154, %168 : index
        %324 = arith.muli %159, %170 : index
        %325 = arith.addi %323, %324 : index
        %326 = arith.muli %318, %161 : index
        %327 = arith.addi %325, %326 : index
        %328 = arith.addi %327, %319 : index
        memref.store %322, %out[%154, %328] : memref<1x1024xf32>
        %329 = arith.constant 12 : index
        %330 = memref.load %acc[%329, %vl_2] : memref<13x16xf32>
        %331 = arith.addi %156, %329 : index
        %332 = arith.divsi %331, %161 : index
        %333 = arith.remsi %331, %161 : index
        %334 = memref.load %rhs[%159, %154, %154] : memref<16x1x1xf32>
        %335 = arith.addf %330, %334 : f32
        %336 = arith.maximumf %335, %166 : f32
        %337 = arith.muli %154, %168 : index
        %338 = arith.muli %159, %170 : index
        %339 = arith.addi %337, %338 : index
        %340 = arith.muli %332, %161 : index
        %341 = arith.addi %339, %340 : index
        %342 = arith.addi %341, %333 : index
        memref.store %336, %out[%154, %342] : memref<1x1024xf32>
      }
    }
    memref.dealloc %acc : memref<13x16xf32>
  }
  kernel.for %pt_1 = 0 to 1 {
    %acc_1 = memref.alloc() : memref<12x16xf32>
    kernel.for %l_3 = 0 to 16 vectorized {
      kernel.block "conv2d_init" (%vpt_3 = spatial %pt_1, %vl_3 = spatial %l_3) {
        %343 = arith.constant 0.000000e+00 : f32
        %344 = arith.constant 0 : index
        memref.store %343, %acc_1[%344, %vl_3] : memref<12x16xf32>
        %345 = arith.constant 1 : index
        memref.store %343, %acc_1[%345, %vl_3] : memref<12x16xf32>
        %346 = arith.constant 2 : index
        memref.store %343, %acc_1[%346, %vl_3] : memref<12x16xf32>
        %347 = arith.constant 3 : index
        memref.store %343, %acc_1[%347, %vl_3] : memref<12x16xf32>
        %348 = arith.constant 4 : index
        memref.store %343, %acc_1[%348, %vl_3] : memref<12x16xf32>
        %349 = arith.constant 5 : index
        memref.store %343, %acc_1[%349, %vl_3] : memref<12x16xf32>
        %350 = arith.constant 6 : index
        memref.store %343, %acc_1[%350, %vl_3] : memref<12x16xf32>
        %351 = arith.constant 7 : index
        memref.store %343, %acc_1[%351, %vl_3] : memref<12x16xf32>
        %352 = arith.constant 8 : index
        memref.store %343, %acc_1[%352, %vl_3] : memref<12x16xf32>
        %353 = arith.constant 9 : index
        memref.store %343, %acc_1[%353, %vl_3] : memref<12x16xf32>
        %354 = arith.constant 10 : index
        memref.store %343, %acc_1[%354, %vl_3] : memref<12x16xf32>
        %355 = arith.constant 11 : index
        memref.store %343, %acc_1[%355, %vl_3] : memref<12x16xf32>
      }
    }
    kernel.for %ic_1 = 0 to 3 {
      kernel.for %kh_1 = 0 to 3 {
        kernel.for %kw_1 = 0 to 3 unrolled {
          kernel.for %l_4 = 0 to 16 vectorized {
            kernel.block "conv2d" (%vpt_4 = spatial %pt_1, %vic_1 = reduce %ic_1, %vkh_1 = reduce %kh_1, %vkw_1 = reduce %kw_1, %vl_4 = spatial %l_4) {
              %356 = arith.constant 0 : index
              %357 = arith.constant 12 : index
              %358 = arith.muli %356, %357 : index
              %359 = arith.constant 52 : index
              %360 = arith.addi %358, %359 : index
              %361 = memref.load %weight[%356, %vic_1, %vkh_1, %vkw_1, %vl_4] : memref<1x3x3x3x16xf32>
              %362 = arith.constant 8 : index
              %363 = arith.divsi %360, %362 : index
              %364 = arith.remsi %360, %362 : index
              %365 = arith.addi %363, %vkh_1 : index
              %366 = arith.addi %364, %vkw_1 : index
              %367 = memref.load %pad[%356, %vic_1, %365, %366] : memref<1x3x10x10xf32>
              %368 = memref.load %acc_1[%356, %vl_4] : memref<12x16xf32>
              %369 = arith.mulf %367, %361 : f32
              %370 = arith.addf %368, %369 : f32
              memref.store %370, %acc_1[%356, %vl_4] : memref<12x16xf32>
              %371 = arith.constant 1 : index
              %372 = arith.addi %360, %371 : index
              %373 = arith.divsi %372, %362 : index
              %374 = arith.remsi %372, %362 : index
              %375 = arith.addi %373, %vkh_1 : index
              %376 = arith.addi %374, %vkw_1 : index
              %377 = memref.load %pad[%356, %vic_1, %375, %376] : memref<1x3x10x10xf32>
              %378 = memref.load %acc_1[%371, %vl_4] : memref<12x16xf32>
              %379 = arith.mulf %377, %361 : f32
              %380 = arith.addf %378, %379 : f32
              memref.store %380, %acc_1[%371, %vl_4] : memref<12x16xf32>
              %381 = arith.constant 2 : index
              %382 = arith.addi %360, %381 : index
              %383 = arith.divsi %382, %362 : index
              %384 = arith.remsi %382, %362 : index
              %385 = arith.addi %383, %vkh_1 : index
              %386 = arith.addi %384, %vkw_1 : index
              %387 = memref.load %pad[%356, %vic_1, %385, %386] : memref<1x3x10x10xf32>
              %388 = memref.load %acc_1[%381, %vl_4] : memref<12x16xf32>
              %389 = arith.mulf %387, %361 : f32
              %390 = arith.addf %388, %389 : f32
              memref.store %390, %acc_1[%381, %vl_4] : memref<12x16xf32>
              %391 = arith.constant 3 : index
              %392 = arith.addi %360, %391 : index
              %393 = arith.divsi %392, %362 : index
              %394 = arith.remsi %392, %362 : index
              %395 = arith.addi %393, %vkh_1 : index
              %396 = arith.addi %394, %vkw_1 : index
              %397 = memref.load %pad[%356, %vic_1, %395, %396] : memref<1x3x10x10xf32>
              %398 = memref.load %acc_1[%391, %vl_4] : memref<12x16xf32>
              %399 = arith.mulf %397, %361 : f32
              %400 = arith.addf %398, %399 : f32
              memref.store %400, %acc_1[%391, %vl_4] : memref<12x16xf32>
              %401 = arith.constant 4 : index
              %402 = arith.addi %360, %401 : index
              %403 = arith.divsi %402, %362 : index
              %404 = arith.remsi %402, %362 : index
              %405 = arith.addi %403, %vkh_1 : index
              %406 = arith.addi %404, %vkw_1 : index
              %407 = memref.load %pad[%356, %vic_1, %405, %406] : memref<1x3x10x10xf32>
              %408 = memref.load %acc_1[%401, %vl_4] : memref<12x16xf32>
              %409 = arith.mulf %407, %361 : f32
              %410 = arith.addf %408, %409 : f32
              memref.store %410, %acc_1[%401, %vl_4] : memref<12x16xf32>
              %411 = arith.constant 5 : index
              %412 = arith.addi %360, %411 : index
              %413 = arith.divsi %412, %362 : index
              %414 = arith.remsi %412, %362 : index
              %415 = arith.addi %413, %vkh_1 : index
              %416 = arith.addi %414, %vkw_1 : index
              %417 = memref.load %pad[%356, %vic_1, %415, %416] : memref<1x3x10x10xf32>
              %418 = memref.load %acc_1[%411, %vl_4] : memref<12x16xf32>
              %419 = arith.mulf %417, %361 : f32
              %420 = arith.addf %418, %419 : f32
              memref.store %420, %acc_1[%411, %vl_4] : memref<12x16xf32>
              %421 = arith.constant 6 : index
              %422 = arith.addi %360, %421 : index
              %423 = arith.divsi %422, %362 : index
              %424 = arith.remsi %422, %362 : index
              %425 = arith.addi %423, %vkh_1 : index
              %426 = arith.addi %424, %vkw_1 : index
              %427 = memref.load %pad[%356, %vic_1, %425, %426] : memref<1x3x10x10xf32>
              %428 = memref.load %acc_1[%421, %vl_4] : memref<12x16xf32>
              %429 = arith.mulf %427, %361 : f32
              %430 = arith.addf %428, %429 : f32
              memref.store %430, %acc_1[%421, %vl_4] : memref<12x16xf32>
              %431 = arith.constant 7 : index
              %432 = arith.addi %360, %431 : index
              %433 = arith.divsi %432, %362 : index
              %434 = arith.remsi %432, %362 : index
              %435 = arith.addi %433, %vkh_1 : index
              %436 = arith.addi %434, %vkw_1 : index
              %437 = memref.load %pad[%356, %vic_1, %435, %436] : memref<1x3x10x10xf32>
              %438 = memref.load %acc_1[%431, %vl_4] : memref<12x16xf32>
              %439 = arith.mulf %437, %361 : f32
              %440 = arith.addf %438, %439 : f32
              memref.store %440, %acc_1[%431, %vl_4] : memref<12x16xf32>
              %441 = arith.addi %360, %362 : index
              %442 = arith.divsi %441, %362 : index
              %443 = arith.remsi %441, %362 : index
              %444 = arith.addi %442, %vkh_1 : index
              %445 = arith.addi %443, %vkw_1 : index
              %446 = memref.load %pad[%356, %vic_1, %444, %445] : memref<1x3x10x10xf32>
              %447 = memref.load %acc_1[%362, %vl_4] : memref<12x16xf32>
              %448 = arith.mulf %446, %361 : f32
              %449 = arith.addf %447, %448 : f32
              memref.store %449, %acc_1[%362, %vl_4] : memref<12x16xf32>
              %450 = arith.constant 9 : index
              %451 = arith.addi %360, %450 : index
              %452 = arith.divsi %451, %362 : index
              %453 = arith.remsi %451, %362 : index
              %454 = arith.addi %452, %vkh_1 : index
              %455 = arith.addi %453, %vkw_1 : index
              %456 = memref.load %pad[%356, %vic_1, %454, %455] : memref<1x3x10x10xf32>
              %457 = memref.load %acc_1[%450, %vl_4] : memref<12x16xf32>
              %458 = arith.mulf %456, %361 : f32
              %459 = arith.addf %457, %458 : f32
              memref.store %459, %acc_1[%450, %vl_4] : memref<12x16xf32>
              %460 = arith.constant 10 : index
              %461 = arith.addi %360, %460 : index
              %462 = arith.divsi %461, %362 : index
              %463 = arith.remsi %461, %362 : index
              %464 = arith.addi %462, %vkh_1 : index
              %465 = arith.addi %463, %vkw_1 : index
              %466 = memref.load %pad[%356, %vic_1, %464, %465] : memref<1x3x10x10xf32>
              %467 = memref.load %acc_1[%460, %vl_4] : memref<12x16xf32>
              %468 = arith.mulf %466, %361 : f32
              %469 = arith.addf %467, %468 : f32
              memref.store %469, %acc_1[%460, %vl_4] : memref<12x16xf32>
              %470 = arith.constant 11 : index
              %471 = arith.addi %360, %470 : index
              %472 = arith.divsi %471, %362 : index
              %473 = arith.remsi %471, %362 : index
              %474 = arith.addi %472, %vkh_1 : index
              %475 = arith.addi %473, %vkw_1 : index
              %476 = memref.load %pad[%356, %vic_1, %474, %475] : memref<1x3x10x10xf32>
              %477 = memref.load %acc_1[%470, %vl_4] : memref<12x16xf32>
              %478 = arith.mulf %476, %361 : f32
              %479 = arith.addf %477, %478 : f32
              memref.store %479, %acc_1[%470, %vl_4] : memref<12x16xf32>
            }
          }
        }
      }
    }
    kernel.for %l_5 = 0 to 16 vectorized {
      kernel.block "conv2d_store" (%vpt_5 = spatial %pt_1, %vl_5 = spatial %l_5) {
        %480 = arith.constant 0 : index
        %481 = arith.constant 12 : index
        %482 = arith.muli %480, %481 : index
        %483 = arith.constant 52 : index
        %484 = arith.addi %482, %483 : index
        %485 = arith.constant 16 : index
        %486 = arith.muli %480, %485 : index
        %487 = arith.addi %486, %vl_5 : index
        %488 = memref.load %acc_1[%480, %vl_5] : memref<12x16xf32>
        %489 = arith.constant 8 : index
        %490 = arith.divsi %484, %489 : index
        %491 = arith.remsi %484, %489 : index
        %492 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %493 = arith.addf %488, %492 : f32
        %494 = arith.constant 0.000000e+00 : f32
        %495 = arith.maximumf %493, %494 : f32
        %496 = arith.constant 1024 : index
        %497 = arith.muli %480, %496 : index
        %498 = arith.constant 64 : index
        %499 = arith.muli %487, %498 : index
        %500 = arith.addi %497, %499 : index
        %501 = arith.muli %490, %489 : index
        %502 = arith.addi %500, %501 : index
        %503 = arith.addi %502, %491 : index
        memref.store %495, %out[%480, %503] : memref<1x1024xf32>
        %504 = arith.constant 1 : index
        %505 = memref.load %acc_1[%504, %vl_5] : memref<12x16xf32>
        %506 = arith.addi %484, %504 : index
        %507 = arith.divsi %506, %489 : index
        %508 = arith.remsi %506, %489 : index
        %509 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %510 = arith.addf %505, %509 : f32
        %511 = arith.maximumf %510, %494 : f32
        %512 = arith.muli %480, %496 : index
        %513 = arith.muli %487, %498 : index
        %514 = arith.addi %512, %513 : index
        %515 = arith.muli %507, %489 : index
        %516 = arith.addi %514, %515 : index
        %517 = arith.addi %516, %508 : index
        memref.store %511, %out[%480, %517] : memref<1x1024xf32>
        %518 = arith.constant 2 : index
        %519 = memref.load %acc_1[%518, %vl_5] : memref<12x16xf32>
        %520 = arith.addi %484, %518 : index
        %521 = arith.divsi %520, %489 : index
        %522 = arith.remsi %520, %489 : index
        %523 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %524 = arith.addf %519, %523 : f32
        %525 = arith.maximumf %524, %494 : f32
        %526 = arith.muli %480, %496 : index
        %527 = arith.muli %487, %498 : index
        %528 = arith.addi %526, %527 : index
        %529 = arith.muli %521, %489 : index
        %530 = arith.addi %528, %529 : index
        %531 = arith.addi %530, %522 : index
        memref.store %525, %out[%480, %531] : memref<1x1024xf32>
        %532 = arith.constant 3 : index
        %533 = memref.load %acc_1[%532, %vl_5] : memref<12x16xf32>
        %534 = arith.addi %484, %532 : index
        %535 = arith.divsi %534, %489 : index
        %536 = arith.remsi %534, %489 : index
        %537 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %538 = arith.addf %533, %537 : f32
        %539 = arith.maximumf %538, %494 : f32
        %540 = arith.muli %480, %496 : index
        %541 = arith.muli %487, %498 : index
        %542 = arith.addi %540, %541 : index
        %543 = arith.muli %535, %489 : index
        %544 = arith.addi %542, %543 : index
        %545 = arith.addi %544, %536 : index
        memref.store %539, %out[%480, %545] : memref<1x1024xf32>
        %546 = arith.constant 4 : index
        %547 = memref.load %acc_1[%546, %vl_5] : memref<12x16xf32>
        %548 = arith.addi %484, %546 : index
        %549 = arith.divsi %548, %489 : index
        %550 = arith.remsi %548, %489 : index
        %551 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %552 = arith.addf %547, %551 : f32
        %553 = arith.maximumf %552, %494 : f32
        %554 = arith.muli %480, %496 : index
        %555 = arith.muli %487, %498 : index
        %556 = arith.addi %554, %555 : index
        %557 = arith.muli %549, %489 : index
        %558 = arith.addi %556, %557 : index
        %559 = arith.addi %558, %550 : index
        memref.store %553, %out[%480, %559] : memref<1x1024xf32>
        %560 = arith.constant 5 : index
        %561 = memref.load %acc_1[%560, %vl_5] : memref<12x16xf32>
        %562 = arith.addi %484, %560 : index
        %563 = arith.divsi %562, %489 : index
        %564 = arith.remsi %562, %489 : index
        %565 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %566 = arith.addf %561, %565 : f32
        %567 = arith.maximumf %566, %494 : f32
        %568 = arith.muli %480, %496 : index
        %569 = arith.muli %487, %498 : index
        %570 = arith.addi %568, %569 : index
        %571 = arith.muli %563, %489 : index
        %572 = arith.addi %570, %571 : index
        %573 = arith.addi %572, %564 : index
        memref.store %567, %out[%480, %573] : memref<1x1024xf32>
        %574 = arith.constant 6 : index
        %575 = memref.load %acc_1[%574, %vl_5] : memref<12x16xf32>
        %576 = arith.addi %484, %574 : index
        %577 = arith.divsi %576, %489 : index
        %578 = arith.remsi %576, %489 : index
        %579 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %580 = arith.addf %575, %579 : f32
        %581 = arith.maximumf %580, %494 : f32
        %582 = arith.muli %480, %496 : index
        %583 = arith.muli %487, %498 : index
        %584 = arith.addi %582, %583 : index
        %585 = arith.muli %577, %489 : index
        %586 = arith.addi %584, %585 : index
        %587 = arith.addi %586, %578 : index
        memref.store %581, %out[%480, %587] : memref<1x1024xf32>
        %588 = arith.constant 7 : index
        %589 = memref.load %acc_1[%588, %vl_5] : memref<12x16xf32>
        %590 = arith.addi %484, %588 : index
        %591 = arith.divsi %590, %489 : index
        %592 = arith.remsi %590, %489 : index
        %593 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %594 = arith.addf %589, %593 : f32
        %595 = arith.maximumf %594, %494 : f32
        %596 = arith.muli %480, %496 : index
        %597 = arith.muli %487, %498 : index
        %598 = arith.addi %596, %597 : index
        %599 = arith.muli %591, %489 : index
        %600 = arith.addi %598, %599 : index
        %601 = arith.addi %600, %592 : index
        memref.store %595, %out[%480, %601] : memref<1x1024xf32>
        %602 = memref.load %acc_1[%489, %vl_5] : memref<12x16xf32>
        %603 = arith.addi %484, %489 : index
        %604 = arith.divsi %603, %489 : index
        %605 = arith.remsi %603, %489 : index
        %606 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %607 = arith.addf %602, %606 : f32
        %608 = arith.maximumf %607, %494 : f32
        %609 = arith.muli %480, %496 : index
        %610 = arith.muli %487, %498 : index
        %611 = arith.addi %609, %610 : index
        %612 = arith.muli %604, %489 : index
        %613 = arith.addi %611, %612 : index
        %614 = arith.addi %613, %605 : index
        memref.store %608, %out[%480, %614] : memref<1x1024xf32>
        %615 = arith.constant 9 : index
        %616 = memref.load %acc_1[%615, %vl_5] : memref<12x16xf32>
        %617 = arith.addi %484, %615 : index
        %618 = arith.divsi %617, %489 : index
        %619 = arith.remsi %617, %489 : index
        %620 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %621 = arith.addf %616, %620 : f32
        %622 = arith.maximumf %621, %494 : f32
        %623 = arith.muli %480, %496 : index
        %624 = arith.muli %487, %498 : index
        %625 = arith.addi %623, %624 : index
        %626 = arith.muli %618, %489 : index
        %627 = arith.addi %625, %626 : index
        %628 = arith.addi %627, %619 : index
        memref.store %622, %out[%480, %628] : memref<1x1024xf32>
        %629 = arith.constant 10 : index
        %630 = memref.load %acc_1[%629, %vl_5] : memref<12x16xf32>
        %631 = arith.addi %484, %629 : index
        %632 = arith.divsi %631, %489 : index
        %633 = arith.remsi %631, %489 : index
        %634 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %635 = arith.addf %630, %634 : f32
        %636 = arith.maximumf %635, %494 : f32
        %637 = arith.muli %480, %496 : index
        %638 = arith.muli %487, %498 : index
        %639 = arith.addi %637, %638 : index
        %640 = arith.muli %632, %489 : index
        %641 = arith.addi %639, %640 : index
        %642 = arith.addi %641, %633 : index
        memref.store %636, %out[%480, %642] : memref<1x1024xf32>
        %643 = arith.constant 11 : index
        %644 = memref.load %acc_1[%643, %vl_5] : memref<12x16xf32>
        %645 = arith.addi %484, %643 : index
        %646 = arith.divsi %645, %489 : index
        %647 = arith.remsi %645, %489 : index
        %648 = memref.load %rhs[%487, %480, %480] : memref<16x1x1xf32>
        %649 = arith.addf %644, %648 : f32
        %650 = arith.maximumf %649, %494 : f32
        %651 = arith.muli %480, %496 : index
        %652 = arith.muli %487, %498 : index
        %653 = arith.addi %651, %652 : index
        %654 = arith.muli %646, %489 : index
        %655 = arith.addi %653, %654 : index
        %656 = arith.addi %655, %647 : index
        memref.store %650, %out[%480, %656] : memref<1x1024xf32>
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
