"""Unit tests of the GAD track's pieces: system names, tables, repetition ratio, case-study formatting, the figure,
the workflow plan and the drafter's parameter checks."""
import math

import pandas as pd
import pytest
import torch

from gad_helpers import build_random_drafter, verifier_and_dict
from fastdec.gad.case_study import Iteration, Trace, format_trace, select_examples, trace
from fastdec.gad.figures import per_sentence_speedup, speedup_histogram
from fastdec.gad.scoring import bleu, postprocess, repetition_ratio
from fastdec.gad.systems import Record, SystemRunner, parse_system, run_interleaved, system_name
from fastdec.gad import tables
from fastdec.gad.workflow import GadPlan


# ---------------------------------------------------------------------- system names and bad inputs

@pytest.mark.parametrize("name,kind,k,beta,tau", [
    ("at_b5", "fairseq", None, 1, 0.0), ("greedy", "greedy", None, 1, 0.0), ("nat_k10", "nat", 10, 1, 0.0),
    ("gad_k25", "gad", 25, 1, 0.0), ("gadpp_k10_b3_t1", "gadpp", 10, 3, 1.0), ("gadpp_k8_b5_t2.5", "gadpp", 8, 5, 2.5),
])
def test_parse_system_roundtrip(name, kind, k, beta, tau):
    s = parse_system(name)
    assert (s.kind, s.k, s.beta, s.tau) == (kind, k, beta, tau)
    assert system_name(s.kind, k=s.k, beta=s.beta if kind == "gadpp" else None,
                       tau=s.tau if kind == "gadpp" else None, beam=s.beam) == name


@pytest.mark.parametrize("bad", ["gad_k0", "nat_k0", "gadpp_k10_b0_t1", "gadpp_k10_b3_t-1", "beam5", "gad", "",
                                 "at_b0", "gadpp_k-1_b3_t1"])
def test_bad_system_names_raise_value_error(bad):
    with pytest.raises(ValueError):
        parse_system(bad)


@pytest.mark.parametrize("kw", [dict(k=0), dict(k=-3), dict(beta=0), dict(tau=-0.1), dict(tau=float("nan")),
                                dict(k=True), dict(beta=2.5), dict(tau=float("inf"))])
def test_system_name_checks_parameters(kw):
    kind = "gadpp"
    args = dict(k=10, beta=3, tau=1.0)
    args.update(kw)
    with pytest.raises(ValueError):
        system_name(kind, **args)


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


# ---------------------------------------------------------------------- scoring

def test_repetition_ratio():
    assert repetition_ratio([]) == 0.0
    assert repetition_ratio(["a b c"]) == 0.0
    assert repetition_ratio(["a a b", "c"]) == pytest.approx(1 / 4)
    # BPE pieces are merged first: "Ang@@ aben Ang@@ aben" = "Angaben Angaben" (1 repeat of 2 tokens)
    assert repetition_ratio(["Ang@@ aben Ang@@ aben"]) == pytest.approx(1 / 2)
    # repeats never cross sentence boundaries
    assert repetition_ratio(["a", "a"]) == 0.0


def test_postprocess_and_bleu():
    assert postprocess("Das ist ein Te@@ st .", "de") == "Das ist ein Test."
    score = bleu(["Das ist ein Te@@ st ."], ["Das ist ein Test."], "de")
    assert score["bleu"] == pytest.approx(100.0) and score["signature"].startswith("nrefs:1")


# ---------------------------------------------------------------------- tables

def _summary():
    rows = []
    for name, tok, acc, bl, t in [("at_b5", 1.0, None, 20.0, 10.0), ("at_b1", 1.0, None, 19.5, 8.0),
                                  ("greedy", 1.0, 0.0, 19.5, 5.0), ("nat_k4", 3.0, None, 12.0, 1.0),
                                  ("gad_k4", 3.5, 2.5, 19.5, 2.5), ("gad_k2", 2.0, 1.0, 19.5, 3.5),
                                  ("gadpp_k4_b3_t1", 4.0, 3.0, 19.7, 2.2), ("gadpp_k2_b3_t1", 2.5, 1.5, 19.6, 3.0),
                                  ("gadpp_k4_b5_t3", 4.5, 3.5, 19.4, 2.0), ("gadpp_k4_b3_t3", 4.2, 3.2, 19.3, 2.1),
                                  ("gadpp_k4_b5_t1", 4.1, 3.1, 19.6, 2.15)]:
        s = parse_system(name)
        engine = s.kind in ("greedy", "gad", "gadpp")
        rows.append({"system": name, "label": s.label, "kind": s.kind, "k": s.k, "n_sentences": 10, "bleu": bl,
                     "identical_to_greedy": 10 if s.kind in ("greedy", "gad") else 7,
                     "identical_to_greedy_pct": 100.0 if s.kind in ("greedy", "gad") else 70.0,
                     "mean_iterations": 20 / tok, "tokens_per_iteration": tok, "mean_accepted": acc,
                     "mean_latency_ms": 100 * t, "total_time_s": t, "speed_vs_at_b5": 10.0 / t,
                     "at_encoder_s": 0.1 if engine else None, "nat_encoder_s": 0.1 if s.uses_drafter else 0.0,
                     "nat_decoder_s": 0.5 if s.uses_drafter else 0.0, "at_decoder_s": 1.0 if engine else None,
                     "other_s": 0.05 if engine else None, "rep_ratio_pct": 0.2, "signature": "nrefs:1|x"})
    return pd.DataFrame(rows)


