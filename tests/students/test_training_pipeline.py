"""The student's whole recipe with the project's training entry (`fastdec train`) on a real (tiny) data-bin:
train an SSRU w/o FFN student -> L0 phase with head gates -> prune -> fine-tune the pruned model -> decode it with
fairseq-generate and with the engine (greedy == IAD)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
       "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
PLUGIN = str(REPO / "fastdec_fairseq")
ARCH = {"encoder-layers": 3, "decoder-layers": 1, "encoder-embed-dim": 32, "decoder-embed-dim": 32,
        "encoder-ffn-embed-dim": 64, "decoder-ffn-embed-dim": 64, "encoder-attention-heads": 4,
        "decoder-attention-heads": 4, "share-all-embeddings": True, "decoder-self-attn": "ssru",
        "decoder-no-ffn": True}


def train(data, out: Path, updates: int, extra: dict, criterion="label_smoothed_cross_entropy"):
    spec = {"arch": "efficient_student_tiny", "lr": 0.003, "max_tokens": 800, "max_update": updates,
            "warmup_updates": 10, "extra_args": {**ARCH, **extra, "disable-validation": True}}
    cmd = [sys.executable, "-m", "fastdec", "train", "--spec", json.dumps(spec, default=str), "--data-bin", str(data),
           "--save-dir", str(out / "checkpoints"), "--model-out", str(out / "model.pt"),
           "--summary", str(out / "train.json"), "--user-dir", PLUGIN, "--criterion", criterion]
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


@pytest.mark.slow
def test_train_l0_prune_finetune_and_decode(tiny_databin, tmp_path):
    from fastdec.engine import InputCopyDrafter, accept_top1, draft_verify_accept, greedy_decode
    from fastdec.engine.load import load_model, make_verifier
    from fastdec.engine.student_verifier import StudentVerifier

    base = tmp_path / "student"
    train(tiny_databin, base, 30, {})
    gated = tmp_path / "gated"
    log = train(tiny_databin, gated, 30, {"head-gates": True, "l0-lambda": 0.5, "label-smoothing": 0.1,
                                          "finetune-from-model": base / "model.pt"},
                criterion="l0_head_cross_entropy")
    assert "open_heads" in log and " l0 " in log
    # pruning runs on what training produced (it keeps >= 1 head per layer or fails with a clear error)
    pruned = tmp_path / "pruned.pt"
    r = subprocess.run([sys.executable, "-m", "fastdec", "students-prune", "--checkpoint", str(gated / "model.pt"),
                        "--data-bin", str(tiny_databin), "--out", str(pruned), "--report", str(tmp_path / "h.json")],
                       env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    heads = json.loads((tmp_path / "h.json").read_text())
    state = torch.load(pruned, map_location="cpu", weights_only=False)
    assert "previous_training_time" not in state["extra_state"] and state["last_optimizer_state"] is None
    assert heads["kept"]["encoder_heads"] <= 12 and heads["kept"]["enc_dec_heads"] <= 4
    fine = tmp_path / "finetuned"
    train(tiny_databin, fine, 20, {"finetune-from-model": pruned, "heads-from": pruned})
    loaded = load_model(fine / "model.pt", tiny_databin, dtype="float32")
    assert [l.self_attn.num_heads for l in loaded.model.encoder.layers] == heads["heads"]["encoder_heads"]
    ver = make_verifier(loaded.model)
    assert isinstance(ver, StudentVerifier)
    for line in ["w1 w2 w3 w4", "w5 w6 w7 w8 w9 w10"]:
        src = loaded.encode(line)
        g = greedy_decode(ver, src, max_len_b=20)
        assert draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, max_len_b=20).tokens == g.tokens
    # fairseq's own generator on the pruned, fine-tuned student
    r = subprocess.run([str(BIN / "fairseq-generate"), str(tiny_databin), "--path", str(fine / "model.pt"),
                        "--user-dir", PLUGIN, "--beam", "5", "--cpu", "--max-sentences", "8", "--quiet"],
                       env=ENV, capture_output=True, text=True)
    assert r.returncode == 0 and "BLEU" in r.stdout + r.stderr, r.stderr[-3000:]
