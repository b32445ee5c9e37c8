"""weft IR of decoding steps: weft.attention with a few query rows over a long
KV cache (GQA), which `weft-compile --emit=kernels` turns into the split-KV
decode units. Shared by scripts/check-kernels (CI's ptxas check) and
scripts/decode-units (the units test/gpu/decode_check.py runs). No torch."""


def decode_function(name, dtype, head_dim, causal, problems, q_heads=32, kv_heads=4):
    """One func.func @name returning every op's out and lse; `problems` is a
    list of (batch, q_len, k_len)."""
    args, results, body = [], [], []
    attrs = " {causal}" if causal else ""
    for i, (batch, q_len, k_len) in enumerate(problems):
        q = f"tensor<{batch}x{q_heads}x{q_len}x{head_dim}x{dtype}>"
        kv = f"tensor<{batch}x{kv_heads}x{k_len}x{head_dim}x{dtype}>"
        lse = f"tensor<{batch}x{q_heads}x{q_len}xf32>"
        args += [f"%q{i}: {q}", f"%k{i}: {kv}", f"%v{i}: {kv}"]
        body.append(f"  %o{i}, %l{i} = weft.attention %q{i}, %k{i}, %v{i}{attrs} : "
                    f"({q}, {kv}, {kv}) -> ({q}, {lse})")
        results += [(f"%o{i}", q), (f"%l{i}", lse)]
    types = ", ".join(t for _, t in results)
    return (f"func.func @{name}({', '.join(args)}) -> ({types}) {{\n" + "\n".join(body) +
            f"\n  return {', '.join(v for v, _ in results)} : {types}\n}}\n")


def config_name(dtype, head_dim, causal):
    return f"decode_{dtype}_d{head_dim}_{'causal' if causal else 'full'}"
