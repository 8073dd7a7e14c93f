"""Fixtures of the engine tests: tiny random fairseq Transformers (float64) and a model trained in-process
(the tiny fairseq-train checkpoint, ``tiny_checkpoint``, is in tests/conftest.py)."""
import functools
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

# decoder variants covered by the property tests (index -> build_random_transformer kwargs)
MODEL_CONFIGS = [
    dict(),                                                             # post-norm, sinusoidal, unshared
    dict(normalize_before=True, learned_pos=True),                      # pre-norm, learned positions
    dict(share_all_embeddings=True, layernorm_embedding=True),          # shared embeddings + emb. layer norm
    dict(normalize_before=True, share_decoder_input_output_embed=True, activation_fn="gelu",
         no_scale_embedding=True),
    dict(decoder_output_dim=8, learned_pos=True),                       # project_out_dim
    dict(normalize_before=True, no_decoder_final_norm=True, layers=1, heads=4),
]


@functools.lru_cache(maxsize=None)
def random_model(idx: int, dtype=torch.float64):
    """(model, dictionary, verifier) for ``MODEL_CONFIGS[idx]``, cached for the session."""
    from fastdec.engine import Verifier
    from fastdec.engine.profile import build_random_transformer

    model, d, _ = build_random_transformer(seed=100 + idx, dtype=dtype, max_positions=64, **MODEL_CONFIGS[idx])
    return model, d, Verifier(model, dtype=dtype)


@functools.lru_cache(maxsize=None)
def copy_model():
    """A tiny fairseq Transformer trained in-process on a GEC-like copy task (about 10 s on one core)."""
    from fastdec.engine import Verifier
    from helpers.models import train_copy_model

    model, d = train_copy_model(400, seed=0)
    return model, d, Verifier(model)
