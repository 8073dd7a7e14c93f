"""fairseq SequenceGenerator baseline, the engine_decode / benchmark_decoding CLIs, and a trained copy model."""
import csv
import json
import subprocess
import sys

import pytest
import torch

from conftest import REPO, copy_model, random_model
from fastdec.engine import FairseqGenerator, InputCopyDrafter, draft_verify_accept, greedy_decode

SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


def test_fairseq_generator_batch_1_and_batched():
    model, d, ver = random_model(1)
    g = torch.Generator().manual_seed(0)
    srcs = [torch.cat([torch.randint(4, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 12, (7,), generator=g)]
    # fairseq derives max_len from the *padded* batch width, so compare where it does not bind
    gen = FairseqGenerator(model, d, beam=1, max_len_a=0, max_len_b=60)
    one = gen.generate(srcs)
    batched = gen.generate(srcs, batch_size=3)
    assert [r.tokens for r in one] == [r.tokens for r in batched]
    assert [r.id for r in batched] == list(range(7)) and {r.batch_size for r in batched} == {3, 1}
    assert [r.tokens for r in one] == [greedy_decode(ver, s, max_len_a=0, max_len_b=60).tokens for s in srcs]
    beam = FairseqGenerator(model, d, beam=5, max_len_a=1.0, max_len_b=4).generate(srcs[:2])
    assert all(r.tokens[-1] == d.eos() and r.time > 0 for r in beam)
    with pytest.raises(ValueError, match="beam"):
        FairseqGenerator(model, d, beam=0)
    with pytest.raises(ValueError, match="batch_size"):
        gen.generate(srcs, batch_size=0)


@pytest.mark.slow
def test_iad_on_trained_copy_model_accepts_long_blocks():
    """A real (trained) fairseq model on a GEC-like task: IAD == greedy == fairseq beam 1, far fewer passes."""
    import numpy as np

    from fastdec.engine.testing import copy_task_batch

    model, d, ver = copy_model()
    src, lengths, prev, tgt = copy_task_batch(np.random.default_rng(123), d, batch=16)
    sources = [s[s != d.pad()] for s in src]
    kw = dict(max_len_a=1.2, max_len_b=5)
    fs = FairseqGenerator(model, d, beam=1, **kw).generate(sources)
    iters_g = iters_i = n_tok = correct = 0
    for s, f, t in zip(sources, fs, tgt):
        g = greedy_decode(ver, s, **kw)
        r = draft_verify_accept(ver, s, InputCopyDrafter(), **kw)
        assert r.tokens == g.tokens == f.tokens
        iters_g += g.stats.iterations
        iters_i += r.stats.iterations
        n_tok += len(r.tokens)
        correct += r.tokens == t[t != d.pad()].tolist()
    assert correct >= 8  # the model learned the task (mostly)
    assert n_tok / iters_i > 2.0 and iters_i * 2 < iters_g


def _decode(tmp_path, ckpt, databin, lines, method, *extra):
    import engine_decode

    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(lines) + "\n")
    out = tmp_path / f"{method}.hyp"
    stats = tmp_path / f"{method}.jsonl"
    summ = tmp_path / f"{method}.json"
    rc = engine_decode.main(["--checkpoint", str(ckpt), "--data-bin", str(databin), "--input", str(inp),
                             "--output", str(out), "--method", method, "--stats", str(stats), "--summary",
                             str(summ), "--threads", "1", "--max-len-a", "1.2", "--max-len-b", "5", *extra])
    assert rc == 0
    return (out.read_text().splitlines(), [json.loads(x) for x in stats.read_text().splitlines()],
            json.loads(summ.read_text()))


def _lines(databin):
    raw = (databin.parent / "test.src").read_text().splitlines()[:6]
    return raw + ["", "w1 w2 unknownword w3"]  # an empty source and an OOV token


def test_engine_decode_cli(tiny_checkpoint, tiny_databin, tmp_path):
    lines = _lines(tiny_databin)
    g, g_stats, g_sum = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "greedy", "--dtype", "float64")
    i, i_stats, i_sum = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "iad", "--dtype", "float64")
    f, f_stats, _ = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "fairseq-greedy", "--dtype", "float64")
    b, _, b_sum = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "fairseq-beam", "--beam", "3",
                          "--batch-size", "4")
    assert len(g) == len(i) == len(f) == len(b) == len(lines)
    assert g == i == f
    assert not any("</s>" in h for h in g + b)
    i8, i8_stats, i8_sum = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "iad", "--dtype", "float64",
                                   "--max-draft-len", "3")
    assert i8 == g and max(max(s["drafted"]) for s in i8_stats) <= 3 and i8_sum["label"] == "iad-draft3"
    for s in g_stats + i_stats:
        assert {"id", "time", "iterations", "accepted", "time_encoder", "time_drafter", "time_verifier",
                "time_other", "n_tokens"} <= set(s)
        assert len(s["accepted"]) == s["iterations"]
    assert [s["id"] for s in i_stats] == list(range(len(lines)))
    assert g_sum["n_sentences"] == len(lines) and g_sum["label"] == "greedy" and g_sum["dtype"] == "float64"
    assert b_sum["label"] == "fairseq-beam3-bs4" and f_stats[0]["iterations"] == f_stats[0]["n_tokens"]


