"""What a generated model is: sizes, element type and the architectural
choices (GPT-2 style or LLaMA style), with the named presets."""
import dataclasses
from dataclasses import dataclass

DTYPES = ("f64", "f32", "bf16", "f16")


@dataclass(frozen=True)
class ModelConfig:
    layers: int = 1
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 4
    seq: int = 16
    batch: int = 2
    vocab: int = 128
    dtype: str = "f32"
    dropout: float = 0.0          # attention-probability and hidden dropout
    norm: str = "layernorm"       # layernorm | rmsnorm
    mlp: str = "gelu"             # gelu (tanh approximation) | swiglu
    rope: bool = False            # rotary embeddings on q and k
    pos_embedding: bool = True    # learned absolute positions (GPT-2)
    bias: bool = True             # biases in the linear layers
    ffn_hidden: int = 256
    attention: str = "fused"      # fused (weft.attention) | unfused (naive chain)
    eps: float = 1e-5
    rope_base: float = 10000.0
    init_seed: int = 0            # parameters and inputs
    dropout_seed: int = 1234      # the %seed input
    # cross_entropy: token ids in, embeddings, final norm, lm_head, mean CE.
    # mean_square: the remat anchor's block stack (../shared/anchors): hidden
    # states x [batch, seq, hidden] in, the blocks only (no embeddings, final
    # norm or head), loss = mean(float32(x_out)^2). mean_square_dot: the same
    # value as a dot product, GEMM(y, y^T) with y = x_out / sqrt(numel) (f32
    # accumulation, the loss rounded once to the model's dtype): its gradient
    # is GEMMs and pointwise ops, where reduce_mean's is a broadcast of a 0-d
    # value that the GPU kernels do not implement yet.
    loss: str = "cross_entropy"

    def __post_init__(self):
        checks = [
            (self.dtype in DTYPES, f"dtype must be one of {DTYPES}"),
            (self.norm in ("layernorm", "rmsnorm"), "norm must be layernorm or rmsnorm"),
            (self.mlp in ("gelu", "swiglu"), "mlp must be gelu or swiglu"),
            (self.attention in ("fused", "unfused"), "attention must be fused or unfused"),
            (min(self.layers, self.hidden, self.heads, self.kv_heads, self.seq,
                 self.batch, self.vocab, self.ffn_hidden) > 0, "sizes must be positive"),
            (self.hidden % self.heads == 0, "heads must divide hidden"),
            (self.heads % self.kv_heads == 0, "kv_heads must divide heads"),
            (not self.rope or self.head_dim % 2 == 0, "rope needs an even head_dim"),
            (0.0 <= self.dropout < 1.0, "dropout must be in [0, 1)"),
            (self.loss in ("cross_entropy", "mean_square", "mean_square_dot"),
             "loss must be cross_entropy, mean_square or mean_square_dot"),
            (self.loss == "cross_entropy" or not self.pos_embedding,
             "loss mean_square takes hidden states, not tokens: give pos_embedding off"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"invalid model config: {message} ({self})")

    @property
    def head_dim(self):
        return self.hidden // self.heads

    @property
    def group(self):
        """Query heads per kv head."""
        return self.heads // self.kv_heads

    def rng_id(self, site, layer=None):
        """The stable weft.rng_id of each dropout site; the PyTorch module uses
        the same ids, so both draw the same Philox masks."""
        if site == "embedding":
            return 0
        sites = ("attn_probs", "attn_out", "mlp_out")
        return 1 + len(sites) * layer + sites.index(site)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


PRESETS = {
    # One GPT-2 block: LayerNorm, GELU(tanh) MLP, MHA causal attention,
    # dropout 0.1 on the attention probabilities and the hidden states.
    "gpt_block": ModelConfig(dropout=0.1),
    # One LLaMA-style block: RMSNorm, RoPE, GQA (4 q heads, 2 kv heads), SwiGLU.
    "llama_block": ModelConfig(kv_heads=2, norm="rmsnorm", mlp="swiglu", rope=True,
                               pos_embedding=False, bias=False, ffn_hidden=176,
                               eps=1e-6),
    # A tiny GPT to train end to end.
    "tiny_gpt": ModelConfig(layers=2, seq=32, batch=4, vocab=256, dropout=0.1),
    # The character-level GPT of scripts/train-gpt (examples/data/charlang.txt,
    # 47 characters; vocab 64 keeps the LM head's GEMM dims multiples of 8).
    "char_gpt": ModelConfig(layers=4, hidden=256, heads=4, kv_heads=4, seq=128, batch=16,
                            vocab=64, ffn_hidden=1024, dtype="bf16", dropout=0.0),
}