def test_table1_has_paper_numbers_and_speed():
    t = tables.table1(_summary())
    row = t.set_index("system")
    assert row.loc["at_b5", "paper_bleu"] == 28.89 and row.loc["at_b5", "paper_iterations"] == "N"
    assert row.loc["gad_k4", "paper_speed"] == 3.0 and row.loc["gadpp_k4_b5_t3", "paper_speed"] == 4.5
    assert row.loc["gadpp_k4_b3_t1", "paper_bleu"] == 28.89 and row.loc["nat_k4", "paper_iterations"] == 1.6
    assert row.loc["gad_k4", "speed_vs_beam5"] == 4.0 and row.loc["gad_k4", "identical_to_greedy_pct"] == 100.0
    assert math.isnan(row.loc["gadpp_k4_b3_t3", "paper_bleu"])  # no paper row for other settings


def test_table2_and_table3():
    t2 = tables.table2_block_size(_summary(), [2, 4], beta=3, tau=1.0)
    assert list(t2["system"])[:2] == ["at_b5", "greedy"] and list(t2["k"]) == ["-", "-", "2", "4"]
    assert t2.iloc[3]["tok"] == 4.0 and t2.iloc[3]["gad_tok"] == 3.5 and t2.iloc[0]["paper_bleu"] == 26.72
    with pytest.raises(ValueError, match="k=7"):
        tables.table2_block_size(_summary(), [7])
    t3 = tables.table3_beta_tau(_summary(), 4, [3, 5], [1.0, 3.0])
    assert list(t3["tau"]) == ["greedy", "1", "3"]
    assert t3.iloc[1]["top3_tok"] == 4.0 and t3.iloc[2]["top5_tok"] == 4.5
    assert t3.iloc[1]["paper_top3_tok"] == 7.56 and t3.iloc[2]["paper_top5_bleu"] == 26.84
    assert t3.iloc[0]["paper_top3_bleu"] == 26.62
    with pytest.raises(ValueError):
        tables.table3_beta_tau(_summary(), 4, [3], [2.0])


def test_table7_modules_sum_to_total():
    t = tables.table7_modules(_summary(), ["gadpp_k4_b5_t3", "greedy"])
    assert list(t["module"]) == ["AT encoder", "NAT encoder", "NAT decoder", "AT decoder", "Others", "Total"]
    body, total = t.iloc[:5], t.iloc[5]
    assert body["gadpp_k4_b5_t3_ms"].sum() == pytest.approx(total["gadpp_k4_b5_t3_ms"], abs=1e-3)
    assert body["gadpp_k4_b5_t3_pct"].sum() == pytest.approx(100.0, abs=0.05)
    assert total["paper_ms"] == 73.46
    with pytest.raises(ValueError, match="module times"):
        tables.table7_modules(_summary(), ["at_b5"])


def test_table8_and_table9():
    t8 = tables.table8_memory([{"system": "at_b5", "device": "cpu", "after_load_mb": 100.0, "peak_mb": 110.0,
                                "weights_mb": 30.0, "measure": "m", "sentences": 5},
                               {"system": "gad_k4", "device": "cpu", "after_load_mb": 130.0, "peak_mb": 150.0,
                                "weights_mb": 60.0, "measure": "m", "sentences": 5}])
    assert list(t8["decode_extra_mb"]) == [10.0, 20.0] and list(t8["paper_mib"]) == [1237, 1621]
    t9 = tables.table9_repetition(_summary(), ["greedy", "nat_k4", "gad_k4", "gadpp_k4_b3_t1"], hq="gadpp_k4_b3_t1")
    r = t9.set_index("system")
    assert r.loc["greedy", "paper_rep_pct"] == 0.18 and r.loc["gadpp_k4_b3_t1", "paper_rep_pct"] == 0.17
    assert r.loc["cmlm_t4", "paper_rep_pct"] == 1.13 and math.isnan(r.loc["nat_k4", "paper_rep_pct"])


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