@pytest.mark.parametrize("args, msg", [
    (["--method", "nope"], "unknown method"),
    (["--method", "fairseq-beam", "--beam", "0"], "beam"),
    (["--method", "iad", "--batch-size", "2"], "batch size must be 1"),
    (["--method", "iad", "--beta", "0"], "beta"),
    (["--method", "iad", "--tau", "-1"], "tau"),
    (["--method", "iad", "--acceptance", "top-k", "--topk", "0"], "k must be"),
    (["--method", "iad", "--min-block-size", "0"], "min_block_size"),
    (["--method", "fairseq-beam", "--tau", "1"], "does not take"),
    (["--method", "greedy", "--fp16"], "only supported on CUDA"),
    (["--method", "greedy", "--max-len-b", "-1"], "max-len"),
    (["--method", "greedy", "--threads", "0"], "threads"),
    (["--method", "iad", "--drafter-arg", "oops"], "KEY=VALUE"),
    (["--method", "iad", "--max-draft-len", "0"], "max draft length"),
    (["--method", "fairseq-greedy", "--max-draft-len", "4"], "does not take"),
])
def test_engine_decode_bad_args(tmp_path, args, msg):
    import engine_decode

    inp = tmp_path / "in.txt"
    inp.write_text("w1 w2\n")
    with pytest.raises(ValueError, match=msg):
        engine_decode.main(["--checkpoint", "x.pt", "--data-bin", str(tmp_path), "--input", str(inp),
                            "--output", str(tmp_path / "o"), *args])


def test_engine_decode_missing_files_exit_2(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPTS / "engine_decode.py"), "--checkpoint", str(tmp_path / "no.pt"),
                        "--data-bin", str(tmp_path), "--input", str(tmp_path / "missing.txt"),
                        "--output", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2 and "input file not found" in p.stderr


def test_benchmark_cli(tiny_checkpoint, tiny_databin, tmp_path):
    import benchmark_decoding

    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(_lines(tiny_databin)) + "\n")
    out = tmp_path / "bench.csv"
    rc = benchmark_decoding.main(["--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin),
                                  "--input", str(inp), "--methods", "fairseq-beam,fairseq-greedy,iad,greedy",
                                  "--batch-sizes", "4", "--threads", "1", "--warmup", "1", "--csv", str(out),
                                  "--max-len-a", "1.2", "--max-len-b", "5", "--hyp-prefix", str(tmp_path / "h")])
    assert rc == 0
    rows = list(csv.DictReader(out.open()))
    labels = [r["label"] for r in rows]
    assert labels == ["fairseq-beam5", "fairseq-beam5-bs4", "fairseq-greedy", "fairseq-greedy-bs4", "iad", "greedy"]
    by = {r["label"]: r for r in rows}
    n = len(_lines(tiny_databin))
    assert int(by["iad"]["identical_to_greedy"]) == n and int(by["greedy"]["identical_to_greedy"]) == n
    assert float(by["fairseq-beam5"]["speedup_vs_beam"]) == pytest.approx(1.0)
    assert all(float(r["sent_per_s"]) > 0 for r in rows)
    assert (tmp_path / "h.iad.txt").read_text().count("\n") == n
    # interleaved batch-1 runs, plus a draft-length cap variant
    rc = benchmark_decoding.main(["--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin),
                                  "--input", str(inp), "--methods", "fairseq-beam,iad,greedy", "--interleave",
                                  "--max-draft-lens", "3", "--batch-sizes", "2", "--repeats", "2", "--csv", str(out),
                                  "--max-len-a", "1.2", "--max-len-b", "5", "--warmup", "0"])
    rows = {r["label"]: r for r in csv.DictReader(out.open())}
    assert list(rows) == ["fairseq-beam5", "fairseq-beam5-bs2", "iad", "iad-draft3", "greedy"]
    assert int(rows["iad-draft3"]["identical_to_greedy"]) == n and int(rows["iad-draft3"]["n_sentences"]) == n


