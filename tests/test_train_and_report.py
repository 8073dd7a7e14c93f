import json

import pandas as pd

from fastdec.fairseq_generate import parse_generate_output
from fastdec.claims.report import build_report
from fastdec.tracks.mt.tables import at_table
from fastdec.train import (_set_aside_stale_checkpoints, fairseq_train_command, flag_args, repair_last_checkpoint,
                           run_fingerprint)


def test_flag_args():
    assert flag_args({"encoder_layers": 3, "share-all-embeddings": True, "fp16": False, "x": None}) == [
        "--encoder-layers", "3", "--share-all-embeddings"]


def test_train_command_from_spec():
    spec = {"arch": "transformer", "max_update": 10, "max_tokens": 100, "lr": 0.001, "max_minutes": 6,
            "extra_args": {"encoder-layers": 2}}
    cmd = fairseq_train_command(spec, "bin", "ckpt", device="cpu")
    assert cmd[1] == "bin" and "--cpu" in cmd
    assert cmd[cmd.index("--stop-time-hours") + 1] == "0.1000"
    assert cmd[cmd.index("--label-smoothing") + 1] == "0.1"
    assert cmd[-2:] == ["--encoder-layers", "2"]
    gpu = fairseq_train_command(spec, "bin", "ckpt", device="cuda", user_dir="plug", criterion="other")
    assert "--cpu" not in gpu and "--label-smoothing" not in gpu and "plug" in gpu


def test_longer_training_resumes_but_a_changed_model_starts_afresh(tmp_path):
    spec = {"arch": "transformer", "max_update": 10, "max_tokens": 100, "lr": 0.001, "max_minutes": 6,
            "extra_args": {"encoder-embed-dim": 256}}
    save = tmp_path / "checkpoints"
    first = fairseq_train_command(spec, "bin", str(save), device="cpu")
    longer = fairseq_train_command({**spec, "max_update": 50, "max_minutes": 20}, "bin", str(save), device="cpu")
    smaller = fairseq_train_command({**spec, "extra_args": {"encoder-embed-dim": 128}}, "bin", str(save),
                                    device="cpu")
    assert run_fingerprint(first) == run_fingerprint(longer) != run_fingerprint(smaller)
    _set_aside_stale_checkpoints(save, first)
    (save / "checkpoint_last.pt").write_bytes(b"weights of the first run")
    _set_aside_stale_checkpoints(save, longer)          # more updates/minutes: same run, resume
    assert (save / "checkpoint_last.pt").exists()
    _set_aside_stale_checkpoints(save, smaller)         # other architecture: old checkpoints moved aside, kept
    stale = [p for p in tmp_path.iterdir() if p.name.startswith("checkpoints.stale-")]
    assert len(stale) == 1 and (stale[0] / "checkpoint_last.pt").read_bytes() == b"weights of the first run"
    assert not (save / "checkpoint_last.pt").exists()
    assert json.loads((save / "command.json").read_text())["fingerprint"] == run_fingerprint(smaller)


def test_parse_generate_output_orders_ids_and_reads_timing():
    out = "S-1\tb\nH-1\t-0.2\tzwei\nH-0\t-0.1\teins drei\n"
    log = "INFO | Translated 2 sentences (5 tokens) in 0.5s (4.00 sentences/s, 10.00 tokens/s)"
    hyps, timing = parse_generate_output(out, log)
    assert hyps == ["eins drei", "zwei"]
    assert timing == {"sentences": 2, "tokens": 5, "seconds": 0.5, "sentences_per_s": 4.0, "tokens_per_s": 10.0}
    # fairseq rounds the seconds to 0.1 s: a fast run's time comes from its sentences/s instead.
    _, fast = parse_generate_output(out, "Translated 40 sentences (90 tokens) in 0.0s (425.53 sentences/s, 9.0 tokens/s)")
    assert fast["seconds"] == 40 / 425.53 > 0


