// Conversion passes of Weft: from attention configurations to GPU kernels.
#ifndef WEFT_CONVERSION_PASSES_TD
#define WEFT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def EmitAttentionKernelsPass : Pass<"weft-emit-attention-kernels", "mlir::ModuleOp"> {
  let summary = "Append the GPU attention kernels of one configuration as a gpu.module";
  let description = [{
    Builds the sm_90a attention kernels (warp-level mma.sync m16n8k16 with
    ldmatrix, f32 accumulation, online softmax; the deterministic three-kernel
    backward) for the configuration given by the options and appends them to
    the module as `gpu.module @weft_attn_<suffix>`. The kernels take the
    shapes at run time. Lower the result with MLIR's NVVM pipeline
    (`mlir-opt --gpu-lower-to-nvvm-pipeline`) or `weft-compile --emit=kernels`.

    ```mlir
    // weft-opt --weft-emit-attention-kernels="dtype=bf16 head-dim=64 causal=true"
    gpu.module @weft_attn_fwd_bf16_d64_causal_q64_k64 {
      gpu.func @weft_attn_forward_bf16_d64_causal_q64_k64(%q: !llvm.ptr<1>, ...) kernel
    }
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"", "bf16 or f16">,
    Option<"headDim", "head-dim", "int64_t", "128", "Head dimension (64 or 128)">,
    Option<"causal", "causal", "bool", "false", "Top-left causal mask">,
    Option<"backward", "backward", "bool", "false", "Build the backward kernels">,
    Option<"blockQ", "block-q", "int64_t", "64", "Query rows per tile">,
    Option<"blockK", "block-k", "int64_t", "64", "Key rows per tile">,
    Option<"warpgroupMma", "wgmma", "bool", "false",
           "Forward as the Hopper kernel (TMA producer, wgmma consumers)">,
    Option<"stages", "stages", "int64_t", "2",
           "K/V pipeline stages of the warpgroup forward">,
    Option<"schedule", "schedule", "std::string", "\"serial\"",
           "Warpgroup forward schedule: serial, overlap (softmax under the "
           "previous block's P V) or pingpong (overlap, and the two consumer "
           "warpgroups take turns)">,
    Option<"layout", "layout", "std::string", "\"head_major\"",
           "head_major ([b, h, s, d]) or seq_major ([b, s, h, d])">,
    Option<"packedQkv", "packed-qkv", "bool", "false",
           "seq_major: q, k, v as one packed [b, s, (hq + 2 hkv) * d] tensor">,
    Option<"packedGrads", "packed-grads", "bool", "false",
           "seq_major backward: dq, dk, dv as one packed tensor">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect"];
}

#endif // WEFT_CONVERSION_PASSES_TD
