// The weft dialect's operations. Semantics follow the PyTorch op of the same
// name unless a description says otherwise.
#ifndef WEFT_OPS_TD
#define WEFT_OPS_TD

include "weft/Dialect/WeftBase.td"
include "weft/Dialect/WeftInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

// Every weft op: static shapes (the StaticShapes trait verifies them), no
// side effects, a cost and a memory model. `costOverrides` are the cost
// methods the op implements itself (WeftCost.cpp); a pointwise op with a
// formula may leave getFlops to the formula.
class Weft_Op<string mnemonic, list<Trait> traits = [],
              list<string> memoryOverrides = [],
              list<string> costOverrides = ["getFlops"]>
    : Op<Weft_Dialect, mnemonic, !listconcat(traits, [Pure, Weft_StaticShapes,
        DeclareOpInterfaceMethods<Weft_CostOpInterface, costOverrides>,
        DeclareOpInterfaceMethods<Weft_MemoryOpInterface, memoryOverrides>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// A pointwise op with a formula (ScalarFormulas.cpp) that fusion may group.
defvar Weft_FormulaTraits = [
    DeclareOpInterfaceMethods<Weft_ScalarFormulaOpInterface>,
    Weft_FusionOpInterface];

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

def Weft_LinearOp : Weft_Op<"linear",
    [DeclareOpInterfaceMethods<Weft_GemmRowsOpInterface>], ["getWorkspaceBytes"]> {
  let summary = "y = x W^T + b over the last dimension of x";
  let description = [{
    `x` is `[..., in]`, `w` is `[out, in]`, the optional `bias` is `[out]`;
    the result is `[..., out]`. All element types equal.
    ```mlir
    %y = weft.linear %x, %w, %b : (tensor<2x128x512xbf16>, tensor<1536x512xbf16>, tensor<1536xbf16>) -> tensor<2x128x1536xbf16>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, Weft_FloatTensor:$w,
                       Optional<Weft_FloatTensor>:$bias);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_MatmulOp : Weft_Op<"matmul",
    [DeclareOpInterfaceMethods<Weft_GemmRowsOpInterface>], ["getWorkspaceBytes"]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `a` is `[..., m, k]` (`[..., k, m]` with `transpose_a`), `b` is
    `[..., k, n]` (`[..., n, k]` with `transpose_b`). The batch dimensions of
    `a` and `b` are equal, or `b` is 2-d and shared by every batch.
    ```mlir
    %s = weft.matmul %q, %k {transpose_b} : (tensor<2x8x128x64xf32>, tensor<2x8x128x64xf32>) -> tensor<2x8x128x128xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$a, Weft_FloatTensor:$b,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Weft_FloatTensor:$c);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Weft_AttentionOp : Weft_Op<"attention", [], ["getWorkspaceBytes"]> {
  let summary = "scaled dot-product attention (SDPA), GQA/MQA, causal, dropout";
  let description = [{
    `q` is `[b, hq, sq, d]`, `k` is `[b, hkv, sk, d]`, `v` is `[b, hkv, sk, dv]`
    with `hkv` dividing `hq` (q head `i` reads kv head `i / (hq / hkv)`). The
    result is `[b, hq, sq, dv]`; the optional second result is the row
    log-sum-exp of the scaled scores, `[b, hq, sq]` in f32. `scale` defaults to
    `1/sqrt(d)`; `causal` masks key `j > i + (sk - sq)`: bottom-right
    aligned, as FlashAttention and PyTorch's `causal_lower_right` define it,
    so with `sq < sk` (decoding: a few new query rows against a KV cache) the
    last query row sees every key. With `sq == sk` this is SDPA's `is_causal`;
    causal with `sq > sk` is rejected (rows would see no key).
    With `dropout_p > 0` the 0-d i64 `seed` operand and `weft.rng_id` are
    required; the dropout mask over the `[b, hq, sq, sk]` probabilities follows
    the Philox rule. With `seq_major`, q, k, v and the result are
    `[b, s, h, d]` instead (FlashAttention's layout, what a linear produces
    without a transpose); lse stays `[b, hq, sq]`.

    The `rng` operands are empty, or the seed, or the seed and an `index`
    head offset: then the op holds q heads `[offset, offset + hq)` of a
    partitioned attention with `dropout_heads` q heads in all, and the mask
    is that slice of the global one (so every tensor-parallel rank draws the
    global mask's bits for its heads).
    ```mlir
    %o = weft.attention %q, %k, %v {causal, scale = 0.125 : f32} : (tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x8x128x64xbf16>
    // Decoding: 4 new rows of 32 q heads against a 4096-key cache of 4 kv heads.
    %d, %l = weft.attention %q1, %kc, %vc {causal} : (tensor<1x32x4x128xbf16>, tensor<1x4x4096x128xbf16>, tensor<1x4x4096x128xbf16>) -> (tensor<1x32x4x128xbf16>, tensor<1x32x4xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$q, Weft_FloatTensor:$k,
                       Weft_FloatTensor:$v, Variadic<Weft_RngOperand>:$rng,
                       UnitAttr:$causal, OptionalAttr<F32Attr>:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       UnitAttr:$seq_major, OptionalAttr<I64Attr>:$dropout_heads);
  let results = (outs Weft_FloatTensor:$out, Optional<Weft_FloatTensor>:$lse);
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(head_dim).
    double getScaleValue();
    /// The dropout seed (rng #0), or null.
    ::mlir::Value getSeed() { return getRng().empty() ? ::mlir::Value() : getRng()[0]; }
    /// The partition's first q head (rng #1), or null.
    ::mlir::Value getHeadOffset() { return getRng().size() < 2 ? ::mlir::Value() : getRng()[1]; }
  }];
}

def Weft_AttentionGradOp : Weft_Op<"attention_grad", [], ["getWorkspaceBytes"]> {
  let summary = "gradient of attention with respect to q, k and v";
  let description = [{
    Operands: `dout`, `q`, `k`, `v`, `out`, `lse` (as produced by
    `weft.attention`), then the optional `seed`. Results `dq`, `dk`, `dv` with
    the shapes of `q`, `k`, `v`; `dk`/`dv` sum over the q heads of a group.
    Attributes and `weft.rng_id` match the forward's (causal is bottom-right
    aligned when `sq < sk`; the reference interpreter and the CPU tiles
    differentiate it, the GPU backward kernels refuse it); with `seq_major`,
    dout, q, k, v, out and the gradients are `[b, s, h, d]`. With `atomic_dq`
    the GPU backward accumulates dq with f32 atomics in its workspace
    (FlashAttention-3's non-deterministic dQ: one kernel forms dK, dV and dQ,
    the sum's order varies between runs); the value is the same math.
    ```mlir
    %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dout, Weft_FloatTensor:$q,
                       Weft_FloatTensor:$k, Weft_FloatTensor:$v,
                       Weft_FloatTensor:$out, Weft_FloatTensor:$lse,
                       Variadic<Weft_RngOperand>:$rng,
                       UnitAttr:$causal, OptionalAttr<F32Attr>:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       UnitAttr:$seq_major, OptionalAttr<I64Attr>:$dropout_heads,
                       UnitAttr:$atomic_dq);
  let results = (outs Weft_FloatTensor:$dq, Weft_FloatTensor:$dk,
                      Weft_FloatTensor:$dv);
  let extraClassDeclaration = [{
    double getScaleValue();
    ::mlir::Value getSeed() { return getRng().empty() ? ::mlir::Value() : getRng()[0]; }
    ::mlir::Value getHeadOffset() { return getRng().size() < 2 ? ::mlir::Value() : getRng()[1]; }
  }];
}

//===----------------------------------------------------------------------===//
// Normalization, activations, softmax
//===----------------------------------------------------------------------===//

def Weft_LayerNormOp : Weft_Op<"layer_norm",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount"]>]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
    `x` is `[..., n]`, `gamma` and `beta` are `[n]`. Statistics in f32 (f64 in
    the interpreter), the result rounded once.
    ```mlir
    %y = weft.layer_norm %x, %g, %b {eps = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, Weft_FloatTensor:$gamma,
                       Weft_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_LayerNormGradOp : Weft_Op<"layer_norm_grad",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
        ["getFusionAnchor", "getRowStatCount", "isColumnSumResult"]>]> {
  let summary = "gradient of layer_norm: (dx, dgamma, dbeta) from (dy, x, gamma)";
  let description = [{
    Recomputes the row statistics from `x`.
    ```mlir
    %dx, %dg, %db = weft.layer_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_FloatTensor:$x,
                       Weft_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Weft_FloatTensor:$dx, Weft_FloatTensor:$dgamma,
                      Weft_FloatTensor:$dbeta);
}

def Weft_RmsNormOp : Weft_Op<"rms_norm",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount"]>]> {
  let summary = "RMSNorm over the last dimension (LLaMA)";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * gamma`, `gamma` is `[n]`.
    ```mlir
    %y = weft.rms_norm %x, %g {eps = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, Weft_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_RmsNormGradOp : Weft_Op<"rms_norm_grad",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
        ["getFusionAnchor", "getRowStatCount", "isColumnSumResult"]>]> {
  let summary = "gradient of rms_norm: (dx, dgamma) from (dy, x, gamma)";
  let description = [{
    ```mlir
    %dx, %dg = weft.rms_norm_grad %dy, %x, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_FloatTensor:$x,
                       Weft_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Weft_FloatTensor:$dx, Weft_FloatTensor:$dgamma);
}

def Weft_SoftmaxOp : Weft_Op<"softmax",
    [SameOperandsAndResultType,
     DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount"]>]> {
  let summary = "softmax along `dim` (negative counts from the end)";
  let description = [{
    ```mlir
    %p = weft.softmax %s {dim = -1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, DefaultValuedAttr<I64Attr, "-1">:$dim);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_SoftmaxGradOp : Weft_Op<"softmax_grad",
    [SameOperandsAndResultType,
     DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount"]>]> {
  let summary = "dx = y * (dy - sum(dy * y, dim)) from (dy, y)";
  let description = [{
    ```mlir
    %dx = weft.softmax_grad %dy, %y {dim = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_FloatTensor:$y,
                       DefaultValuedAttr<I64Attr, "-1">:$dim);
  let results = (outs Weft_FloatTensor:$dx);
}

def Weft_GeluOp : Weft_Op<"gelu",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits)> {
  let summary = "GELU, exact (erf) or tanh approximation";
  let description = [{
    ```mlir
    %y = weft.gelu %x {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_GeluGradOp : Weft_Op<"gelu_grad",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits)> {
  let summary = "dx = dy * gelu'(x)";
  let description = [{
    ```mlir
    %dx = weft.gelu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_FloatTensor:$x,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Weft_FloatTensor:$dx);
}

def Weft_SiluOp : Weft_Op<"silu",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits)> {
  let summary = "x * sigmoid(x)";
  let description = [{
    ```mlir
    %y = weft.silu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x);
  let results = (outs Weft_FloatTensor:$y);
  let hasVerifier = 0;
}

def Weft_SiluGradOp : Weft_Op<"silu_grad",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits)> {
  let summary = "dx = dy * silu'(x)";
  let description = [{
    ```mlir
    %dx = weft.silu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_FloatTensor:$x);
  let results = (outs Weft_FloatTensor:$dx);
  let hasVerifier = 0;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Weft_BinaryOp<string mnemonic, string what>
    : Weft_Op<mnemonic, Weft_FormulaTraits> {
  let summary = what # " with NumPy broadcasting";
  let description = [{
    Shapes broadcast as in NumPy (trailing dimensions aligned, size-1
    dimensions stretched); the result has the broadcast shape.
    ```mlir
    %z = weft.}] # mnemonic # [{ %x, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs);
  let results = (outs Weft_FloatTensor:$result);
}

def Weft_AddOp : Weft_BinaryOp<"add", "elementwise sum">;
def Weft_SubOp : Weft_BinaryOp<"sub", "elementwise difference">;
def Weft_MulOp : Weft_BinaryOp<"mul", "elementwise product">;
def Weft_DivOp : Weft_BinaryOp<"div", "elementwise quotient, lhs / rhs">;

def Weft_ScaleOp : Weft_Op<"scale",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits)> {
  let summary = "multiply by a constant";
  let description = [{
    ```mlir
    %y = weft.scale %x {value = 1.250000e-01 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, F64Attr:$value);
  let results = (outs Weft_FloatTensor:$y);
  let hasFolder = 1;
}

def Weft_DropoutOp : Weft_Op<"dropout", [Weft_FusionOpInterface]> {
  let summary = "inverted dropout with a counter-based (Philox) mask";
  let description = [{
    Element `i` (row-major global index) is kept when lane `i mod 4` of
    Philox4x32-10 with key `(seed, weft.rng_id)` and counter `i / 4` is at least
    `p * 2^32`; kept elements are scaled by `1/(1-p)`. `seed` is a 0-d i64.
    A partitioned dropout holds one block of a larger tensor: `offsets` (one
    `index` per dimension) place the block in the `global_shape`, and
    element indices are global ones, so each shard's mask is the global
    mask's slice.
    ```mlir
    %y = weft.dropout %x, %seed {p = 1.000000e-01 : f64, weft.rng_id = 3 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
    %z = weft.dropout %x, %seed, %c0, %off {p = 1.000000e-01 : f64, global_shape = array<i64: 4, 16>, weft.rng_id = 3 : i64} : (tensor<4x8xf32>, tensor<i64>, index, index) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, Weft_ScalarI64:$seed,
                       Variadic<Index>:$offsets, F64Attr:$p,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_CausalMaskOp : Weft_Op<"causal_mask",
    [SameOperandsAndResultType]> {
  let summary = "fill entries above the diagonal of the last two dims";
  let description = [{
    For `x` of shape `[..., sq, sk]`, entries with column `j > i` become
    `fill` (default -inf); others are copied. With `fill = 0.0` it is the
    gradient of the masking.
    ```mlir
    %m = weft.causal_mask %s : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, OptionalAttr<F64Attr>:$fill);
  let results = (outs Weft_FloatTensor:$y);
  let extraClassDeclaration = [{
    double getFillValue();
  }];
}

def Weft_WhereOp : Weft_Op<"where", Weft_FormulaTraits> {
  let summary = "select lhs where cond is true, else rhs (broadcasting)";
  let description = [{
    ```mlir
    %z = weft.where %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_MaskTensor:$cond, Weft_FloatTensor:$lhs,
                       Weft_FloatTensor:$rhs);
  let results = (outs Weft_FloatTensor:$result);
}

def Weft_ConvertOp : Weft_Op<"convert", [Weft_FusionOpInterface]> {
  let summary = "change the element type (round to nearest even)";
  let description = [{
    ```mlir
    %y = weft.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x);
  let results = (outs Weft_FloatTensor:$y);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Generic pointwise ops
//===----------------------------------------------------------------------===//

// A unary pointwise op that is its formula alone: the traits verify it,
// the formula (ScalarFormulas.cpp) gives its value, FLOPs and GPU code;
// docs/adding-an-op.md walks through adding one.
class Weft_UnaryPointwiseOp<string mnemonic, string what>
    : Weft_Op<mnemonic, !listconcat([Elementwise, SameOperandsAndResultType],
                                    Weft_FormulaTraits), [], []> {
  let summary = what # ", elementwise";
  let description = [{
    As the PyTorch function of the same name; the result has the type of x.
    ```mlir
    %y = weft.}] # mnemonic # [{ %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x);
  let results = (outs Weft_FloatTensor:$y);
  let hasVerifier = 0;
}

def Weft_TanhOp : Weft_UnaryPointwiseOp<"tanh", "hyperbolic tangent">;

def Weft_ExpOp : Weft_UnaryPointwiseOp<"exp", "exponential, e^x">;

def Weft_RsqrtOp : Weft_UnaryPointwiseOp<"rsqrt", "reciprocal square root, 1/sqrt(x)">;

def Weft_NegOp : Weft_UnaryPointwiseOp<"neg", "negation, -x">;

def Weft_LogOp : Weft_UnaryPointwiseOp<"log", "natural logarithm, ln(x)">;

def Weft_SqrtOp : Weft_UnaryPointwiseOp<"sqrt", "square root">;

def Weft_CosOp : Weft_UnaryPointwiseOp<"cos", "cosine">;

def Weft_SinOp : Weft_UnaryPointwiseOp<"sin", "sine">;

def Weft_SigmoidOp : Weft_UnaryPointwiseOp<"sigmoid", "logistic sigmoid, 1/(1+e^-x)">;

// Its FLOPs are its formula's (no cost override), as for the unary ops above.
def Weft_PowOp : Weft_Op<"pow",
    !listconcat([Elementwise, SameOperandsAndResultType], Weft_FormulaTraits),
    [], []> {
  let summary = "x raised to a constant exponent, x^exponent, elementwise";
  let description = [{
    As `torch.pow(x, exponent)` with a Python number: a negative base gives
    NaN unless the exponent is integral; `exponent` must be finite.
    ```mlir
    %y = weft.pow %x {exponent = 2.000000e+00 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, F64Attr:$exponent);
  let results = (outs Weft_FloatTensor:$y);
}

//===----------------------------------------------------------------------===//
// Reductions and shapes
//===----------------------------------------------------------------------===//

class Weft_ReduceOp<string mnemonic, string what> : Weft_Op<mnemonic> {
  let summary = what # " over `dims`";
  let description = [{
    Reduced dimensions are dropped unless `keepdim` is set.
    ```mlir
    %s = weft.}] # mnemonic # [{ %x {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_ReduceSumOp : Weft_ReduceOp<"reduce_sum", "sum">;
def Weft_ReduceMeanOp : Weft_ReduceOp<"reduce_mean", "mean">;
def Weft_ReduceMaxOp : Weft_ReduceOp<"reduce_max", "maximum">;

def Weft_ReshapeOp : Weft_Op<"reshape", [Weft_BufferViewOpInterface]> {
  let summary = "row-major reshape to the result type";
  let description = [{
    ```mlir
    %y = weft.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
    ```
  }];
  let arguments = (ins Weft_AnyTensor:$x);
  let results = (outs Weft_AnyTensor:$y);
  let hasFolder = 1;
}

def Weft_TransposeOp : Weft_Op<"transpose"> {
  let summary = "permute dimensions: result dim i is input dim perm[i]";
  let description = [{
    ```mlir
    %y = weft.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x8xf32>) -> tensor<2x3x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_AnyTensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Weft_AnyTensor:$y);
  let hasFolder = 1;
}

def Weft_SplitOp : Weft_Op<"split",
    [DeclareOpInterfaceMethods<Weft_BufferViewOpInterface, ["isBufferView"]>]> {
  let summary = "split along `dim` into pieces of `sizes`";
  let description = [{
    ```mlir
    %a, %b = weft.split %x {dim = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
    ```
  }];
  let arguments = (ins Weft_AnyTensor:$x, I64Attr:$dim, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Weft_AnyTensor>:$pieces);
}

def Weft_ConcatOp : Weft_Op<"concat",
    [DeclareOpInterfaceMethods<Weft_BufferViewOpInterface, ["isBufferView"]>]> {
  let summary = "concatenate along `dim`";
  let description = [{
    ```mlir
    %y = weft.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Weft_AnyTensor>:$pieces, I64Attr:$dim);
  let results = (outs Weft_AnyTensor:$y);
}

//===----------------------------------------------------------------------===//
// Embedding, loss, position encoding, optimizer
//===----------------------------------------------------------------------===//

def Weft_EmbeddingOp : Weft_Op<"embedding"> {
  let summary = "gather rows of `table` [V, H] by i64 `ids` [...]";
  let description = [{
    ```mlir
    %e = weft.embedding %ids, %table : (tensor<2x16xi64>, tensor<100x32xf32>) -> tensor<2x16x32xf32>
    ```
    With `vocab_offset` the table holds rows `[offset, offset + V)` of a
    vocabulary-parallel table: ids outside them give zero rows (the ranks'
    results sum to the global lookup).
  }];
  let arguments = (ins Weft_IdTensor:$ids, Weft_FloatTensor:$table,
                       Optional<Index>:$vocab_offset);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_EmbeddingGradOp : Weft_Op<"embedding_grad"> {
  let summary = "scatter-add `dy` [..., H] into a [V, H] table gradient";
  let description = [{
    `V` comes from the result type.
    ```mlir
    %dt = weft.embedding_grad %dy, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<100x32xf32>
    ```
    With `vocab_offset` the result holds table rows `[offset, offset + V)`
    and ids outside them are skipped.
  }];
  let arguments = (ins Weft_FloatTensor:$dy, Weft_IdTensor:$ids,
                       Optional<Index>:$vocab_offset);
  let results = (outs Weft_FloatTensor:$dtable);
}

def Weft_CrossEntropyOp : Weft_Op<"cross_entropy",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount", "isWholeOperand"]>]> {
  let summary = "mean softmax cross-entropy of logits [..., V] against labels [...]";
  let description = [{
    The result is a 0-d tensor: the mean over all label positions, computed
    with f32 (f64 in the interpreter) log-sum-exp. With `ignore_index`
    (PyTorch's `F.cross_entropy(..., ignore_index=)`), positions whose label
    is that value add nothing and the mean is over the others (NaN when
    none is left, as in PyTorch).

    The loss has the logits' element type or, for bf16/f16 logits, f32: the
    op then reads the narrow logits, computes in f32 and rounds once, which
    is `convert` to f32 followed by the loss without the f32 copy of the
    logits (weft-fold-loss-convert forms it).
    ```mlir
    %l = weft.cross_entropy %logits, %labels : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
    %b = weft.cross_entropy %lb, %labels : (tensor<2x16x100xbf16>, tensor<2x16xi64>) -> tensor<f32>
    %m = weft.cross_entropy %logits, %labels {ignore_index = -100 : i64} : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
    ```
    With `all_labels`, the labels of every row of which `labels` are some (a
    row chunk), the result is this chunk's share of the mean over
    `all_labels`: its kept positions' sum divided by the number of kept
    positions of `all_labels`. The shares of a row split sum to the loss of
    the whole (weft-chunk-loss), and a chunk whose labels are all ignored
    adds 0.
    ```mlir
    %s = weft.cross_entropy %lc, %yc, %y {ignore_index = -100 : i64} : (tensor<4x100xbf16>, tensor<4xi64>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$logits, Weft_IdTensor:$labels,
                       Optional<Weft_IdTensor>:$all_labels,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs 0DTensorOf<[F64, F32, F16, BF16]>:$loss);
}

def Weft_CrossEntropyGradOp : Weft_Op<"cross_entropy_grad",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface,
                               ["getFusionAnchor", "getRowStatCount", "isWholeOperand"]>]> {
  let summary = "dlogits = dloss * (softmax(logits) - onehot(labels)) / N";
  let description = [{
    N counts the positions whose label is not `ignore_index` (of
    `all_labels` when given, as in `cross_entropy`); an ignored position's
    row is zero. `dloss` has the loss's element type (f32 with
    bf16/f16 logits allowed, see `cross_entropy`); `dlogits` has the logits'
    type, computed in f32 and rounded once.
    ```mlir
    %dl = weft.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16x100xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F64, F32, F16, BF16]>:$dloss,
                       Weft_FloatTensor:$logits, Weft_IdTensor:$labels,
                       Optional<Weft_IdTensor>:$all_labels,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$dlogits);
}

// Vocabulary-parallel cross-entropy (Megatron-LM's): each rank holds logits
// [..., V] for vocabulary entries [offset, offset + V); the row statistics
// combine across ranks with all-reduces of [...] tensors, never the logits.
def Weft_CrossEntropyPartialOp : Weft_Op<"cross_entropy_partial"> {
  let summary = "one vocabulary shard's sum of exp(logits - max) and label logit";
  let description = [{
    `max` is the global row maximum `[...]`. Results, `[...]` with max's
    type: `sumexp = sum_c exp(logits_c - max)` over this shard, and `target
    = logits[label - offset] - max` where the label falls in the shard, else
    0. Summed over the shards they give the global row's values.
    ```mlir
    %se, %t = weft.cross_entropy_partial %logits, %labels, %max, %off : (tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<2x16xf32>, index) -> (tensor<2x16xf32>, tensor<2x16xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$logits, Weft_IdTensor:$labels,
                       Weft_FloatTensor:$max, Index:$vocab_offset);
  let results = (outs Weft_FloatTensor:$sumexp, Weft_FloatTensor:$target);
}

def Weft_CrossEntropyCombineOp : Weft_Op<"cross_entropy_combine"> {
  let summary = "mean over rows of log(sumexp) - target: the loss from row statistics";
  let description = [{
    `sumexp` and `target` are the global row statistics of
    `weft.cross_entropy_partial` (with the maximum subtracted); the result is
    the 0-d mean of `log(sumexp) - target`, in the result's element type.
    ```mlir
    %l = weft.cross_entropy_combine %se, %t : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$sumexp, Weft_FloatTensor:$target);
  let results = (outs 0DTensorOf<[F64, F32, F16, BF16]>:$loss);
}

def Weft_CrossEntropyGradPartialOp : Weft_Op<"cross_entropy_grad_partial"> {
  let summary = "one vocabulary shard of cross_entropy_grad from global row statistics";
  let description = [{
    `dlogits_c = dloss * (exp(logits_c - max) / sumexp - [c + offset ==
    label]) / N` with `max` and `sumexp` the global row statistics and `N`
    the number of label positions.
    ```mlir
    %dl = weft.cross_entropy_grad_partial %dloss, %logits, %labels, %max, %se, %off : (tensor<f32>, tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<2x16xf32>, tensor<2x16xf32>, index) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F64, F32, F16, BF16]>:$dloss,
                       Weft_FloatTensor:$logits, Weft_IdTensor:$labels,
                       Weft_FloatTensor:$max, Weft_FloatTensor:$sumexp,
                       Index:$vocab_offset);
  let results = (outs Weft_FloatTensor:$dlogits);
}

def Weft_RopeOp : Weft_Op<"rope",
    [DeclareOpInterfaceMethods<Weft_PairedFormulaOpInterface>,
     Weft_FusionOpInterface]> {
  let summary = "rotary position embedding (LLaMA's rotate_half form)";
  let description = [{
    `x` is `[..., s, d]` with even `d`; `cos` and `sin` are `[s, d]`.
    `y = x * cos + rotate_half(x) * sin` with `rotate_half(x) = cat(-x2, x1)`.
    With `inverse` it applies the transpose of that linear map,
    `y = x * cos - rotate_half(x * sin)`, which is rope's gradient.
    Element `k` of a row reads x (and, inverse, sin) at its rotate_half
    partner: a paired formula (ScalarFormulas.cpp), so the GPU kernels run it
    over x's shape and fusion may group it with ops of that domain.
    ```mlir
    %y = weft.rope %x, %cos, %sin : (tensor<1x4x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$x, Weft_FloatTensor:$cos,
                       Weft_FloatTensor:$sin, UnitAttr:$inverse);
  let results = (outs Weft_FloatTensor:$y);
}

def Weft_AdamWOp : Weft_Op<"adamw",
    [DeclareOpInterfaceMethods<Weft_FusionOpInterface, ["getFusionAnchor"]>]> {
  let summary = "one AdamW update of a parameter and its two moments";
  let description = [{
    As `torch.optim.AdamW` (not amsgrad): with `t = step` (0-d i64, from 1),
    `p -= lr * weight_decay * p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr / (1-b1^t) * m / (sqrt(v) / sqrt(1-b2^t) + eps)`.
    Results are the new parameter, m and v with their operands' types.

    With `param_low` (i16) the f32 master is stored split: `param` (bf16)
    holds its high half rounded and `param_low` the rest, so the bf16 weight
    the GEMMs read is the master itself, never a converted copy. The master
    is `bitcast<f32>((bits(param) << 16) + sext(param_low))` (exact); the
    updated f32 master `x` (bits `B`) is stored as `new_param = (B + 0x8000)
    >> 16` (round to nearest, ties away from zero) and `new_param_low =
    trunc<i16>(B)`, which join back to `x` exactly. A NaN master stores a
    quiet bf16 NaN and low bits 0. m and v are f32.
    ```mlir
    %p1, %m1, %v1 = weft.adamw %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$param, Weft_FloatTensor:$grad,
                       Weft_FloatTensor:$m, Weft_FloatTensor:$v,
                       Weft_ScalarI64:$step,
                       Optional<Weft_LowBitsTensor>:$param_low,
                       F64Attr:$lr, DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay);
  let results = (outs Weft_FloatTensor:$new_param, Weft_FloatTensor:$new_m,
                      Weft_FloatTensor:$new_v,
                      Optional<Weft_LowBitsTensor>:$new_param_low);
}

//===----------------------------------------------------------------------===//
// Fused groups (weft-fuse-elementwise)
//===----------------------------------------------------------------------===//

def Weft_FusedOp : Op<Weft_Dialect, "fused", [IsolatedFromAbove,
    RecursiveMemoryEffects, SingleBlock,
    DeclareOpInterfaceMethods<Weft_CostOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Weft_MemoryOpInterface, ["getWorkspaceBytes"]>,
    DeclareOpInterfaceMethods<Weft_GemmRowsOpInterface>]> {
  let summary = "a group of pointwise, normalization and row-reduction ops run as one kernel";
  let description = [{
    The body's block arguments are the group's inputs (the operands, in
    order); `weft.yield` names the values used outside the group (the
    results). Body ops are pointwise, normalization or row-reduction weft
    ops over one iteration domain `[..., n]`: no GEMM, attention or shape
    op. Running the op runs its body, so its values are those of the
    unfused ops; only its intermediates never reach memory. `kind` names
    the group for kernels and reports (its ops' mnemonics joined by `+`).
    A group yielding norm-weight gradients (dgamma, dbeta) but no
    domain-shaped value large enough to hold its GPU kernels' f32 row
    statistics and partial sums between launches (the first layer's
    layer_norm_grad, whose dx nobody needs) has a workspace for them.
    One other kind, `matmul+reduce_sum` (weft-fuse-bias-grad), is a single
    cuBLASLt GEMM: a linear layer's dW = dY^T X (`weft.matmul {transpose_a}`,
    dY flattened by an optional `weft.reshape`) and db = dY summed over its
    leading dims (`weft.reduce_sum`), yielding (dW, db); its workspace is
    the GEMM's.
    ```mlir
    %y = weft.fused %x, %b {kind = "add+gelu"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = weft.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %g = weft.gelu %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
      weft.yield %g : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Weft_AnyTensor>:$inputs, StrAttr:$kind);
  let results = (outs Variadic<Weft_AnyTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  // A body that folds down to yielding its arguments (an identity convert)
  // is no kernel: the group is replaced by its inputs.
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The body's single block.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The body's terminator.
    YieldOp getYield();
  }];
}

def Weft_YieldOp : Op<Weft_Dialect, "yield", [Pure, Terminator,
    HasParent<"FusedOp">]> {
  let summary = "the values a weft.fused group returns";
  let description = [{
    ```mlir
    weft.yield %g, %s : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Weft_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // WEFT_OPS_TD
