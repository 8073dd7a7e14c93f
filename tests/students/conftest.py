"""Fixtures of the efficient-student tests: tiny random students (float64), cached per configuration."""
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

# decoder variants of the property tests (index -> build_random_student kwargs)
STUDENT_CONFIGS = [
    dict(kind="ssru"),                                                   # SSRU with decoder FFN, 2-1
    dict(kind="ssru", no_ffn=True, enc_layers=3, dec_layers=2),          # SSRU w/o FFN, deep-shallow
    dict(kind="aan"),                                                    # AAN
    dict(kind="aan", no_ffn=True, normalize_before=True),                # AAN w/o FFN, pre-norm
    dict(kind="attention", dec_layers=2, decoder_learned_pos=True),      # standard self-attention baseline
]


@functools.lru_cache(maxsize=None)
def random_student(idx: int):
    """(model, dictionary, StudentVerifier) for ``STUDENT_CONFIGS[idx]`` (float64), cached for the session."""
    from fastdec.engine.student_verifier import StudentVerifier
    from helpers.students import build_random_student

    model, d = build_random_student(seed=200 + idx, init_std=0.6, **STUDENT_CONFIGS[idx])
    return model, d, StudentVerifier(model)
