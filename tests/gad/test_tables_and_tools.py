"""Unit tests of the GAD track's pieces: its runs and tables on synthetic results runs (written with the common
schema, fastdec.bench.results.write_run) whose answers are known, the repetition ratio, the drafter's parameter
checks and the case-study formatting."""
import math

import pandas as pd
import pytest
import torch

from gad_helpers import REPO, build_random_drafter, verifier_and_dict
from fastdec.bench.methods import parse_method, parse_methods
from fastdec.bench.results import Record, read_run, write_run
from fastdec.tracks.gad import tables
from fastdec.tracks.gad.case_study import Iteration, Trace, format_trace, select_examples, trace
from fastdec.tracks.gad import outputs as gad_outputs
from fastdec.tracks.gad import plan as gad

# ---------------------------------------------------------------------- synthetic runs

WORDS = {5: "a", 6: "b", 7: "c", 8: "d", 9: "f"}
GREEDY = [[5, 6, 7, 2], [8, 9, 2]]
# label-defining spec -> (per-sentence times, tokens, iterations, accepted per iteration); the fairseq greedy run
# comes first and is faster than beam search: a table using the first row (or greedy) as its baseline gets other
# speedups than the beam-5 baseline's
SYNTH = {
    "fairseq:beam=1": ([4.0, 4.0], GREEDY, None, None),
    "fairseq:beam=5": ([6.0, 6.0], [[5, 6, 7, 2], [8, 8, 2]], None, None),
    "greedy": ([3.0, 3.0], GREEDY, [4, 3], [[0] * 4, [0] * 3]),
    "nat:k=4": ([0.5, 0.5], [[5, 5, 5, 2], [8, 8, 2]], [1, 1], None),
    "gad:k=4": ([1.5, 1.5], GREEDY, [2, 1], [[2, 0], [2]]),
    "gad:k=2": ([2.0, 2.0], GREEDY, [2, 2], [[1, 1], [1, 0]]),
    "gad:k=4:beta=3:tau=1": ([1.2, 1.2], [[5, 6, 6, 2], [8, 9, 2]], [1, 1], [[3], [2]]),
    "gad:k=2:beta=3:tau=1": ([1.5, 1.5], GREEDY, [2, 1], [[1, 1], [2]]),
    "gad:k=4:beta=5:tau=3": ([0.5, 1.5], [[5, 6, 6, 2], [8, 9, 2]], [1, 1], [[3], [2]]),
    "gad:k=4:beta=3:tau=3": ([1.1, 1.1], GREEDY, [1, 1], [[3], [2]]),
    "gad:k=4:beta=5:tau=1": ([1.15, 1.15], GREEDY, [1, 1], [[3], [2]]),
}


def _record(m, i, time, tokens, iterations, accepted):
    r = Record(m.label, i, tokens, time, iterations or len(tokens), src_len=4)
    if m.kind != "fairseq":
        r.accepted = list(accepted or [])
        r.drafted = [m.k or 0] * len(r.accepted)
        # modules: 10 % AT encoder, 50 % drafter (10 % its encoder, 30 % its decoder, 10 % its own), 30 % AT
        # decoder, 10 % the loop's
        r.time_encoder, r.time_drafter, r.time_verifier, r.time_other = .1 * time, .5 * time, .3 * time, .1 * time
        if m.drafter:
            r.time_modules = {"drafter_encoder": .1 * time, "drafter_decoder": .3 * time}
    return r


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    """A results run of every method of SYNTH, two sentences each, in the common schema."""
    out = tmp_path_factory.mktemp("run")
    methods = parse_methods(list(SYNTH))
    records = {m.label: [_record(m, i, t, tok, it[i] if it else None, acc[i] if acc else None)
                         for i, (t, tok) in enumerate(zip(times, toks))]
               for m, (times, toks, it, acc) in zip(methods, SYNTH.values())}
    write_run(str(out), methods, records, lambda toks: " ".join(WORDS[t] for t in toks if t != 2),
              refs=["a b c", "d f"], lang="en")
    return read_run(str(out))


