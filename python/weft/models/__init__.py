"""The model generator: a transformer config written as weft IR, as an
equivalent PyTorch module, and as inputs/expected results in .npz.

    python -m weft.models --preset gpt_block --out-dir DIR
"""
from weft.models.config import PRESETS, ModelConfig
from weft.models.emitter import emit_module
from weft.models.generate import write_model

__all__ = ["PRESETS", "ModelConfig", "emit_module", "write_model"]
