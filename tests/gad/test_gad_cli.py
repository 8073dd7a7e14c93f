"""The GAD drafter through real fairseq checkpoints: registry/engine CLI, the benchmark CLI, clear errors on bad
inputs, and the drafter initialised from all verifier weights (fastdec/gad/init_drafter.py)."""
import copy
import csv
import json
import os
import subprocess
import sys

import pytest
import torch

from gad_helpers import BIN, PLUGIN, REPO, _train, gad_checkpoints  # noqa: F401  (fixture)

SCRIPTS = REPO / "scripts"


def _write_src(tiny_databin, tmp_path, n=12):
    """BPE'd source lines = the test split's source side, decoded from the data-bin."""
    from fairseq.data import Dictionary, data_utils

    d = Dictionary.load(str(tiny_databin / "dict.src.txt"))
    ds = data_utils.load_indexed_dataset(str(tiny_databin / "test.src-tgt.src"), d)
    lines = [d.string(ds[i]) for i in range(n)]
    p = tmp_path / "test.src"
    p.write_text("\n".join(lines) + "\n")
    ref = tmp_path / "test.ref"
    ref.write_text("\n".join(lines) + "\n")  # any reference will do for the plumbing
    return p, ref


def _run(args, **kw):
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env, timeout=300,
                          **kw)


def test_registry_and_engine_decode_cli(gad_checkpoints, tiny_databin, tmp_path):
    ver_ckpt, nat_ckpt = gad_checkpoints
    from fastdec.engine import Verifier, accept_top1, draft_verify_accept, greedy_decode, make_drafter
    from fastdec.engine.load import load_model
    from fastdec.engine.nat_drafter import NATDrafter, load_nat_drafter

    loaded = load_model(ver_ckpt, tiny_databin, dtype="float64")
    ver = Verifier(loaded.model)
    ctx = {"loaded": loaded, "verifier": ver, "device": ver.device, "dtype": ver.dtype}
    drafter = make_drafter("gad", context=ctx, checkpoint=str(nat_ckpt))
    assert isinstance(drafter, NATDrafter) and drafter.k == drafter.trained_k == 4
    assert make_drafter("gad", context=ctx, checkpoint=str(nat_ckpt), k=7).k == 7
    src_file, _ = _write_src(tiny_databin, tmp_path)
    lines = src_file.read_text().splitlines()
    for line in lines:
        s = loaded.encode(line)
        assert draft_verify_accept(ver, s, drafter, accept_top1, max_len_a=1.2, max_len_b=10).tokens == \
            greedy_decode(ver, s, max_len_a=1.2, max_len_b=10).tokens
    # bad inputs: clear errors
    for bad in (dict(k=0), dict(k=-2), dict(k=100000)):
        with pytest.raises(ValueError, match="block size"):
            make_drafter("gad", context=ctx, checkpoint=str(nat_ckpt), **bad)
    with pytest.raises(ValueError, match="exactly one"):
        make_drafter("gad", context=ctx)
    with pytest.raises(ValueError, match="not found"):
        make_drafter("gad", context=ctx, checkpoint=str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="not a nat_block_drafter"):
        load_nat_drafter(ver_ckpt, tiny_databin, verifier=ver)
    other = copy.deepcopy(loaded.tgt_dict)
    other.symbols[5] = "something-else"
    with pytest.raises(ValueError, match="another dictionary"):
        load_nat_drafter(nat_ckpt, tiny_databin, verifier=ver, verifier_dict=other, cache=False)

    # the engine's own CLI loads the drafter module and builds it by name
    out = tmp_path / "gad.txt"
    r = _run([SCRIPTS / "engine_decode.py", "--checkpoint", ver_ckpt, "--data-bin", tiny_databin, "--input", src_file,
              "--max-len-a", "1.2", "--max-len-b", "10", "--dtype", "float64", "--output", out, "--method", "gad",
              "--drafter-module", "fastdec.engine.nat_drafter", "--drafter-arg", f"drafter_checkpoint={nat_ckpt}",
              "--acceptance", "top-beta", "--beta", "1", "--tau", "0"])
    assert r.returncode == 0, r.stderr[-2000:]
    greedy = [loaded.decode(greedy_decode(ver, loaded.encode(x), max_len_a=1.2, max_len_b=10).tokens) for x in lines]
    assert out.read_text().splitlines() == greedy


