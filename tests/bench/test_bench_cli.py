"""`python -m fastdec bench` on a real (tiny) fairseq-train checkpoint: every method decodes the same sentences on the
same weights; the lossless ones (engine greedy, IAD with or without a draft cap) and fairseq greedy reproduce the
engine's greedy output token for token; bad inputs are one `error:` line and exit status 2."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastdec.bench.results import read_run
from fastdec.cli import main

REPO = Path(__file__).resolve().parents[2]


def _input(tmp_path, tiny_databin, lines=None):
    if lines is None:  # six test sentences, an empty source and an out-of-vocabulary word
        lines = (tiny_databin.parent / "test.src").read_text().splitlines()[:6] + ["", "w1 w2 unknownword w3"]
    path = tmp_path / "in.txt"
    path.write_text("".join(line + "\n" for line in lines))
    return path, len(lines)


def _args(ckpt, databin, inp, out, methods, *extra):
    return ["bench", "--checkpoint", str(ckpt), "--data-bin", str(databin), "--input", str(inp), "--methods", methods,
            "--threads", "1", "--max-len-a", "1.2", "--max-len-b", "5", "--out-dir", str(out), *extra]


def test_bench_cli_methods_agree_with_greedy(tiny_checkpoint, tiny_databin, tmp_path):
    inp, n = _input(tmp_path, tiny_databin)
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "fastdec", *_args(
        tiny_checkpoint, tiny_databin, inp, out, "fairseq:beam=5,fairseq:beam=1,iad,iad:max_draft_len=3",
        "--dtype", "float64", "--warmup", "1")], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    run = read_run(str(out))
    # engine greedy is added as the reference of identical_to_greedy
    assert list(run.summary.index) == ["fairseq-beam5", "fairseq-greedy", "iad", "iad-draft3", "greedy"]
    for label in ("fairseq-greedy", "iad", "iad-draft3", "greedy"):
        assert run.row(label)["identical_to_greedy"] == n, label
        assert run.hyps(label) == run.hyps("greedy")
    assert run.row("fairseq-beam5")["speedup_vs_beam"] == pytest.approx(1.0)
    assert (run.summary["sent_per_s"] > 0).all() and (run.summary["n_sentences"] == n).all()
    assert run.row("iad")["exact"] and not run.row("fairseq-greedy")["exact"]
    assert len(run.hyps("fairseq-beam5")) == n and not any("</s>" in h for h in run.hyps("fairseq-beam5"))
    recs = run.records()
    assert [r.id for r in recs["iad"]] == list(range(n))
    assert max(d for r in recs["iad-draft3"] for d in r.drafted) <= 3
    assert all(len(r.accepted) == r.iterations and r.tokens[-1] == 2 for r in recs["iad"] + recs["greedy"])
    assert all(r.iterations == len(r.tokens) for r in recs["fairseq-greedy"])  # one decoder step per token
    assert sum(r.iterations for r in recs["iad"]) <= sum(r.iterations for r in recs["greedy"])
    assert run.meta["dtype"] == "float64" and run.meta["threads"] == 1 and run.meta["sentences"] == n
    assert run.meta["speed_baseline"] == "fairseq-beam5" and run.meta["checkpoint"] == str(tiny_checkpoint)


def test_bench_cli_batched_fairseq_repeats_blocks_and_drafter_args(tiny_checkpoint, tiny_databin, tmp_path):
    inp, n = _input(tmp_path, tiny_databin)
    out = tmp_path / "run"
    rc = main(_args(tiny_checkpoint, tiny_databin, inp, out,
                    "fairseq:beam=5,fairseq:beam=5:batch=4,greedy,iad,iad:max_ngram=1:label=iad-1gram,"
                    "iad:beta=3:tau=1", "--drafter-arg", "min_ngram=1", "--repeats", "2", "--warmup", "0",
                    "--dtype", "float64", "--block", "2"))
    assert rc == 0
    run = read_run(str(out))
    assert run.meta["repeats"] == run.meta["block"] == 2
    assert list(run.summary.index) == ["fairseq-beam5", "fairseq-beam5-bs4", "greedy", "iad", "iad-1gram",
                                       "iad-top3-tau1"]
    assert run.hyps("fairseq-beam5-bs4") == run.hyps("fairseq-beam5")
    for label in ("iad", "iad-1gram"):  # exact acceptance: lossless whatever the drafter's arguments
        assert run.row(label)["identical_to_greedy"] == n
    methods = {m.label: m for m in run.methods()}
    assert methods["iad-1gram"].drafter_args == {"min_ngram": 1, "max_ngram": 1}
    assert methods["iad"].drafter_args == {"min_ngram": 1}
    assert methods["iad-top3-tau1"].beta == 3 and not run.row("iad-top3-tau1")["exact"]


def test_bench_cli_batched_engine_methods_are_lossless(tiny_checkpoint, tiny_databin, tmp_path):
    inp, n = _input(tmp_path, tiny_databin)
    out = tmp_path / "run"
    rc = main(_args(tiny_checkpoint, tiny_databin, inp, out, "greedy,greedy:batch=3,iad:batch=3,iad:batch=8",
                    "--dtype", "float64", "--warmup", "1"))
    assert rc == 0
    run = read_run(str(out))
    assert list(run.summary.index) == ["greedy", "greedy-bs3", "iad-bs3", "iad-bs8"]
    for label in ("greedy-bs3", "iad-bs3", "iad-bs8"):
        assert run.row(label)["identical_to_greedy"] == n and run.hyps(label) == run.hyps("greedy"), label
        assert run.row(label)["ms_per_batch"] > 0
    assert run.row("iad-bs3")["batch_size"] == 3 and run.row("iad-bs3")["speedup_vs_greedy_same_batch"] > 0
    assert [r.id for r in run.records()["iad-bs3"]] == list(range(n))


@pytest.mark.parametrize("methods, extra, msg", [
    ("nope", [], "unknown method"),
    ("fairseq:beam=0", [], "beam"),
    ("fairseq:max_draft_len=4", [], "only beam and batch"),
    ("iad,iad:min_ngram=1", [], "label iad"),                 # two rows called "iad"
    ("greedy:max_ngram=2", [], "greedy takes no"),
    ("iad:beta=0", [], "beta"),
    ("iad:tau=-1", [], "tau"),
    ("iad:max_draft_len=0", [], "max_draft_len"),
    ("iad:oops", [], "KEY=VALUE"),
    ("iad", ["--drafter-arg", "nokey"], "KEY=VALUE"),
    ("greedy", ["--threads", "0"], "threads"),
    ("greedy", ["--block", "0"], "--block"),
    ("greedy", ["--ref", "refs.txt"], "--ref needs --lang"),
    ("greedy", ["--dtype", "float16"], "only supported on CUDA"),
    ("iad:bogus=1", [], "bad arguments for drafter 'iad'"),
    ("iad:batch=0", [], "batch"),
])
def test_bench_cli_bad_input_is_one_error_line(tiny_checkpoint, tiny_databin, tmp_path, capsys, methods, extra, msg):
    inp, _ = _input(tmp_path, tiny_databin, ["w1 w2"])
    rc = main(_args(tiny_checkpoint, tiny_databin, inp, tmp_path / "run", methods, *extra))
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error:") and msg in err, err
    assert not (tmp_path / "run" / "summary.csv").exists()


def test_bench_cli_missing_and_empty_input_exit_2(tiny_checkpoint, tiny_databin, tmp_path, capsys):
    def bench(inp):
        rc = main(_args(tiny_checkpoint, tiny_databin, inp, tmp_path / "run", "greedy"))
        return rc, capsys.readouterr().err

    rc, err = bench(tmp_path / "missing.txt")
    assert rc == 2 and "missing.txt: file not found" in err and "Traceback" not in err
    (tmp_path / "empty.txt").write_text("")
    rc, err = bench(tmp_path / "empty.txt")
    assert rc == 2 and "is empty" in err
    (tmp_path / "one.txt").write_text("w1\n")
    assert bench(tmp_path / "one.txt")[0] == 0
    assert json.loads((tmp_path / "run" / "meta.json").read_text())["sentences"] == 1


def test_a_fast_row_that_fell_back_says_what_decoded_it(tiny_checkpoint, tiny_databin, tmp_path, monkeypatch):
    """No C compiler: the fast rows decode on the PyTorch reference, and summary.csv says so (backend_ran)."""
    import fastdec.engine.fast_verifier as fv

    monkeypatch.setattr(fv, "_LIBS", {})
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    inp, n = _input(tmp_path, tiny_databin)
    out = tmp_path / "run"
    assert main(_args(tiny_checkpoint, tiny_databin, inp, out, "iad,iad:backend=fast", "--warmup", "0")) == 0
    s = read_run(str(out)).summary
    assert s.loc["iad-fast", "backend"] == "fast" and s.loc["iad-fast", "backend_ran"] == "torch"
    assert s.loc["iad", "backend_ran"] == "torch" and s.loc["iad-fast", "identical_to_greedy"] == n