def test_benchmark_per_method_options_and_drafter_args(tiny_checkpoint, tiny_databin, tmp_path):
    """One run compares IAD settings given per method (acceptance and drafter arguments)."""
    import benchmark_decoding

    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(_lines(tiny_databin)) + "\n")
    out = tmp_path / "bench.csv"
    rc = benchmark_decoding.main([
        "--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin), "--input", str(inp),
        "--methods", "fairseq-beam,greedy,iad,iad:max_ngram=1:label=iad-1gram,iad:beta=3:tau=1",
        "--drafter-arg", "min_ngram=1", "--threads", "1", "--warmup", "0", "--csv", str(out),
        "--max-len-a", "1.2", "--max-len-b", "5", "--dtype", "float64"])
    assert rc == 0
    rows = {r["label"]: r for r in csv.DictReader(out.open())}
    assert list(rows) == ["fairseq-beam5", "greedy", "iad", "iad-1gram", "iad-top3-tau1"]
    n = len(_lines(tiny_databin))
    for label in ("iad", "iad-1gram"):  # exact acceptance: lossless whatever the drafter's arguments
        assert int(rows[label]["identical_to_greedy"]) == n
    assert json.loads(rows["iad-1gram"]["params"])["drafter_args"] == {"min_ngram": 1, "max_ngram": 1}
    assert json.loads(rows["iad-top3-tau1"]["params"])["beta"] == 3


@pytest.mark.parametrize("methods, extra, msg", [
    ("iad,iad:min_ngram=1", [], "label"),                 # two rows called "iad"
    ("iad:bogus=1", [], "bad arguments for drafter 'iad'"),
    ("greedy:max_ngram=2", [], "takes no drafter arguments"),
    ("iad:beta=0", [], "beta"),
    ("iad:oops", [], "KEY=VALUE"),
    ("iad", ["--drafter-arg", "nokey"], "KEY=VALUE"),
])
def test_benchmark_bad_method_options(tiny_checkpoint, tiny_databin, tmp_path, methods, extra, msg):
    import benchmark_decoding

    inp = tmp_path / "in.txt"
    inp.write_text("w1 w2\n")
    with pytest.raises(ValueError, match=msg):
        benchmark_decoding.main(["--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin),
                                 "--input", str(inp), "--methods", methods, "--csv", str(tmp_path / "b.csv"),
                                 *extra])


def test_engine_decode_drafter_arg_named_like_a_summary_key(tiny_checkpoint, tiny_databin, tmp_path):
    """A drafter argument called e.g. ``checkpoint`` must not clash with the summary's own keys."""
    from fastdec.engine.drafters import InputCopyDrafter, register_drafter

    register_drafter("iad-with-checkpoint", lambda checkpoint=None, **kw: InputCopyDrafter())
    lines = _lines(tiny_databin)
    out, _, summ = _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "iad-with-checkpoint",
                           "--drafter-arg", "checkpoint=other.pt", "--dtype", "float64")
    assert summ["checkpoint"] == str(tiny_checkpoint)
    assert summ["drafter_args"] == {"checkpoint": "other.pt"}
    assert out == _decode(tmp_path, tiny_checkpoint, tiny_databin, lines, "greedy", "--dtype", "float64")[0]