def test_table1_speedups_against_beam_search_and_paper_rows(synthetic_run):
    full = tables.table1(synthetic_run).set_index("label")
    t = full[full["source"] == "ours"]
    assert list(t.index) == [parse_method(s).label for s in SYNTH]
    # the NAT systems Xia's Table 1 cites, and the five more of Ge's Table 5
    assert (full["source"] == "paper only (cited)").sum() == 14 + 5
    assert t.loc["gad-k4", "speedup_vs_beam"] == 4.0 and t.loc["fairseq-beam5", "speedup_vs_beam"] == 1.0
    assert t.loc["fairseq-greedy", "speedup_vs_beam"] == 1.5 and t.loc["gad-k4-top5-tau3", "speedup_vs_beam"] == 6.0
    assert t.loc["gad-k4", "mean_iterations"] == 1.5 and t.loc["gad-k4", "tokens_per_iteration"] == 2.33
    assert t.loc["gad-k4", "mean_accepted"] == 1.33 and math.isnan(t.loc["greedy", "mean_accepted"])
    assert t.loc["gad-k4-top3-tau1", "identical_to_greedy"] == 1 and t.loc["gad-k4", "identical_to_greedy_pct"] == 100
    assert t.loc["fairseq-beam5", "paper_bleu"] == 28.89 and t.loc["fairseq-beam5", "paper_iterations"] == "N"
    # the paper's k = 25 rows beside our k = 4 rows: in their own columns, the same-setting ones empty
    assert t.loc["gad-k4", "paper_k25_speed"] == 3.0 and t.loc["gad-k4-top5-tau3", "paper_k25_speed"] == 4.5
    assert t.loc["gad-k4-top3-tau1", "paper_k25_bleu"] == 28.89 and t.loc["nat-k4", "paper_k25_iterations"] == 1.6
    assert t.loc[["gad-k4", "nat-k4", "gad-k4-top3-tau1"], ["paper_bleu", "paper_speed"]].isna().all().all()
    # speed beside the paper's: each row against its own implementation's baseline (engine rows: engine greedy)
    cols = list(full.columns)
    assert cols.index("paper_speed") == cols.index("speed_same_impl") + 1
    assert t.loc["gad-k4", "speed_same_impl"] == 2.0 and t.loc["fairseq-greedy", "speed_same_impl"] == 1.5
    assert t.loc["gad-k4", "paper_k25_speed_same_impl"] == 2.73 and t.loc["greedy", "paper_speed_same_impl"] == 1.0
    assert t.loc["fairseq-greedy", "paper_speed_same_impl"] == 1.1 == t.loc["fairseq-greedy", "paper_speed"]
    assert math.isnan(t.loc["gad-k4-top3-tau3", "paper_bleu"])  # no paper row for other settings
    assert math.isnan(t.loc["gad-k4-top3-tau3", "paper_k25_bleu"])
    assert t["bleu"].notna().all() and t["signature"].str.startswith("nrefs:1").all()
    ro = tables.table1(synthetic_run, "wmt16_en-ro").set_index("label")
    cited = ro[ro["source"] != "ours"]  # Ge Table 5, En-Ro (no LevT, SMART, SUNDAE): BLEU only, its speed being En-De's
    assert len(cited) == 16 and cited["paper_speed"].isna().all() and cited["paper_bleu"].notna().all()
    assert ro.loc["Fully NAR: DSLIP (Huang et al., 2021) (Ge et al. Table 5)", "paper_bleu"] == 34.17
    assert ro.loc["gad-k4", "paper_k25_bleu"] == 34.83 and ro.loc["gad-k4", "paper_k25_iterations"] == 6.4
    assert math.isnan(ro.loc["gad-k4-top3-tau1", "paper_k25_bleu"])  # the en-ro paper's GAD++ rows are top-5
    assert tables.paper_key(parse_method("gad:k=4:beta=5:tau=4"), "wmt16_en-ro") == "gad_pp_hq"
    with pytest.raises(ValueError, match="paper reference"):
        tables.table1(synthetic_run, "wmt99")


