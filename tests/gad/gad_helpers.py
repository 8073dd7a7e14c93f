"""Helpers of the GAD tests (not a conftest.py: tests/engine has its own `conftest` module): random tiny verifiers
and NAT drafters (float64), and real tiny checkpoints (fixture `gad_checkpoints`, import it into a test module)."""
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
PLUGIN = REPO / "fastdec_fairseq"

from fastdec.engine.profile import build_random_nat_drafter as build_random_drafter  # noqa: E402, F401

STEERED = 3  # index of the verifier/drafter pair steered towards one token (long accepted blocks)


def steer(decoder, token: int, eos: int, a: float = 3.0, e: float = 2.5, scale: float = 0.5):
    """Push a post-norm decoder's final features towards the output rows of ``token`` (and a little EOS), so a
    random verifier and a random drafter agree often: long accepted blocks, bifurcations and EOS in drafts."""
    w = decoder.output_projection.weight
    ln = decoder.layers[-1].final_layer_norm
    with torch.no_grad():
        ln.weight.mul_(scale)
        ln.bias.copy_(a * w[token] / w[token].norm() ** 2 + e * w[eos] / w[eos].norm() ** 2)


@functools.lru_cache(maxsize=None)
def verifier_and_dict(idx: int):
    """(model, dictionary, Verifier) of a small random fairseq Transformer (float64), cached."""
    from fastdec.engine import Verifier
    from fastdec.engine.profile import build_random_transformer

    configs = [dict(), dict(normalize_before=True, learned_pos=True), dict(share_all_embeddings=True, init_std=0.3),
               dict()]
    model, d, _ = build_random_transformer(seed=200 + idx, dtype=torch.float64, max_positions=64, n_symbols=30,
                                           **configs[idx])
    if idx == STEERED:
        steer(model.decoder, d.nspecial + 5, d.eos(), e=3.0)
    return model, d, Verifier(model, dtype=torch.float64)


@functools.lru_cache(maxsize=None)
def drafter_for(idx: int, seed: int, eos_boost: float, k: int):
    from fastdec.engine.nat_drafter import NATDrafter

    _, d, ver = verifier_and_dict(idx)
    if idx == STEERED:
        model, _ = build_random_drafter(d, seed=seed, eos_boost=eos_boost)
        steer(model.decoder, d.nspecial + 5, d.eos(), e=2.5 + 0.1 * seed)
    else:
        model, _ = build_random_drafter(d, seed=seed, eos_boost=eos_boost, init_std=0.5 if seed % 2 else None)
    return NATDrafter(model, k=k, verifier_vocab_size=ver.vocab_size)


def drafter_cases(build):
    """Hypothesis strategy of GAD cases: ``(verifier index, source, build(index, seed, eos_boost, k), limits)``."""
    from hypothesis import strategies as st

    @st.composite
    def case(draw):
        idx = draw(st.sampled_from([0, 1, 2, STEERED, STEERED]))
        _, d, _ = verifier_and_dict(idx)
        n = draw(st.integers(0, 12))
        src = draw(st.lists(st.integers(d.nspecial, len(d) - 1), min_size=n, max_size=n)) + [d.eos()]
        k = draw(st.sampled_from([1, 2, 3, 5, 8]))
        seed = draw(st.integers(0, 3))
        boost = draw(st.sampled_from([0.0, 4.0]))
        lim = dict(max_len_a=draw(st.sampled_from([0.0, 1.2])), max_len_b=draw(st.integers(1, 30)))
        return idx, torch.tensor(src), build(idx, seed, boost, k), lim

    return case()


def _train(args, env=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", **(env or {}))
    res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]


def save_random_checkpoint(path, argv):
    """Build a model exactly as fairseq-train would (``argv`` = its command line) and save it untrained, in
    fairseq's checkpoint format (seconds instead of a fairseq-train process)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import fastdec_fairseq  # noqa: F401

    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(1)
    model = task.build_model(cfg.model)
    torch.save({"cfg": cfg, "args": None, "model": model.state_dict(), "last_optimizer_state": None,
                "optimizer_history": [{"criterion_name": "x", "optimizer_name": "FairseqAdam",
                                       "lr_scheduler_state": {}, "num_updates": 0}],
                "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0, "version": 2}}}, path)
    return path


@pytest.fixture(scope="session")
def gad_checkpoints(tiny_databin, tmp_path_factory):
    """(verifier.pt, drafter.pt): a transformer_tiny AT model and a nat_block_drafter_tiny (k=4) in fairseq's
    checkpoint format, built on ``tiny_databin`` like fairseq-train builds them (random weights)."""
    root = tmp_path_factory.mktemp("gadckpt")
    common = ["--cpu", "--share-all-embeddings", "--dropout", "0.0"]
    ver = save_random_checkpoint(root / "verifier.pt", [tiny_databin, "--arch", "transformer_tiny", *common])
    nat = save_random_checkpoint(root / "drafter.pt", [tiny_databin, "--user-dir", PLUGIN, "--task", "block_drafting",
                                                       "--block-size", "4", "--arch", "nat_block_drafter_tiny",
                                                       "--criterion", "glat_block_loss", *common])
    return ver, nat
