"""The method grammar and the results schema: labels, errors, and summary figures on inputs with known answers."""
import json

import pandas as pd
import pytest

from fastdec.bench.methods import parse_method, parse_methods
from fastdec.bench.results import SUMMARY_COLUMNS, Record, backend_identical_pct, read_run, summarize, write_run


@pytest.mark.parametrize("text,label", [
    ("fairseq", "fairseq-beam5"), ("fairseq:beam=1", "fairseq-greedy"), ("fairseq:beam=4:batch=32", "fairseq-beam4-bs32"),
    ("greedy", "greedy"), ("iad", "iad"), ("iad:max_draft_len=16", "iad-draft16"), ("gad:k=10", "gad-k10"),
    ("gad:k=10:beta=3:tau=1", "gad-k10-top3-tau1"), ("gad:k=25:beta=5:tau=1.5", "gad-k25-top5-tau1.5"),
    ("nat:k=10", "nat-k10"), ("blockwise:k=8:topk=2:min_block=2:precision=int8", "blockwise-k8-top2-min2-int8"),
    ("iad:label=mine", "mine"), ("iad:batch=8", "iad-bs8"), ("gad:k=10:beta=3:tau=1:batch=4", "gad-k10-top3-tau1-bs4"),
    ("greedy:batch=32", "greedy-bs32"), ("blockwise:k=4:batch=2", "blockwise-k4-bs2"), ("greedy:batch=1", "greedy"),
    ("blockwise:k=6:eps=2", "blockwise-k6-eps2"), ("blockwise:k=6:eps=0", "blockwise-k6"),
])
def test_labels_and_round_trip(text, label):
    m = parse_method(text)
    assert m.label == label
    assert parse_method(m.spec) == m and parse_method(m.spec).label == label


def test_exactness_and_drafter_args():
    assert parse_method("gad:k=10").exact and parse_method("blockwise:k=4").exact and parse_method("iad").exact
    assert not parse_method("gad:k=10:beta=3").exact and not parse_method("blockwise:k=4:min_block=2").exact
    assert not parse_method("fairseq:beam=1").exact and not parse_method("nat:k=4").exact
    assert not parse_method("blockwise:k=4:eps=2").exact and parse_method("blockwise:k=4:eps=0").exact
    m = parse_method("gad:k=5:checkpoint=a.pt", drafter_args={"checkpoint": "default.pt", "data_bin": "d"})
    assert m.drafter_args == {"checkpoint": "a.pt", "data_bin": "d"}
    assert parse_method("gad:k=10:tau=2").beta == 3  # tau alone means GAD++ with the paper's default beta


@pytest.mark.parametrize("text,words", [
    ("beam", "unknown method"), ("fairseq:beam=0", "beam"), ("fairseq:k=3", "only beam and batch"),
    ("gad", "needs a block size"), ("gad:k=0", "k must be"), ("gad:k=4:tau=-1", "tau"),
    ("greedy:k=3", "greedy takes no"), ("nat:k=4:beta=3", "no acceptance"), ("blockwise:k=4:min_block=5", "min_block"),
    ("gad:k=4:beta=2:topk=2", "give one"), ("blockwise:k=4:topk=2:eps=2", "give one"), ("blockwise:k=4:eps=-1", "eps"), ("nat:k=4:batch=2", "no batch option"), ("iad:batch=0", "batch"),
    ("greedy:batch=two", "batch"), ("blockwise:k=4:precision=fp8", "precision"), ("iad:beta", "KEY=VALUE"),
])
def test_bad_methods_name_the_problem(text, words):
    with pytest.raises(ValueError, match=words):
        parse_method(text)


def test_duplicate_labels_are_refused():
    with pytest.raises(ValueError, match="label gad-k4"):
        parse_methods("gad:k=4,gad:k=4:checkpoint=x.pt")


def _rec(label, i, tokens, time, iterations, accepted=(), **kw):
    return Record(label, i, list(tokens), time, iterations, accepted=list(accepted), drafted=[len(accepted)] * 0,
                  **kw)