def test_table2_and_table3(synthetic_run):
    t2 = tables.table2_block_size(synthetic_run, [2, 4], beta=3, tau=1.0)
    assert list(t2["label"]) == ["fairseq-beam5", "greedy", "gad-k2-top3-tau1", "gad-k4-top3-tau1"]
    assert list(t2["k"]) == ["-", "-", "2", "4"] and t2.iloc[0]["paper_bleu"] == 26.72
    assert list(t2["speedup_vs_beam"]) == [1.0, 2.0, 4.0, 5.0] and list(t2["gad_speedup_vs_beam"])[2:] == [3.0, 4.0]
    assert t2.iloc[3]["tokens_per_iteration"] == 3.5 and t2.iloc[3]["gad_tokens_per_iteration"] == 2.33
    assert t2.iloc[1]["mean_accepted"] == 0.0 and t2.iloc[3]["mean_accepted"] == 2.5
    with pytest.raises(ValueError, match="k=7"):
        tables.table2_block_size(synthetic_run, [7])
    t3 = tables.table3_beta_tau(synthetic_run, 4, [3, 5], [1.0, 3.0])
    assert list(t3["tau"]) == ["greedy", "1", "3"]
    assert list(t3["top3_speed"]) == [2.0, 5.0, 5.45] and list(t3["top5_speed"]) == [2.0, 5.22, 6.0]
    # the paper's grid is at k = 25: beside our k = 4 in its own columns; greedy's BLEU has no k
    assert t3.iloc[1]["paper_k25_top3_tok"] == 7.56 and t3.iloc[2]["paper_k25_top5_bleu"] == 26.84
    assert t3[["paper_top3_tok", "paper_top5_bleu"]].iloc[1:].isna().all().all()
    assert t3.iloc[0]["paper_top3_bleu"] == 26.62 and math.isnan(t3.iloc[0]["paper_k25_top3_bleu"])
    with pytest.raises(ValueError, match="gad-k4-top3-tau2"):
        tables.table3_beta_tau(synthetic_run, 4, [3], [2.0])


def test_table7_modules_from_the_schema_time_columns(synthetic_run):
    t = tables.table7_modules(synthetic_run, ["gad-k4-top5-tau3", "greedy"]).set_index("module")
    assert list(t.index) == ["AT encoder", "NAT encoder", "NAT decoder", "AT decoder", "Others", "Total"]
    # per sentence 1 s: AT encoder 10 %, NAT encoder 10 %, NAT decoder 30 %, AT decoder 30 %, the rest (the loop's
    # 10 % and the drafter's own 10 %) Others
    assert list(t["gad-k4-top5-tau3_ms"]) == [100.0, 100.0, 300.0, 300.0, 200.0, 1000.0]
    assert list(t["gad-k4-top5-tau3_pct"]) == [10.0, 10.0, 30.0, 30.0, 20.0, 100.0]
    assert list(t["greedy_ms"]) == [300.0, 0.0, 0.0, 900.0, 1800.0, 3000.0]
    assert t.loc["Total", "paper_k25_ms"] == 73.46 and t["paper_ms"].isna().all()
    for label in ("fairseq-beam5", "nat-k4"):
        with pytest.raises(ValueError, match="module times"):
            tables.table7_modules(synthetic_run, [label])


