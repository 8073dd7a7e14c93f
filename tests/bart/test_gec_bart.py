"""The 12+2 BART-initialised GEC model (config/gec_bart.yaml, Ge et al. Table 3): the paper-scale config dry-runs
offline with BART-large's encoder and its decoder layers 0 and 1, GPT-2 BPE and BART's dictionary; M2 scoring
decodes GPT-2 BPE hypotheses; Table 3 puts our greedy and IAD rows beside the paper's 12+2 rows."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers.bart import gpt2_files  # noqa: E402
from helpers.workflow_runs import snakemake  # noqa: E402
from fastdec.data.gpt2_bpe import encode_line, load_encoder  # noqa: E402
from fastdec.tracks.gec.tables import table3  # noqa: E402
from fastdec.report.tables import OURS  # noqa: E402


def test_gec_bart_dry_run_offline(tmp_path):
    r = snakemake(tmp_path, "-n", "-p", "--configfile", str(REPO / "config/gec_bart.yaml"), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert ("fastdec bart-init --archive results/bart_downloads/bart.large.tar.gz --member bart.large/model.pt "
            "--decoder-layers 0,1 --output results/gec_bart12_2/gec/models/gec/bart_init.pt") in out
    train = next(line for line in out.splitlines() if "fastdec train --spec" in line)
    assert '"arch": "bart_large"' in train and '"decoder-layers": 2' in train
    assert '"finetune-from-model": "results/gec_bart12_2/gec/models/gec/bart_init.pt"' in train
    assert "--srcdict results/bart_downloads/dict.txt" in out
    assert "--gpt2-bpe results/bart_downloads/encoder.json results/bart_downloads/vocab.bpe" in out
    assert "--remove-bpe" not in out and "gec_table3.csv" in out


def test_bad_decoder_layer_list_is_a_schema_error(tmp_path):
    cfg = yaml.safe_load((REPO / "config/gec_bart.yaml").read_text())
    cfg["gec"]["model"]["init_from_bart"]["decoder_layers"] = [-1]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = snakemake(tmp_path, "-n", "--configfile", str(path), timeout=300)
    assert r.returncode != 0 and "decoder_layers" in r.stdout + r.stderr


def test_gpt2_bpe_with_character_tokenisation_is_a_config_error(tmp_path):
    cfg = yaml.safe_load((REPO / "config/gec_bart.yaml").read_text())
    cfg["gec"]["data"]["tokenisation"] = "char"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = snakemake(tmp_path, "-n", "--configfile", str(path), timeout=300)
    assert r.returncode != 0 and "gec.bpe.kind: gpt2" in r.stdout + r.stderr and "word-level M2" in r.stdout + r.stderr


def test_m2score_decodes_gpt2_hypotheses(tmp_path):
    files = gpt2_files(tmp_path / "gpt2")
    enc = load_encoder(str(files["encoder.json"]), str(files["vocab.bpe"]))
    (tmp_path / "hyp.txt").write_text(encode_line(enc, "I like the cat .") + "\n")
    (tmp_path / "gold.m2").write_text("S I likes the cat .\nA 1 2|||R:VERB:SVA|||like|||REQUIRED|||-NONE-|||0\n\n")
    r = subprocess.run([sys.executable, "-m", "fastdec", "m2score", str(tmp_path / "hyp.txt"),
                        str(tmp_path / "gold.m2"), "--gpt2-bpe", str(files["encoder.json"]), str(files["vocab.bpe"]),
                        "--json", str(tmp_path / "m2.json")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "m2.json").read_text())["f0.5"] == 1.0  # the one gold edit, nothing else


def test_table3_puts_our_12_2_rows_beside_the_papers():
    ours = pd.DataFrame({"system": ["Transformer (beam=5)", "Transformer (beam=1)", "IAD"],
                         "method": ["fairseq-beam5", "fairseq-greedy", "iad"], "eval_set": "bea19 test",
                         "F0.5": [60.0, 59.0, 59.0], "speedup_vs_beam": [1.0, 1.2, 4.0],
                         "speedup_vs_greedy": [0.8, 0.9, 3.0],
                         "identical_to_greedy_pct": [None, 100.0, 100.0], "source": OURS})
    df = table3(ours, bart_12_2=True).set_index("system")
    assert df.loc["IAD", "paper_F0.5"] == 66.4 and df.loc["IAD", "paper_speedup"] == 9.6
    # the paper's IAD over its own 12+2 greedy (9.6 / 2.3 over beam) beside ours over the engine's greedy
    assert df.loc["IAD", "paper_speedup_vs_greedy"] == 4.17 and df.loc["IAD", "speedup_vs_greedy"] == 3.0
    assert pd.isna(df.loc["Transformer (beam=1)", "paper_speedup_vs_greedy"])
    assert df.loc["Transformer (beam=1)", "paper_system"] == "12+2 BART-Init (beam=1)"
    assert not any(s.startswith("12+2 BART-Init") for s in df.index)  # no longer paper-only rows
    plain = table3(ours).set_index("system")
    assert sum(s.startswith("12+2 BART-Init") for s in plain.index) == 2