def test_at_table_and_report(tmp_path):
    paths = []
    for system, bleu, lat in [("verifier_b5", 20.0, 40.0), ("verifier_b1", 19.5, 10.0)]:
        p = tmp_path / f"{system}.json"
        p.write_text(json.dumps({"system": system, "bleu": bleu, "latency_ms": lat, "sentences_per_s": 9.0,
                                 "identical_to_greedy": 3, "sentences": 4, "signature": "nrefs:1|x"}))
        paths.append(str(p))
    df = at_table(paths)
    assert list(df["speed_vs_verifier_b5"]) == [1.0, 4.0]
    assert list(df["paper_bleu"]) == [28.89, 28.73]
    csv = tmp_path / "table1_at.csv"
    df.to_csv(csv, index=False)
    caps = tmp_path / "caps"
    caps.mkdir()
    (caps / "table1_at.rst").write_text("My title\n\nSome words\nmore words.\n")
    text = build_report("exp", [str(csv)], str(caps), out_dir=str(tmp_path))
    assert "## My title" in text and "Some words more words." in text
    assert "| verifier_b1 |" in text and "sacreBLEU signature: `nrefs:1|x`" in text
    assert pd.read_csv(csv).shape[0] == 2


def test_fresh_start_drops_the_recorded_training_time(tmp_path):
    """A model continuing another (--finetune-from-model) must not inherit its training time: --stop-time-hours
    counts it, and a 4-minute verifier continuing a 12-minute teacher stopped after one update."""
    import torch

    from fastdec.train import fresh_start

    teacher = tmp_path / "teacher.pt"
    torch.save({"model": {"w": torch.ones(2)}, "extra_state": {"previous_training_time": 727.0,
                                                                "train_iterator": {"epoch": 9}}}, teacher)
    cmd = ["fairseq-train", "bin", "--finetune-from-model", str(teacher), "--stop-time-hours", "0.0667"]
    out = fresh_start(cmd, tmp_path)
    assert out[:2] == cmd[:2] and out[3] == str(tmp_path / "init_weights.pt") and out[4:] == cmd[4:]
    state = torch.load(out[3], weights_only=False)
    assert "previous_training_time" not in state["extra_state"] and state["extra_state"]["train_iterator"]
    assert torch.equal(state["model"]["w"], torch.ones(2))
    assert torch.load(teacher, weights_only=False)["extra_state"]["previous_training_time"] == 727.0
    assert fresh_start(["fairseq-train", "bin"], tmp_path) == ["fairseq-train", "bin"]


def test_a_checkpoint_cut_short_by_a_killed_job_is_replaced_by_the_newest_complete_one(tmp_path):
    """A job killed while fairseq copied its checkpoint to checkpoint_last.pt left a truncated file fairseq could not
    resume from: it is moved aside and the newest complete checkpoint resumed instead, or, with none, training
    starts afresh."""
    import os

    import torch

    save = tmp_path / "checkpoints"
    save.mkdir()
    torch.save({"updates": 10}, save / "checkpoint_1_10.pt")
    torch.save({"updates": 20}, save / "checkpoint_1_20.pt")
    os.utime(save / "checkpoint_1_10.pt", (1, 1))
    whole = (save / "checkpoint_1_20.pt").read_bytes()
    (save / "checkpoint_last.pt").write_bytes(whole[: len(whole) // 2])
    repair_last_checkpoint(save)
    assert torch.load(save / "checkpoint_last.pt")["updates"] == 20
    assert len(list(save.glob("checkpoint_last.pt.truncated-*"))) == 1
    repair_last_checkpoint(save)  # a complete checkpoint_last.pt is left as it is
    assert torch.load(save / "checkpoint_last.pt")["updates"] == 20
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "checkpoint_last.pt").write_bytes(whole[:100])
    repair_last_checkpoint(alone)
    assert not (alone / "checkpoint_last.pt").exists() and list(alone.glob("checkpoint_last.pt.truncated-*"))
