"""One training per model (fastdec/train.py): a second job for the same save dir waits for the first, and a model this
exact command already trained is published again, not trained again -- what a rerun after a killed Snakemake on a
cluster relies on (tests/cluster/test_faults_on_slurm.py runs that on SLURM). Real fairseq-train, tiny model."""
import fcntl
import json
import subprocess
import sys
import time

from fastdec.train import fairseq_train_command, run_training

SPEC = {"arch": "transformer_tiny", "max_update": 2, "max_tokens": 500, "lr": 0.005, "warmup_updates": 1,
        "extra_args": {"share-all-embeddings": True, "disable-validation": True}}


def train(databin, tmp_path, **spec):
    cmd = fairseq_train_command({**SPEC, **spec}, str(databin), str(tmp_path / "ckpt"))
    return run_training(cmd, str(tmp_path / "ckpt"), str(tmp_path / "model.pt"), str(tmp_path / "train.json"))


def test_trained_model_is_published_again_not_retrained(tiny_databin, tmp_path, capfd):
    first = train(tiny_databin, tmp_path)
    assert first["num_updates"] == 2 and not first["resumed"]
    (tmp_path / "model.pt").unlink()  # what Snakemake does before rerunning an incomplete job
    capfd.readouterr()
    again = train(tiny_databin, tmp_path)
    out = capfd.readouterr().out
    assert again["republished"] and again["num_updates"] == 2 and "publishing it again" in out
    assert "+ " not in out and (tmp_path / "model.pt").stat().st_size > 0
    longer = train(tiny_databin, tmp_path, max_update=4)  # a longer run of the same model does train
    assert longer["resumed"] and longer["num_updates"] == 4 and "republished" not in longer


def test_second_job_waits_for_the_first(tiny_databin, tmp_path):
    save = tmp_path / "ckpt"
    save.mkdir()
    code = ("import sys; from fastdec.train import fairseq_train_command, run_training; import json; "
            f"spec = json.loads({json.dumps(json.dumps(SPEC))}); "
            f"cmd = fairseq_train_command(spec, {str(tiny_databin)!r}, {str(save)!r}); "
            f"run_training(cmd, {str(save)!r}, {str(tmp_path / 'model.pt')!r}, {str(tmp_path / 'train.json')!r})")
    with open(save / "train.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another job is training this model
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        first_line = proc.stdout.readline()
        assert "another job is training this model" in first_line
        time.sleep(1)
        assert proc.poll() is None and not (tmp_path / "model.pt").exists()
    out = proc.stdout.read()
    assert proc.wait(timeout=300) == 0, out
    assert json.loads((tmp_path / "train.json").read_text())["num_updates"] == 2