def _toy_run():
    methods = parse_methods("fairseq:beam=5,fairseq:beam=1,greedy,gad:k=4,gad:k=4:beta=3:tau=1")
    g = [[5, 6, 2], [7, 2], [8, 9, 10, 2]]
    records = {
        "fairseq-beam5": [_rec("fairseq-beam5", i, t, 0.4, len(t)) for i, t in enumerate([[5, 2], [7, 2], [8, 2]])],
        "fairseq-greedy": [_rec("fairseq-greedy", i, t, 0.2, len(t)) for i, t in enumerate(g)],
        "greedy": [_rec("greedy", i, t, 0.1, len(t), accepted=[0] * len(t)) for i, t in enumerate(g)],
        # sentence 2 in 2 passes (3 + 1 tokens), the others in one
        "gad-k4": [_rec("gad-k4", 0, g[0], 0.05, 1, [2]), _rec("gad-k4", 1, g[1], 0.05, 1, [1]),
                   _rec("gad-k4", 2, g[2], 0.1, 2, [2, 0], time_modules={"drafter_encoder": 0.01})],
        "gad-k4-top3-tau1": [_rec("gad-k4-top3-tau1", 0, [5, 5, 2], 0.04, 1, [2]),
                             _rec("gad-k4-top3-tau1", 1, g[1], 0.04, 1, [1]),
                             _rec("gad-k4-top3-tau1", 2, g[2], 0.04, 1, [3])],
    }
    return methods, records


def test_summary_figures_on_known_inputs():
    methods, records = _toy_run()
    df = summarize(methods, records).set_index("label")
    assert list(df.reset_index().columns) == SUMMARY_COLUMNS
    # speedups: beam 5 took 1.2 s, engine greedy 0.3 s, GAD 0.2 s, GAD++ 0.12 s
    assert df.loc["gad-k4", "speedup_vs_beam"] == pytest.approx(6.0)
    assert df.loc["gad-k4", "speedup_vs_greedy"] == pytest.approx(1.5)
    assert df.loc["fairseq-greedy", "speedup_vs_beam"] == pytest.approx(2.0)
    assert df.loc["gad-k4-top3-tau1", "speedup_vs_beam"] == pytest.approx(10.0)
    # identical to the engine's greedy output: beam 5 agrees on sentence 1 only, GAD++ differs on sentence 0
    assert df.loc["fairseq-beam5", "identical_to_greedy"] == 1
    assert df.loc["gad-k4-top3-tau1", "identical_to_greedy"] == 2
    assert df.loc["gad-k4-top3-tau1", "identical_to_greedy_pct"] == pytest.approx(200 / 3)
    assert df.loc["gad-k4", "identical_to_greedy"] == 3 and df.loc["greedy", "identical_to_greedy"] == 3
    # 9 output tokens in 4 passes; accepted draft tokens 5 over 4 iterations; Blockwise k̂: (4-1)/(2-1) = 3
    assert df.loc["gad-k4", "tokens_per_iteration"] == pytest.approx(9 / 4)
    assert df.loc["gad-k4", "mean_accepted"] == pytest.approx(5 / 4)
    assert df.loc["gad-k4", "mean_block"] == pytest.approx(3.0)
    assert df.loc["greedy", "mean_block"] == pytest.approx(1.0) and df.loc["greedy", "tokens_per_iteration"] == 1
    assert df.loc["gad-k4", "time_drafter_encoder_s"] == pytest.approx(0.01)
    assert pd.isna(df.loc["fairseq-beam5", "mean_accepted"]) and df.loc["gad-k4", "exact"]
    assert not df.loc["gad-k4-top3-tau1", "exact"] and df.loc["gad-k4-top3-tau1", "beta"] == 3


def test_speed_baseline_is_the_beam_run_not_the_first_row():
    methods, records = _toy_run()
    methods = methods[1:] + methods[:1]  # beam 5 listed last
    df = summarize(methods, records).set_index("label")
    assert df.loc["gad-k4", "speedup_vs_beam"] == pytest.approx(6.0)
    assert summarize(methods, records, beam_label="fairseq-greedy").set_index("label").loc[
        "gad-k4", "speedup_vs_beam"] == pytest.approx(3.0)


def test_write_and_read_run(tmp_path):
    methods, records = _toy_run()
    vocab = {5: "the ho@@", 6: "use is red", 7: "a cat sat on the mat", 8: "one", 9: "two three four", 10: "five"}
    decode = lambda toks: " ".join(vocab[t] for t in toks if t != 2)  # noqa: E731
    refs = ["the house is red", "a cat sat on the mat", "one two three four five"]
    write_run(str(tmp_path), methods, records, decode, refs=refs, lang="en", meta={"threads": 1})
    run = read_run(str(tmp_path))
    assert run.row("greedy")["bleu"] == 100.0 and run.row("fairseq-beam5")["bleu"] < 100
    assert run.hyps("greedy")[0] == "the ho@@ use is red"
    assert run.meta["speed_baseline"] == "fairseq-beam5" and run.meta["threads"] == 1
    assert [m.label for m in run.methods()] == [m.label for m in methods]
    first2 = run.resummarize(first=2)
    assert first2.loc["gad-k4", "n_sentences"] == 2
    assert first2.loc["gad-k4", "speedup_vs_beam"] == pytest.approx(0.8 / 0.1)
    lines = (tmp_path / "sentences.jsonl").read_text().splitlines()
    assert len(lines) == 15 and json.loads(lines[0])["label"] == "fairseq-beam5"


