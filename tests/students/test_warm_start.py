"""students.init_from: verifier -- a student starts with every tensor it shares with a real (tiny, pre-norm) fairseq
verifier; a deeper student's extra encoder layers start as the identity, so its encoder computes the verifier's; the
start checkpoint trains with the project's training entry; mismatched settings fail with the key to fix."""
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
       "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "OMP_NUM_THREADS": "1"}
PLUGIN = str(REPO / "fastdec_fairseq")
PRE_NORM = {"encoder-normalize-before": True, "decoder-normalize-before": True, "share-all-embeddings": True}


def student_spec(**extra):
    flags = {**PRE_NORM, "encoder-layers": 4, "decoder-layers": 1, "decoder-self-attn": "ssru",
             "decoder-no-ffn": True, "disable-validation": True, **extra}
    return {"arch": "efficient_student_tiny", "lr": 0.001, "max_tokens": 500, "max_update": 3, "warmup_updates": 1,
            "extra_args": flags}


@pytest.fixture(scope="module")
def prenorm_verifier(tiny_databin, tmp_path_factory) -> Path:
    """A 2+2-layer pre-norm transformer_tiny trained for 3 updates (the demo verifier is pre-norm)."""
    save = tmp_path_factory.mktemp("prenorm_verifier")
    subprocess.run(
        [str(BIN / "fairseq-train"), str(tiny_databin), "--arch", "transformer_tiny", "--share-all-embeddings",
         "--encoder-normalize-before", "--decoder-normalize-before", "--optimizer", "adam", "--lr", "0.005",
         "--max-tokens", "500", "--max-update", "3", "--cpu", "--save-dir", str(save), "--no-epoch-checkpoints",
         "--log-format", "simple", "--num-workers", "0", "--disable-validation", "--no-save-optimizer-state",
         "--seed", "1"], check=True, capture_output=True, env=ENV)
    return save / "checkpoint_last.pt"


def test_deep_student_starts_from_the_verifier_and_trains(prenorm_verifier, tiny_databin, tmp_path):
    from fastdec.engine.load import load_model
    from fastdec.tracks.students.warm_start import warm_start

    init = tmp_path / "init.pt"
    report = warm_start(str(prenorm_verifier), str(tiny_databin), student_spec(), PLUGIN, str(init))
    assert not report["shape_mismatch"]
    assert "encoder.layers.1.fc2.weight" in report["copied"]
    assert "decoder.layers.0.encoder_attn.k_proj.weight" in report["copied"]
    assert "decoder.embed_tokens.weight" in report["copied"]
    assert "decoder.layers.0.self_attn.fused.weight" in report["fresh"]  # SSRU is the student's own
    assert "encoder.layers.3.self_attn.q_proj.weight" in report["fresh"]
    assert set(report["zeroed"]) == {f"encoder.layers.{i}.{m}.{p}" for i in (2, 3)
                                     for m in ("self_attn.out_proj", "fc2") for p in ("weight", "bias")}

    verifier = load_model(str(prenorm_verifier), str(tiny_databin), dtype="float64").model.eval()
    student = load_model(str(init), str(tiny_databin), dtype="float64").model.eval()
    v_state = verifier.state_dict()
    for name in report["copied"]:
        assert torch.equal(student.state_dict()[name], v_state[name]), name
    # layers 2-3 add nothing to the pre-norm residual stream: the 4-layer encoder is the verifier's 2-layer one
    src = torch.tensor([[5, 9, 7, 12, 6, 2], [8, 5, 11, 2, 1, 1]]).flip(1)  # left-padded, EOS last
    lengths = src.ne(1).sum(1)
    with torch.no_grad():
        out_v = verifier.encoder(src, src_lengths=lengths)["encoder_out"][0]
        out_s = student.encoder(src, src_lengths=lengths)["encoder_out"][0]
    assert torch.equal(out_s, out_v)

    # the start checkpoint is what the training rule fine-tunes (--finetune-from-model, a fresh clock)
    out = tmp_path / "student"
    spec = student_spec(**{"finetune-from-model": str(init)})
    r = subprocess.run([sys.executable, "-m", "fastdec", "train", "--spec", json.dumps(spec),
                        "--data-bin", str(tiny_databin), "--save-dir", str(out / "checkpoints"),
                        "--model-out", str(out / "model.pt"), "--summary", str(out / "train.json"),
                        "--user-dir", PLUGIN], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads((out / "train.json").read_text())["num_updates"] == 3


def test_a_student_with_other_settings_than_the_verifier_is_refused(prenorm_verifier, tiny_databin, tmp_path):
    from fastdec.tracks.students.warm_start import warm_start

    post_norm = student_spec(**{"encoder-normalize-before": False, "decoder-normalize-before": False})
    with pytest.raises(ValueError, match="encoder-normalize-before"):
        warm_start(str(prenorm_verifier), str(tiny_databin), post_norm, PLUGIN, str(tmp_path / "x.pt"))
    with pytest.raises(FileNotFoundError, match="train the verifier first"):
        warm_start(str(tmp_path / "none.pt"), str(tiny_databin), student_spec(), PLUGIN, str(tmp_path / "y.pt"))
    assert not (tmp_path / "x.pt").exists()


def test_the_workflow_starts_every_student_from_its_warm_start_checkpoint():
    from fastdec.tracks.students.plan import model_setup, warm_started

    st = {"init_from": "verifier", "baseline": "t",
          "train": {"arch": "efficient_student", "max_update": 10, "max_tokens": 100, "update_freq": 1, "lr": 1e-3,
                    "warmup_updates": 1, "dropout": 0.1, "label_smoothing": 0.1, "save_interval_updates": 0,
                    "extra_args": {}},
          "models": {"t": {"self_attn": "attention", "encoder_layers": 3, "decoder_layers": 3},
                     "s": {"self_attn": "ssru", "ffn": False, "encoder_layers": 6, "decoder_layers": 1}}}
    assert warm_started(st) == ["t", "s"]
    spec, inputs, _ = model_setup(st, "s", "results/x", PLUGIN)
    assert inputs == {"init": "results/x/students/init/s.pt"}
    assert spec["extra_args"]["finetune-from-model"] == "results/x/students/init/s.pt"
    st["init_from"] = "none"
    assert warm_started(st) == []
    spec, inputs, _ = model_setup(st, "s", "results/x", PLUGIN)
    assert inputs == {} and "finetune-from-model" not in spec["extra_args"]


def test_a_student_is_built_the_same_on_every_run(tiny_databin):
    from fastdec.tracks.students.warm_start import build_student

    first, second = (build_student(student_spec(), str(tiny_databin), PLUGIN)[1].state_dict() for _ in range(2))
    other = build_student({**student_spec(), "seed": 2}, str(tiny_databin), PLUGIN)[1].state_dict()
    name = "encoder.layers.3.self_attn.q_proj.weight"  # a tensor the verifier does not have
    assert all(torch.equal(first[k], second[k]) for k in first) and not torch.equal(first[name], other[name])
