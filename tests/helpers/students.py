"""Random tiny efficient students (``efficient_student``) for the tests, built like fairseq builds them."""
import argparse
import functools
from types import SimpleNamespace
from typing import Optional

import torch

from fastdec.engine.profile import build_dictionary


def student_args(*, kind: str = "ssru", no_ffn: bool = False, enc_layers: int = 2, dec_layers: int = 1,
                 embed_dim: int = 16, heads: int = 4, ffn_dim: int = 32, head_gates: bool = False,
                 normalize_before: bool = False, max_positions: int = 128, **overrides) -> argparse.Namespace:
    args = argparse.Namespace(
        arch="efficient_student_tiny", encoder_layers=enc_layers, decoder_layers=dec_layers,
        encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim,
        encoder_ffn_embed_dim=ffn_dim, decoder_ffn_embed_dim=ffn_dim,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_normalize_before=normalize_before, decoder_normalize_before=normalize_before,
        share_all_embeddings=True, share_decoder_input_output_embed=True,
        max_source_positions=max_positions, max_target_positions=max_positions,
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
        decoder_self_attn=kind, decoder_no_ffn=no_ffn, head_gates=head_gates)
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def build_random_student(*, dictionary=None, n_symbols: int = 30, seed: int = 0, dtype=torch.float64,
                         init_std: Optional[float] = None, **kwargs):
    """A randomly initialised efficient student in eval mode and its (joined) dictionary.

    ``init_std`` re-draws every weight matrix from N(0, init_std) (sharper output distributions); SSRU forget
    biases and head-gate parameters are re-drawn too, so that gates differ per head."""
    import fastdec_fairseq  # noqa: F401  (registers the plugin)
    from fastdec_fairseq.models.efficient_student import EfficientStudentModel

    d = dictionary if dictionary is not None else build_dictionary(n_symbols)
    args = student_args(**kwargs)
    torch.manual_seed(seed)
    model = EfficientStudentModel.build_model(args, SimpleNamespace(source_dictionary=d, target_dictionary=d))
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if init_std is not None and p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * init_std)
            elif name.endswith(("forget_bias", "log_alpha")):
                p.copy_(torch.randn(p.shape, generator=g) * 2.0)
    model = model.to(dtype)
    model.eval()
    return model, d


def train_copy_student(steps: int = 300, *, seed: int = 0, lr: float = 3e-3, batch: int = 32, **kwargs):
    """A tiny efficient student trained in-process on the GEC-like copy task of :mod:`helpers.models` (float32).

    Its outputs end with EOS and nearly copy the input, so IAD accepts long blocks on it."""
    from helpers.models import fit_copy_task

    kwargs = {**dict(n_symbols=24, embed_dim=64, ffn_dim=128, dtype=torch.float32), **kwargs}
    model, d = build_random_student(seed=seed, **kwargs)
    return fit_copy_task(model, d, steps, seed=seed, lr=lr, batch=batch), d


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

    torch.set_num_threads(1)
    model, d = build_random_student(seed=200 + idx, init_std=0.6, **STUDENT_CONFIGS[idx])
    return model, d, StudentVerifier(model)