def test_old_results_directory_says_what_to_do(tmp_path):
    pd.DataFrame({"system": ["at_b5"], "speed_vs_at_b5": [1.0]}).to_csv(tmp_path / "summary.csv", index=False)
    with pytest.raises(ValueError, match="older fastdec.*rerun snakemake"):
        read_run(str(tmp_path))


def test_batched_rows_latency_per_batch_and_same_batch_speedup():
    methods = parse_methods("greedy,greedy:batch=2,iad:batch=2,fairseq:beam=5:batch=2")
    g = [[5, 2], [6, 2], [7, 2]]
    records = {m.label: [_rec(m.label, i, t, time, 2) for i, t in enumerate(g)]
               for m, time in zip(methods, (0.3, 0.1, 0.05, 0.2))}
    df = summarize(methods, records).set_index("label")
    # 3 sentences at batch 2 are 2 batches: greedy-bs2 took 0.3 s in all, 150 ms per batch
    assert df.loc["greedy-bs2", "ms_per_batch"] == pytest.approx(150.0)
    assert df.loc["greedy", "ms_per_batch"] == pytest.approx(300.0)
    assert df.loc["iad-bs2", "speedup_vs_greedy_same_batch"] == pytest.approx(2.0)
    assert df.loc["iad-bs2", "speedup_vs_greedy"] == pytest.approx(6.0)
    assert df.loc["greedy-bs2", "batch_size"] == 2 and df.loc["iad-bs2", "identical_to_greedy"] == 3
    assert df.loc["greedy", "speedup_vs_greedy_same_batch"] == pytest.approx(1.0)


def test_backend_key_of_engine_methods():
    m = parse_method("iad:backend=fast")
    assert (m.backend, m.label, m.params()["backend"]) == ("fast", "iad-fast", "fast")
    assert parse_method(m.spec) == m and parse_method("greedy:backend=fast").label == "greedy-fast"
    assert parse_method("gad:k=10:beta=3:tau=1:backend=fast").label == "gad-k10-top3-tau1-fast"
    assert parse_method("iad").backend == "torch" and parse_method("fairseq:beam=5").params()["backend"] is None
    assert parse_method("iad:backend=fast:batch=4").label == "iad-fast-bs4"  # the fast backend batches too
    for bad, msg in [("iad:backend=cuda", "backend must be one of torch, fast"),
                     ("nat:k=4:backend=fast", "nat .* has no verifier"),
                     ("fairseq:backend=fast", "fairseq takes only")]:
        with pytest.raises(ValueError, match=msg):
            parse_method(bad)


def test_identical_to_backend_greedy_holds_each_row_to_its_own_backend():
    """A fast-backend greedy that differs from the reference on one sentence (a float32 near-tie): its GAD row is
    lossless against it (3 of 3) while both show 2 of 3 against the reference's greedy output."""
    methods, records = _toy_run()
    g = [r.tokens for r in records["greedy"]]
    fast = [g[0], g[1], [4, 2]]
    methods = methods + parse_methods("greedy:backend=fast,gad:k=4:backend=fast")
    records["greedy-fast"] = [_rec("greedy-fast", i, t, 0.05, len(t)) for i, t in enumerate(fast)]
    records["gad-k4-fast"] = [_rec("gad-k4-fast", i, t, 0.03, 1, [1]) for i, t in enumerate(fast)]
    df = summarize(methods, records).set_index("label")
    for label in ("greedy-fast", "gad-k4-fast"):
        assert (df.loc[label, "identical_to_greedy"], df.loc[label, "identical_to_backend_greedy"]) == (2, 3)
        assert df.loc[label, "identical_to_backend_greedy_pct"] == 100.0
        assert df.loc[label, "backend"] == "fast"
    # a summary written before the percentage column: the tables read it from the count
    older = df.loc["gad-k4-fast"].drop("identical_to_backend_greedy_pct")
    assert backend_identical_pct(older) == 100.0
    assert backend_identical_pct(older.copy().set_axis(older.index).where(
        older.index != "identical_to_backend_greedy", 2)) == pytest.approx(200 / 3)
    assert backend_identical_pct(df.loc["fairseq-beam5"]) is None
    assert df.loc["gad-k4", "identical_to_backend_greedy"] == 3 and df.loc["gad-k4", "backend"] == "torch"
    assert pd.isna(df.loc["fairseq-beam5", "identical_to_backend_greedy"])
    # speedups stay against the reference's greedy decoding (greedy-fast is not the baseline of anything)
    assert df.loc["gad-k4-fast", "speedup_vs_greedy"] == pytest.approx(0.3 / 0.09)