def test_table8_and_table9(synthetic_run):
    t8 = tables.table8_memory([{"method": "fairseq:beam=5", "device": "cpu", "after_load_mb": 100.0, "peak_mb": 110.0,
                                "weights_mb": 30.0, "measure": "m", "sentences": 5},
                               {"method": "gad:k=4:beta=5:tau=3:checkpoint=d.pt", "device": "cpu",
                                "after_load_mb": 130.0, "peak_mb": 150.0, "weights_mb": 60.0, "measure": "m",
                                "sentences": 5}])
    assert list(t8["label"]) == ["fairseq-beam5", "gad-k4-top5-tau3"]
    assert list(t8["decode_extra_mb"]) == [10.0, 20.0] and t8["paper_mib"].iloc[0] == 1237
    assert math.isnan(t8["paper_mib"].iloc[1]) and t8["paper_k25_mib"].iloc[1] == 1613
    labels = ["greedy", "fairseq-beam5", "nat-k4", "gad-k4", "gad-k4-top3-tau1"]
    t9 = tables.table9_repetition(synthetic_run, labels, hq="gad-k4-top3-tau1").set_index("label")
    # "a b c"/"d f": no repeats; "a a a"/"d d": 3 of 5 tokens; "a b b"/"d f": 1 of 5; beam "a b c"/"d d": 1 of 5
    assert list(t9["rep_ratio_pct"])[:5] == [0.0, 20.0, 60.0, 0.0, 20.0]
    assert t9.loc["greedy", "paper_rep_pct"] == 0.18 and t9.loc["gad-k4-top3-tau1", "paper_k25_rep_pct"] == 0.17
    assert t9.loc["CMLM (T=4) (paper only)", "paper_rep_pct"] == 1.13 and math.isnan(t9.loc["nat-k4", "paper_rep_pct"])
    with pytest.raises(ValueError, match="no method gad-k9"):
        tables.table9_repetition(synthetic_run, ["gad-k9"])


def test_figure4_per_sentence_speedup_over_beam_search(synthetic_run, tmp_path):
    recs = synthetic_run.records()
    sp = tables.per_sentence_speedup(recs, "gad-k4-top5-tau3", "fairseq-beam5")
    assert list(sp) == [12.0, 4.0]
    stats = tables.speedup_histogram(sp, str(tmp_path / "fig.png"), title="t", xlabel="x")
    assert (tmp_path / "fig.png").stat().st_size > 1000 and stats["sentences"] == 2 and stats["median"] == 8.0
    with pytest.raises(ValueError, match="no method"):
        tables.per_sentence_speedup(recs, "gad-k9", "fairseq-beam5")


def test_repetition_ratio():
    rr = tables.repetition_ratio
    assert rr([]) == 0.0 and rr(["a b c"]) == 0.0
    assert rr(["a a b", "c"]) == pytest.approx(1 / 4)
    # BPE pieces are merged first: "Ang@@ aben Ang@@ aben" = "Angaben Angaben" (1 repeat of 2 tokens)
    assert rr(["Ang@@ aben Ang@@ aben"]) == pytest.approx(1 / 2)
    assert rr(["a", "a"]) == 0.0  # repeats never cross sentence boundaries


# ---------------------------------------------------------------------- the track: runs, drafters, bad config

def _config(**gad_updates):
    import yaml
    from snakemake.utils import validate

    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    cfg["gad"].update(gad_updates)
    return cfg


