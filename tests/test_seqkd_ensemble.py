"""Seq-KD from an ensemble of teachers (GAD paper Table 6): the distillation jobs translate with all of them
(fairseq-generate --path a.pt:b.pt); the workflow side is dry-run tested in tests/test_config_variants.py."""
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]


def _translate(tmp_path, databin, checkpoint, out):
    root = databin.parent
    r = subprocess.run([sys.executable, "-m", "fastdec", "distill", "translate", "--src", str(root / "test.src"),
                        "--tgt", str(root / "test.tgt"), "--src-lang", "src", "--tgt-lang", "tgt",
                        "--dict", str(databin / "dict.src.txt"), "--checkpoint", checkpoint, "--output", str(out),
                        "--beam", "2", "--max-len-a", "0", "--max-len-b", "8"], capture_output=True, text=True,
                       cwd=tmp_path, env={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "OMP_NUM_THREADS": "1",
                                          "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-3000:]
    return out.read_text().splitlines()


def test_an_ensemble_of_identical_teachers_translates_like_one(tiny_databin, tiny_checkpoint, tmp_path):
    ckpt = str(tiny_checkpoint)
    one = _translate(tmp_path, tiny_databin, ckpt, tmp_path / "one.hyp")
    two = _translate(tmp_path, tiny_databin, f"{ckpt}:{ckpt}", tmp_path / "two.hyp")
    assert len(one) == 40 and one == two  # averaging two equal distributions changes nothing
