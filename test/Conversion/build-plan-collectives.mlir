// RUN: weft-opt %s --split-input-file --weft-plan-memory --weft-build-plan --verify-diagnostics | FileCheck %s

// shard.all_to_all and shard.shift as the package's all_to_all and send_recv
// records, on a 2 x 4 grid (axis 1 has 4 ranks). Every result is returned,
// so each collective has its own buffers.
//
// all_to_all along dimension 0 of [8, 16] over axis 1: 4 contiguous blocks of
// 2 rows; both buffers hold all 8 x 16 = 128 elements. Along dimension 1 of
// [1, 8, 16] the blocks are contiguous too (dimension 0 is 1).
// Over both axes (8 ranks, NCCL's order: axes increasing): axes [0, 1].
// A shift along axis 1 moves data along that axis alone, whatever grid_axes
// says: axes [1]. With rotate, an offset of 5 on 4 ranks is 1; -1 stays -1.
// CHECK-LABEL: weft_plan.step @moves_plan
// CHECK-SAME: grid = array<i64: 2, 4>
// CHECK: weft_plan.collective "all_to_all" @arg0 -> @[[A:s[0-9]+]] count 128 dtype "bf16" axes [1] stream 1 at 0
// CHECK-NOT: reduction
// CHECK: weft_plan.collective "all_to_all" @arg1 -> @{{s[0-9]+}} count 128 dtype "f32" axes [1] stream 1 at 1
// CHECK: weft_plan.collective "all_to_all" @arg0 -> @{{s[0-9]+}} count 128 dtype "bf16" axes [0, 1] stream 1 at 2
// CHECK: weft_plan.collective "send_recv" @[[A]] -> @{{s[0-9]+}} count 128 dtype "bf16" axes [1] stream 1 at 3 {rotate, shift = 1 : i64}
// CHECK: weft_plan.collective "send_recv" @arg1 -> @{{s[0-9]+}} count 128 dtype "f32" axes [1] stream 1 at 4 {shift = -1 : i64}
// CHECK: weft_plan.collective "send_recv" @arg0 -> @{{s[0-9]+}} count 128 dtype "bf16" axes [0] stream 1 at 5 {rotate, shift = -1 : i64}
module {
  shard.grid @grid(shape = 2x4)
  func.func @moves(%x: tensor<8x16xbf16>, %y: tensor<1x8x16xf32>)
      -> (tensor<8x16xbf16>, tensor<1x8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>,
          tensor<1x8x16xf32>, tensor<8x16xbf16>)
      attributes {weft.grid = @grid} {
    %a = shard.all_to_all %x on @grid grid_axes = [1] split_axis = 0 concat_axis = 0 : tensor<8x16xbf16> -> tensor<8x16xbf16>
    %b = shard.all_to_all %y on @grid grid_axes = [1] split_axis = 1 concat_axis = 1 : tensor<1x8x16xf32> -> tensor<1x8x16xf32>
    %c = shard.all_to_all %x on @grid grid_axes = [0, 1] split_axis = 0 concat_axis = 0 : tensor<8x16xbf16> -> tensor<8x16xbf16>
    %d = shard.shift %a on @grid grid_axes = [0, 1] shift_axis = 1 offset = 5 rotate : tensor<8x16xbf16> -> tensor<8x16xbf16>
    %e = shard.shift %y on @grid grid_axes = [1] shift_axis = 1 offset = -1 : tensor<1x8x16xf32> -> tensor<1x8x16xf32>
    %f = shard.shift %x on @grid grid_axes = [0] shift_axis = 0 offset = -1 rotate : tensor<8x16xbf16> -> tensor<8x16xbf16>
    return %a, %b, %c, %d, %e, %f : tensor<8x16xbf16>, tensor<1x8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<1x8x16xf32>, tensor<8x16xbf16>
  }
}

// -----

// Blocks of rows 0..7 of every column are not contiguous in [8, 16].
module {
  shard.grid @grid(shape = 4)
  func.func @strided(%x: tensor<8x16xbf16>) -> tensor<32x4xbf16> attributes {weft.grid = @grid} {
    // expected-error @+1 {{cannot plan shard.all_to_all with split_axis 1 and concat_axis 0 ('tensor<8x16xbf16>' -> 'tensor<32x4xbf16>'): NCCL's all-to-all sends and receives one contiguous block per rank, so every dimension before split_axis of the input and before concat_axis of the result must be 1}}
    %a = shard.all_to_all %x on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<8x16xbf16> -> tensor<32x4xbf16>
    return %a : tensor<32x4xbf16>
  }
}

// -----

// shard orders the group by grid_axes as listed, NCCL by increasing axes.
module {
  shard.grid @grid(shape = 2x2)
  func.func @order(%x: tensor<8x16xbf16>) -> tensor<8x16xbf16> attributes {weft.grid = @grid} {
    // expected-error @+1 {{cannot plan shard.all_to_all over grid_axes [1, 0]: the blocks go to ranks in the order of NCCL's communicator, increasing grid axes}}
    %a = shard.all_to_all %x on @grid grid_axes = [1, 0] split_axis = 0 concat_axis = 0 : tensor<8x16xbf16> -> tensor<8x16xbf16>
    return %a : tensor<8x16xbf16>
  }
}

// -----

module {
  shard.grid @grid(shape = 4)
  func.func @nowhere(%x: tensor<8x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) attributes {weft.grid = @grid} {
    // expected-error @+1 {{cannot plan shard.shift by 4 without rotate along grid axis 0 of size 4: no rank has a source (the result is all zeros)}}
    %a = shard.shift %x on @grid grid_axes = [0] shift_axis = 0 offset = 4 : tensor<8x16xbf16> -> tensor<8x16xbf16>
    // expected-error @+1 {{cannot plan shard.shift by -8 with rotate along grid axis 0 of size 4: every tensor stays where it is}}
    %b = shard.shift %x on @grid grid_axes = [0] shift_axis = 0 offset = -8 rotate : tensor<8x16xbf16> -> tensor<8x16xbf16>
    return %a, %b : tensor<8x16xbf16>, tensor<8x16xbf16>
  }
}