def test_track_runs_drafters_and_items():
    cfg = _config(block_size=10, block_sizes=[4, 10], grid={"betas": [3], "taus": [1.0, 2.0]}, valid_sentences=50)
    runs = gad.bench_runs(cfg, "results/x")
    test, valid = runs["gad/bench/test"], runs["gad/bench/valid"]
    assert [parse_method(m).label for m in test.methods] == [
        "fairseq-beam5", "fairseq-greedy", "greedy", "nat-k10", "gad-k10", "gad-k10-top3-tau1", "gad-k10-top5-tau3",
        "greedy-fast", "gad-k10-fast", "gad-k10-top5-tau3-fast",  # the smoke config's gad.backends: [fast]
        "gad-k10-cost", "gad-k10-fast-cost",  # gad.policies: [cost], on each backend
        "ct2-greedy", "ct2-beam5"]  # the smoke config's CTranslate2 rows, on the verifier converted once
    assert test.ct2_model == "results/x/models/verifier/ct2" and valid.ct2_model is None
    assert parse_method(test.methods[-1]).drafter_args == {"model": "results/x/models/verifier/ct2"}
    assert [parse_method(m).label for m in valid.methods] == [
        "fairseq-beam5", "fairseq-greedy", "greedy", "gad-k4", "gad-k4-top3-tau1", "gad-k10", "gad-k10-top3-tau1",
        "gad-k10-top3-tau2"]
    drafter = "results/x/gad/models/drafter_k10/model.pt"
    assert parse_method(valid.methods[3]).drafter_args == {"checkpoint": drafter} and valid.drafters == [drafter]
    assert (test.src, test.ref, test.lang, test.limit, valid.limit) == (
        "results/x/data/bpe/test.en", "results/x/data/raw/test.de", "de", None, 50)
    assert test.dictionary == "results/x/data-bin/distill/dict.en.txt" and test.checkpoint.endswith("verifier/model.pt")
    cfg["gad"]["retrain_block_sizes"] = True
    valid = gad.bench_runs(cfg, "r")["gad/bench/valid"]
    assert valid.drafters == ["r/gad/models/drafter_k10/model.pt", "r/gad/models/drafter_k4/model.pt"]
    assert parse_method(valid.methods[3]).drafter_args["checkpoint"] == "r/gad/models/drafter_k4/model.pt"
    items = gad.table_items(cfg, "r")
    batch = ["gad/figures/gad_figure7_batch.png", "gad/tables/gad_figure7_batch.csv"] if cfg["gad"]["batch_sizes"] else []
    assert list(items) == ["gad/tables/gad_table1.csv", "gad/figures/gad_figure1_bleu_speedup.png",
                           "gad/tables/gad_table2_block_size.csv",
                           "gad/tables/gad_table3_beta_tau.csv", "gad/figures/gad_figure4_speedup.png",
                           "gad/tables/gad_table7_modules.csv", "gad/tables/gad_table9_repetition.csv",
                           "gad/tables/gad_table10_hyperparameters.csv", *batch, "gad/tables/gad_policy.csv"]
    assert items["gad/figures/gad_figure4_speedup.png"].inputs[-1] == "r/gad/bench/test/sentences.jsonl"
    # the cost-aware rows' table reads every run that has one
    policy_runs = {p.rsplit("/", 1)[0] for p in items["gad/tables/gad_policy.csv"].inputs}
    assert policy_runs == {f"r/gad/bench/{r}" for r in ("test", "batch") if r == "test" or cfg["gad"]["batch_sizes"]}
    cfg["gad"].update(batch_sizes=[1, 8], batch_sentences=16)
    run = gad.bench_runs(cfg, "r")["gad/bench/batch"]
    assert [parse_method(m).label for m in run.methods] == [
        "fairseq-beam5", "fairseq-greedy", "greedy", "gad-k10", "gad-k10-top5-tau3", "gad-k10-cost", "fairseq-beam5-bs8",
        "fairseq-greedy-bs8", "greedy-bs8", "gad-k10-bs8", "gad-k10-top5-tau3-bs8", "gad-k10-cost-bs8"]
    assert run.limit == 16 and run.src == "r/data/bpe/test.en" and run.drafters == ["r/gad/models/drafter_k10/model.pt"]
    assert gad.table_items(cfg, "r")["gad/tables/gad_figure7_batch.csv"].inputs == ["r/gad/bench/batch/summary.csv"]


@pytest.mark.parametrize("mutate,words", [
    (lambda c: c["gad"].update(block_size=0), "block_size"),
    (lambda c: c["gad"].update(high_quality={"beta": 0, "tau": 1.0}), "beta"),
    (lambda c: c.pop("gad"), "no `gad:` section"),
])
def test_bad_config_is_a_clear_error(mutate, words):
    cfg = _config()
    mutate(cfg)
    with pytest.raises(ValueError, match=words):
        gad.bench_runs(cfg, "results/x")


def test_bad_results_dir_and_table_name(tmp_path):
    with pytest.raises(ValueError, match="rename it"):
        gad.bench_runs(_config(), "results/a:b")
    with pytest.raises(ValueError, match="no table 'gad_table5'"):
        gad_outputs.make_table("gad_table5", _config(), str(tmp_path), str(tmp_path / "x.csv"))
    with pytest.raises(ValueError, match="no summary.csv"):
        gad_outputs.make_table("gad_table1", _config(), str(tmp_path), str(tmp_path / "x.csv"))