def test_gad_bench_cli_and_errors(gad_checkpoints, tiny_databin, tmp_path):
    ver_ckpt, nat_ckpt = gad_checkpoints
    src, ref = _write_src(tiny_databin, tmp_path)
    out = tmp_path / "bench"
    base = [SCRIPTS / "gad_bench.py", "--verifier", ver_ckpt, "--drafter", nat_ckpt, "--data-bin", tiny_databin,
            "--input", src, "--ref", ref, "--lang", "en", "--warmup", "1"]
    systems = "at_b5,at_b1,greedy,nat_k4,gad_k4,gad_k2,gadpp_k4_b3_t1,gadpp_k4_b5_t3"
    r = _run(base + ["--systems", systems, "--out-dir", out])
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {row["system"]: row for row in csv.DictReader(open(out / "summary.csv"))}
    assert list(rows) == systems.split(",")
    for name in ("greedy", "at_b1", "gad_k4", "gad_k2"):
        assert float(rows[name]["identical_to_greedy_pct"]) == 100.0, name
    assert float(rows["at_b5"]["speed_vs_at_b5"]) == 1.0
    assert float(rows["gad_k4"]["tokens_per_iteration"]) >= 1.0
    assert (out / "hyps" / "gad_k4.detok").read_text().count("\n") == 12
    meta = json.loads((out / "meta.json").read_text())
    assert meta["sentences"] == 12
    # table / figure CLIs on the run
    t1 = tmp_path / "t1.csv"
    r = _run([SCRIPTS / "gad_tables.py", "table1", "--summary", out / "summary.csv", "--output", t1])
    assert r.returncode == 0, r.stderr[-2000:]
    r = _run([SCRIPTS / "gad_figure.py", "--sentences", out / "sentences.jsonl", "--system", "gadpp_k4_b5_t3",
              "--output", tmp_path / "f.png"])
    assert r.returncode == 0 and (tmp_path / "f.png").exists(), r.stderr[-2000:]
    # bad inputs: one clear line and exit 2 from the CLI; the same errors in-process
    r = _run(base + ["--systems", "greedy,gad_k0", "--out-dir", tmp_path / "bad"])
    assert r.returncode == 2 and "block size k must be" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import gad_bench

    argv = [str(x) for x in base[1:]] + ["--out-dir", str(tmp_path / "bad")]
    for bad, msg in (("gadpp_k4_b0_t1", "top-beta"), ("gadpp_k4_b3_t-1", "unknown system"),
                     ("gad_k5000", "larger than the drafter supports")):
        with pytest.raises(ValueError, match=msg):
            gad_bench.main(argv + ["--systems", f"greedy,{bad}"])


def test_drafter_initialised_from_all_verifier_weights(gad_checkpoints, tiny_databin, tmp_path):
    from fastdec.gad.init_drafter import build_init_checkpoint

    ver_ckpt, _ = gad_checkpoints
    init = tmp_path / "init.pt"
    rep = build_init_checkpoint(str(ver_ckpt), str(tiny_databin / "dict.tgt.txt"), str(init))
    assert "decoder.embed_tokens.weight" in rep["extended"]
    with pytest.raises(ValueError, match="symbols"):
        bad = tmp_path / "dict.txt"
        bad.write_text("a 1\nb 1\n")
        build_init_checkpoint(str(ver_ckpt), str(bad), str(tmp_path / "x.pt"))
    save = tmp_path / "ft"
    # transformer_tiny: 2+2 layers, 64 dims, FFN 64, 2 heads; lr ~0 so the weights stay the verifier's
    _train([str(BIN / "fairseq-train"), str(tiny_databin), "--user-dir", str(PLUGIN), "--task", "block_drafting",
            "--block-size", "3", "--arch", "nat_block_drafter_tiny", "--encoder-ffn-embed-dim", "64",
            "--decoder-ffn-embed-dim", "64", "--share-all-embeddings", "--criterion", "glat_block_loss",
            "--optimizer", "adam", "--lr", "1e-9", "--max-tokens", "500", "--max-update", "1", "--cpu",
            "--save-dir", str(save), "--no-epoch-checkpoints", "--disable-validation", "--num-workers", "0",
            "--finetune-from-model", str(init)])
    ver = torch.load(ver_ckpt, map_location="cpu", weights_only=False)["model"]
    nat = torch.load(save / "checkpoint_last.pt", map_location="cpu", weights_only=False)["model"]
    for key in ("decoder.layers.1.fc2.weight", "encoder.layers.0.self_attn.q_proj.weight"):
        assert torch.allclose(ver[key], nat[key], atol=1e-5), key
    n = ver["decoder.embed_tokens.weight"].shape[0]
    assert nat["decoder.embed_tokens.weight"].shape[0] == n + 1
    assert torch.allclose(nat["decoder.embed_tokens.weight"][:n], ver["decoder.embed_tokens.weight"], atol=1e-5)
