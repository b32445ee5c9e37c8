"""weft.eager_masks: weft's Philox rule in torch equals weft.philox's numpy
one, and an eager model inside EagerMasks computes what the model compiled
by Weft computes with the same seed: transformers' GPT2LMHeadModel with its
default dropouts (embedding, attention probabilities through SDPA's
dropout_p, residuals, MLP) in float64 (its loss in float32, as HF computes
it): the loss to 1e-9 and every gradient to 1e-6."""
import numpy as np
import pytest
import torch

import weft
import weft.torch_backend
from harness import require_weft_run
from weft import philox
from weft.eager_masks import EagerMasks, draws


@pytest.mark.parametrize("seed,rng_id,count", [(0, 0, 17), (1234567, 3, 1001),
                                               (2**31 - 1, 2**20, 4096), (99, 7, 1)])
def test_torch_draws_equal_numpy(seed, rng_id, count):
    got = draws(count, seed, rng_id).numpy().astype(np.uint32)
    assert np.array_equal(got, philox.draws(seed, rng_id, count))


def test_hf_gpt2_with_dropout_equals_eager_with_weft_masks(monkeypatch):
    require_weft_run()
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("WEFT_STRICT", "1")
    torch._dynamo.reset()
    seed = 424242
    monkeypatch.setattr(weft.torch_backend, "new_seed", lambda device=None: torch.tensor(seed))
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=64,
                                     n_positions=32, attn_implementation="sdpa")
    assert config.attn_pdrop == config.resid_pdrop == config.embd_pdrop == 0.1
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).double().train()
    model.loss_type = "ForCausalLM"  # transformers' fallback warning breaks the graph
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))
    loss = weft.compile(model)(input_ids=ids, labels=ids).loss
    loss.backward()
    got = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    torch._dynamo.reset()
    with EagerMasks() as masks:
        masks.begin(seed)
        want = model(input_ids=ids, labels=ids).loss
        assert masks.rng_id == 1 + 3 * config.n_layer  # every dropout site drew
    want.backward()
    assert abs(loss.item() - want.item()) <= 1e-9 * abs(want.item())
    # HF's loss converts the logits to float32 (then eager's cross-entropy
    # gradient is f32 arithmetic, weft's one rounding): 1e-6, where one
    # mask bit off moves a gradient by about 1e-2.
    for name, p in model.named_parameters():
        assert (got[name] - p.grad).abs().max() <= 1e-6 * p.grad.abs().max(), name
    with EagerMasks() as masks:  # another seed: another loss (the masks matter)
        masks.begin(seed + 1)
        other = model(input_ids=ids, labels=ids).loss
    assert abs(other.item() - want.item()) > 1e-6