# ---------------------------------------------------------------------- runner and figure

def test_run_interleaved_and_figure(tmp_path):
    from fastdec.engine.nat_drafter import NATDrafter

    model, d, ver = verifier_and_dict(0)
    dm, _ = build_random_drafter(d, seed=1)
    loaded = type("L", (), {"model": model, "tgt_dict": d})()
    runner = SystemRunner(loaded, ver, lambda k: NATDrafter(dm, k=k, verifier_vocab_size=ver.vocab_size),
                          max_len_a=0.0, max_len_b=8)
    specs = [parse_system(s) for s in ("at_b2", "greedy", "nat_k3", "gad_k3", "gadpp_k3_b3_t1")]
    sources = [torch.tensor([5 + i, 6, 7, d.eos()]) for i in range(4)]
    recs = run_interleaved(runner, specs, sources, warmup=1, repeats=2)
    assert set(recs) == {s.name for s in specs} and all(len(v) == 4 for v in recs.values())
    for a, b in zip(recs["gad_k3"], recs["greedy"]):
        assert a.tokens == b.tokens and a.nat_encoder > 0 and a.nat_decoder > 0
    with pytest.raises(ValueError):
        run_interleaved(runner, specs + specs[:1], sources)
    df = pd.DataFrame([r.to_dict() for v in recs.values() for r in v])
    sp = per_sentence_speedup(df, "gad_k3", "at_b2")
    assert len(sp) == 4 and (sp > 0).all()
    stats = speedup_histogram(sp, str(tmp_path / "fig.png"), title="t")
    assert (tmp_path / "fig.png").stat().st_size > 1000 and stats["sentences"] == 4
    with pytest.raises(ValueError):
        per_sentence_speedup(df, "gad_k9", "at_b2")


# ---------------------------------------------------------------------- workflow plan

def test_gad_plan_names_and_spec():
    import json

    cfg = {"block_size": 10, "init_from_verifier": "all", "high_quality": {"beta": 3, "tau": 1.0},
           "high_efficiency": {"beta": 5, "tau": 3.0}, "block_sizes": [4, 10], "retrain_block_sizes": False,
           "table2": {"beta": 3, "tau": 1.0}, "grid": {"betas": [3], "taus": [1.0, 2.0]},
           "train": {"arch": "nat_block_drafter_demo", "max_update": 5, "max_tokens": 100, "lr": 1e-3,
                     "max_minutes": 6, "extra_args": {"share-all-embeddings": True}},
           "glancing": {"start": 0.5, "end": 0.3, "anneal_updates": 100}, "valid_sentences": 50}
    p = GadPlan(cfg, "results/x", 5, "en", "de")
    assert p.test_systems == ["at_b5", "at_b1", "greedy", "nat_k10", "gad_k10", "gadpp_k10_b3_t1",
                              "gadpp_k10_b5_t3"]
    assert p.valid_systems == ["at_b5", "greedy", "gad_k4", "gadpp_k4_b3_t1", "gad_k10", "gadpp_k10_b3_t1",
                               "gadpp_k10_b3_t2"]
    assert p.drafter(4) == p.drafter(10) == "results/x/gad/models/drafter_k10/model.pt"
    assert p.limit_arg("valid") == "--limit 50" and p.limit_arg("test") == ""
    spec = json.loads(p.train_spec(4, init="init.pt"))
    assert spec["extra_args"]["block-size"] == 4 and spec["extra_args"]["finetune-from-model"] == "init.pt"
    assert spec["max_minutes"] == 6  # fastdec.train turns it into --stop-time-hours
    cfg["retrain_block_sizes"] = True
    assert GadPlan(cfg, "r", 5, "en", "de").drafter(4) == "r/gad/models/drafter_k4/model.pt"


def test_table1_paper_reference_per_benchmark():
    t = tables.table1(_summary(), "wmt16_en-ro").set_index("system")
    assert t.loc["gad_k4", "paper_bleu"] == 34.83 and t.loc["gad_k4", "paper_iterations"] == 6.4
    assert t.loc["at_b5", "paper_bleu"] == 34.96
    with pytest.raises(ValueError, match="paper reference"):
        tables.table1(_summary(), "wmt99")