# ---------------------------------------------------------------------- the drafter's checks

def test_drafter_block_size_errors():
    from fastdec.engine.nat_drafter import NATDrafter, check_block_size

    _, d, ver = verifier_and_dict(0)
    model, _ = build_random_drafter(d, max_positions=16)
    for k in (0, -1, 16, 100, 2.5, True, "x"):
        with pytest.raises(ValueError):
            NATDrafter(model, k=k, verifier_vocab_size=ver.vocab_size)
    assert NATDrafter(model, k=15, verifier_vocab_size=ver.vocab_size).k == 15
    assert check_block_size(3.0, 10) == 3
    drafter = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
    with pytest.raises(ValueError):
        drafter.block(drafter.encode(torch.tensor([5, d.eos()])), [d.eos()], k=0)
    with pytest.raises(ValueError):
        drafter.encode(torch.tensor([], dtype=torch.long))


def test_drafter_never_proposes_banned_symbols_and_fast_path_matches_fairseq():
    """<mask>, padding, BOS and ids beyond the verifier's vocabulary are never proposed; the plain-tensor decoder
    forward equals fairseq's (float64)."""
    from fastdec.engine.nat_drafter import NATDrafter

    _, d, ver = verifier_and_dict(1)
    model, dd = build_random_drafter(d, seed=5)
    mask = dd.index("<mask>")
    with torch.no_grad():  # make the banned symbols the most likely ones
        for t in (mask, d.pad(), d.bos()):
            model.decoder.output_projection.weight[t] *= 50
    fast = NATDrafter(model, k=6, verifier_vocab_size=ver.vocab_size)
    slow = NATDrafter(model, k=6, verifier_vocab_size=ver.vocab_size, fast=False)
    assert fast.runner is not None and slow.runner is None
    src = torch.tensor([7, 9, 11, 13, d.eos()])
    e1, e2 = fast.encode(src), slow.encode(src)
    for prefix in ([d.eos()], [d.eos(), 8, 9], [d.eos()] + list(range(10, 30))):
        t1, lp1 = fast.block(e1, prefix, return_log_probs=True)
        t2, lp2 = slow.block(e2, prefix, return_log_probs=True)
        assert torch.equal(t1, t2)
        finite = torch.isfinite(lp1)
        assert torch.equal(finite, torch.isfinite(lp2))
        assert torch.allclose(lp1[finite], lp2[finite], atol=1e-5)  # fairseq's softmax runs in float32
        assert not {mask, d.pad(), d.bos()} & set(t1.tolist())
        assert max(t1.tolist()) < ver.vocab_size


# ---------------------------------------------------------------------- case study

def test_format_trace_uses_the_papers_notation():
    sym = {4: "Nach", 5: "den", 6: "Angaben", 7: "vorliegenden", 8: "war", 2: "EOS"}.get
    tr = Trace(tokens=[4, 5, 7, 6, 8, 2], iterations=[
        Iteration(draft=[4, 5, 6, 6], top1=[4, 5, 7, 8, 8], accepted=2, appended=[4, 5, 7]),
        Iteration(draft=[6, 8, 2], top1=[7, 8, 2, 4], accepted=3, appended=[6, 8, 2]),
    ])
    rows = format_trace(tr, sym, eos=2)
    assert [r["step"] for r in rows] == ["D", "V", "D", "V"]
    assert rows[0]["text"] == "Nach den Angaben Angaben"
    assert rows[1]["text"] == "Nach den **vorliegenden** ~~war~~ ~~war~~"
    assert rows[2]["text"].startswith("_Nach den vorliegenden_ Angaben war [EOS]")
    assert rows[3]["text"] == "_Nach den vorliegenden_ [vorliegenden, Angaben] war [EOS] **Nach**"
    assert rows[1]["accepted"] == 2 and rows[3]["accepted"] == 3


