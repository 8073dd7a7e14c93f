"""Fixtures of the engine tests: tiny random fairseq Transformers (float64) and a tiny trained checkpoint."""
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

import torch  # noqa: E402

torch.set_num_threads(1)
BIN = Path(sys.executable).parent

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
    from fastdec.engine.testing import build_random_transformer

    model, d, _ = build_random_transformer(seed=100 + idx, dtype=dtype, max_positions=64, **MODEL_CONFIGS[idx])
    return model, d, Verifier(model, dtype=dtype)


@functools.lru_cache(maxsize=None)
def copy_model():
    """A tiny fairseq Transformer trained in-process on a GEC-like copy task (about 10 s on one core)."""
    from fastdec.engine import Verifier
    from fastdec.engine.testing import train_copy_model

    model, d = train_copy_model(400, seed=0)
    return model, d, Verifier(model)


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_databin, tmp_path_factory) -> Path:
    """A real fairseq-train checkpoint (transformer_tiny, 2 updates) on ``tiny_databin``."""
    save = tmp_path_factory.mktemp("tinyckpt")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run(
        [str(BIN / "fairseq-train"), str(tiny_databin), "--arch", "transformer_tiny", "--share-all-embeddings",
         "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "500", "--max-update", "2", "--cpu",
         "--save-dir", str(save), "--no-epoch-checkpoints", "--log-format", "simple", "--num-workers", "0",
         "--disable-validation", "--no-save-optimizer-state", "--seed", "1"],
        check=True, capture_output=True, env=env,
    )
    ckpt = save / "checkpoint_last.pt"
    assert ckpt.is_file()
    return ckpt