def test_select_examples_prefers_differing_short_sentences():
    cands = [{"id": 0, "differs": False, "iterations": 1, "src_len": 5},
             {"id": 1, "differs": True, "iterations": 9, "src_len": 5},
             {"id": 2, "differs": True, "iterations": 3, "src_len": 12},
             {"id": 3, "differs": False, "iterations": 4, "src_len": 10},
             {"id": 4, "differs": True, "iterations": 4, "src_len": 99}]
    assert select_examples(cands, 2) == [2, 3]
    assert select_examples(cands, 4) == [2, 3, 1, 4]
    assert select_examples(cands, 9) == [2, 3, 1, 4, 0]
    with pytest.raises(ValueError):
        select_examples(cands, -1)


def test_trace_reproduces_the_decoding():
    from fastdec.engine import accept_top1, accept_top_beta, draft_verify_accept
    from gad_helpers import STEERED, drafter_for

    _, d, ver = verifier_and_dict(STEERED)
    drafter = drafter_for(STEERED, 0, 0.0, 5)
    src = torch.tensor([6, 7, 8, 9, d.eos()])
    for rule in (accept_top1, accept_top_beta(3, 1.0)):
        ref = draft_verify_accept(ver, src, drafter, rule, max_len_a=0.0, max_len_b=20)
        tr = trace(ver, src, drafter, rule, max_len_a=0.0, max_len_b=20)
        assert tr.tokens == ref.tokens and len(tr.iterations) == ref.stats.iterations
        assert [t for it in tr.iterations for t in it.appended] == ref.tokens
        assert [it.accepted for it in tr.iterations] == ref.stats.accepted


def test_figure1_points_are_the_tables(synthetic_run, tmp_path):
    """Figure 1 plots exactly our Table 1 rows (BLEU, speedup) and the paper's rows that have both numbers."""
    from fastdec.tracks.gad.figures import figure1, paper_points
    from fastdec.tracks.gad.paper import GAD_TABLE1

    t1 = tables.table1(synthetic_run)
    paper = paper_points(GAD_TABLE1, cited=True)
    assert ("GLAT", 25.21, 15.3) in set(map(tuple, paper.values.tolist()))
    assert "Teacher Transformer-big (b=5)" not in set(paper["label"])  # no speed in the paper
    assert len(paper) == 7 + 11  # 7 own rows with a speed, 11 cited ones
    pts = figure1(t1, paper, str(tmp_path / "f1.png"), title="ours", paper_title="paper")
    ours = {p["label"]: (p["bleu"], p["speedup"]) for p in pts["ours"]}
    mine = t1[t1["source"] == "ours"].set_index("label")
    assert ours == {k: (mine.loc[k, "bleu"], mine.loc[k, "speedup_vs_beam"]) for k in mine.index}
    assert ours["gad-k4"][1] == 4.0 and (tmp_path / "f1.png").stat().st_size > 1000
    ro = paper_points(tables.paper_table1("wmt16_en-ro"), cited=False)
    assert set(ro["label"]) >= {"GAD", "AT verifier (b=5)"} and len(ro) == 6


def test_typical_sentence_is_closest_to_the_mean_rate():
    from fastdec.bench.results import Record
    from fastdec.bench.trace import typical_sentence

    recs = [Record("m", 0, list(range(20)), 1.0, 10),   # 2.0 tokens/iteration
            Record("m", 1, list(range(12)), 1.0, 3),    # 4.0
            Record("m", 2, list(range(3)), 1.0, 1),     # 3.0 but shorter than min_tokens
            Record("m", 3, list(range(15)), 1.0, 5)]    # 3.0
    # mean = 50 tokens / 19 iterations = 2.63: sentence 3 (3.0) is closest among those with >= 10 tokens
    assert typical_sentence(recs, 10) == 3
    assert typical_sentence(recs, 100) == 2  # nobody that long: all are candidates; 2 and 3 tie, the lower id wins
