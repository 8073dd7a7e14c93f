"""Xia et al. Tables 4-6 (Ge et al. Tables 8-9) and Ge et al. Table 5: the transcriptions read against the papers'
text, and the table functions on tiny hand-made runs."""
import math

import pandas as pd
import pytest

from helpers.paper_text import GE, XIA, paper_path, row_values, table_rows
from fastdec.bench.methods import parse_method, parse_methods
from fastdec.bench.results import Record, read_run, write_run
from fastdec.tracks.gad import paper as P
from fastdec.tracks.gad import tables as T
from fastdec.tracks.gad.beside import paper_beside

TABLE4_ORDER = ["teacher_b5", None, None, "nat_drafter", "verifier_b5", "verifier_b1", "gad", "gad_pp_hq", "gad_pp_he"]
TABLE6_ORDER = list(P.GAD_TABLE6_ROWS)


def _paper(row: dict, *cols):
    return [row.get(c, "N") if c == "iterations" else row.get(c) for c in cols]


def test_table4_read_against_the_paper():
    rows = table_rows(XIA, 4)[1:]
    assert len(rows) == len(TABLE4_ORDER)
    blockwise = iter(P.GAD_TABLE4_BLOCKWISE)
    for key, row in zip(TABLE4_ORDER, rows):
        if key is None:  # Stern et al.'s rows, speed over greedy (the paper's dagger)
            system, it, bleu, speed = next(blockwise)
            assert row_values(row, 3) == [None, bleu, speed] and "dagger" in row[-1]
            assert f"k = {system.split('k=')[1].split(')')[0]}" in " ".join(row)
        else:
            expect = _paper(P.GAD_TABLE4[key], "iterations", "bleu", "speed")
            assert row_values(row, 3) == expect, key
    assert "k = 30" in rows[-1][0] and "tau = 6.0" in rows[-1][0] and P.GAD_TABLE4["gad_pp_he"]["tau"] == 6.0


def test_table5_and_ge_table9_read_against_the_papers():
    for paper, number in ((XIA, 5), (GE, 9)):
        rows = table_rows(paper, number)[1:]
        keys = [("greedy", "base")] + [(k, s) for k in ("gad", "gad_pp_hq", "gad_pp_he") for s in ("base", "big")]
        for (key, size), row in zip(keys, rows, strict=True):
            p = P.GAD_TABLE5[(key, size)]
            assert row_values(row, 3) == [p["tok"], p["iterations"], p["bleu"]], (paper, key, size)
            assert ("Big" in row[0] or "big" in row[0]) == (size == "big")
    caption = next(line for line in paper_path(XIA).read_text().splitlines() if line.startswith("Table 5:"))
    assert f"k = {P.GAD_TABLE5_K}" in caption


def test_table6_read_against_the_paper():
    rows = table_rows(XIA, 6)[2:]
    keys = [("base", k) for k in TABLE6_ORDER] + [("big", k) for k in TABLE6_ORDER[1:]]
    assert len(rows) == len(keys)
    for (size, key), row in zip(keys, rows):
        size = "base" if key == "teacher_b5" else size  # the teacher is one row for both sizes
        got = row_values(row, 6)
        for half, cells in (("single", got[:3]), ("ensemble", got[3:])):
            assert cells == _paper(P.GAD_TABLE6[(half, size)][key], "iterations", "bleu", "speed"), (size, key, half)
    assert P.GAD_TABLE6[("single", "big")]["teacher_b5"] == P.GAD_TABLE6[("single", "base")]["teacher_b5"]
    # the single-teacher halves are Tables 1 and 4
    for key in TABLE6_ORDER[1:]:
        assert P.GAD_TABLE6[("single", "big")][key]["bleu"] == P.GAD_TABLE4[key]["bleu"]
        assert P.GAD_TABLE6[("single", "base")][key]["bleu"] == P.GAD_TABLE1[key]["bleu"]


def test_ge_table5_read_against_the_paper():
    rows = table_rows(GE, 5)[2:]
    by_name = {next(c for c in r if "(" in c and not c.startswith("$")).split(" (")[0].rstrip("*"): r for r in rows
               if any("(" in c for c in r)}
    for group, system, it, speed, bleu in P.GE_TABLE5_CITED:
        row = by_name[system.split(" (")[0]]
        assert row_values(row, 4) == list(bleu), system
        assert row_values(row, 6)[:2] == [float(it) if it != "N" else it, speed], system
    for name in P.GE_TABLE5_ONLY:
        assert name in by_name and not any(name in s for _, s, *_ in P.GAD_TABLE1_NAT)
    ours = {"Teacher": "teacher_b5", "Transformer-base (w/o Seq-KD) [†]": "baseline_b5",
            "AR verifier ($beam = 5$)": "verifier_b5", "AR verifier ($beam = 1$)": "verifier_b1"}
    for row in rows:
        key = next((ours[c] for c in row if c in ours), None)
        if key:
            assert tuple(row_values(row, 4)) == P.GE_TABLE5_OURS[key], key
    assert P.GE_TABLE5_OURS["baseline_b5"][0] == 27.38 != P.GAD_TABLE1["baseline_b5"]["bleu"]


# ---- the table functions on tiny runs: label-defining spec -> per-sentence time (two sentences each)
def _run(tmp_path, specs: dict):
    methods = parse_methods(list(specs))
    records = {m.label: [Record(m.label, i, [4, 5, 2], t, 1 if m.k else 3, src_len=3,
                                drafted=[m.k or 0] * int(bool(m.k)), accepted=[2] * int(bool(m.k)))
                         for i in range(2)] for m, t in zip(methods, specs.values())}
    write_run(str(tmp_path), methods, records, lambda toks: "a b", refs=["a b", "a c"], lang="en")
    return read_run(str(tmp_path))


def test_table4_big_beside_the_papers_big_rows(tmp_path):
    run = _run(tmp_path, {"fairseq:beam=5": 6.0, "fairseq:beam=1": 5.0, "greedy": 4.0, "nat:k=30": 0.5,
                          "gad:k=30": 2.0, "gad:k=30:beta=3:tau=1": 1.6, "gad:k=30:beta=5:tau=6": 1.0,
                          "gad:k=25": 2.0})
    t = T.table4_big(run).set_index("label")
    assert t.loc["gad-k30-top5-tau6", "paper_bleu"] == 29.15 and t.loc["gad-k30-top5-tau6", "paper_speed"] == 5.0
    assert t.loc["fairseq-beam5", "paper_bleu"] == 29.25 and t.loc["nat-k30", "paper_iterations"] == 1.4
    assert math.isnan(t.loc["gad-k25", "paper_bleu"]) and t.loc["gad-k25", "paper_k30_bleu"] == 29.18
    # ours beside the paper's speed: GAD against the engine's greedy decoding (4.0 / 1.0 s), the paper's 5.0x
    # over beam 5 / 1.1x of its greedy
    assert t.loc["gad-k30-top5-tau6", "speed_same_impl"] == 4.0
    assert t.loc["gad-k30-top5-tau6", "paper_speed_same_impl"] == round(5.0 / 1.1, 2)
    cited = t[t["source"] != "ours"]
    assert list(cited["paper_bleu"]) == [29.31, 28.95, 27.40] and cited["bleu"].isna().all()


def test_table5_base_and_big_drafter_in_one_table(tmp_path):
    specs = ["gad:k=30", "gad:k=30:beta=3:tau=1", "gad:k=30:beta=5:tau=3"]
    run = _run(tmp_path, {"fairseq:beam=5": 6.0, "greedy": 4.0, **{s: 2.0 for s in specs},
                          **{f"{s}:label={parse_method(s).label}-natbig": 1.0 for s in specs}})
    t = T.table5_nat_big(run, specs, "-natbig").set_index("label")
    assert list(t["drafter"]) == ["base"] + ["base", "big"] * 3
    assert t.loc["gad-k30", "paper_tok"] == 5.53 and t.loc["gad-k30-natbig", "paper_tok"] == 5.90
    assert t.loc["gad-k30-top5-tau3-natbig", "paper_bleu"] == 28.98 and t.loc["greedy", "paper_bleu"] == 28.73
    assert t.loc["gad-k30-natbig", "speedup_vs_greedy"] == 4.0 and t.loc["gad-k30", "speedup_vs_greedy"] == 2.0
    # a GAD++ setting the paper did not run: no paper figure
    run2 = _run(tmp_path / "other", {"greedy": 4.0, "gad:k=30:beta=5:tau=4": 2.0,
                                     "gad:k=30:beta=5:tau=4:label=gad-k30-top5-tau4-natbig": 1.0})
    t2 = T.table5_nat_big(run2, ["gad:k=30:beta=5:tau=4"], "-natbig").set_index("label")
    assert t2.loc[["gad-k30-top5-tau4", "gad-k30-top5-tau4-natbig"], "paper_bleu"].isna().all()


def test_table6_this_runs_half_beside_the_papers_and_the_other_half_apart(tmp_path):
    run = _run(tmp_path, {"fairseq:beam=5": 6.0, "fairseq:beam=1": 5.0, "greedy": 4.0, "nat:k=25": 0.5,
                          "gad:k=25": 2.0, "gad:k=25:beta=3:tau=1": 1.6, "gad:k=25:beta=5:tau=3": 1.0,
                          "gad:k=10": 2.0})
    t = T.table6_teachers(run, "ensemble", "base", teacher_bleu=30.0).set_index("label")
    assert t.loc["gad-k25", "paper_bleu"] == 29.24 and t.loc["gad-k25", "paper_single_bleu"] == 28.73
    assert t.loc["gad-k25-top5-tau3", "paper_speed"] == 4.3 and t.loc["gad-k25-top5-tau3", "paper_single_speed"] == 4.5
    # our teacher is one model: beside the paper's single teacher, the ensemble's in its own column
    assert t.loc["teacher (beam search)", "paper_bleu"] == 29.31
    assert t.loc["teacher (beam search)", "paper_ensemble_bleu"] == 30.64
    # another block size: no figure in the same-setting columns
    assert math.isnan(t.loc["gad-k10", "paper_bleu"]) and t.loc["gad-k10", "paper_k25_bleu"] == 29.24
    assert t.loc["gad-k10", "paper_single_k25_bleu"] == 28.73
    big = T.table6_teachers(run, "single", "big").set_index("label")
    assert math.isnan(big.loc["gad-k25", "paper_bleu"]) and big.loc["gad-k25", "paper_k30_bleu"] == 29.18
    assert big.loc["gad-k25", "paper_ensemble_k30_bleu"] == 29.69


def test_a_paper_figure_sits_beside_ours_only_at_the_same_setting():
    cells = paper_beside({"bleu": 28.73, "speed": 3.0}, {"k": 10}, {"k": 25})
    assert cells == {"paper_bleu": None, "paper_speed": None, "paper_k25_bleu": 28.73, "paper_k25_speed": 3.0}
    assert paper_beside({"bleu": 28.73}, {"k": 25}, {"k": 25}) == {"paper_bleu": 28.73}
    assert "paper_top5_tau3_bleu" in paper_beside({"bleu": 1.0}, {"k": 25, "beta": 3, "tau": 1.0},
                                                  {"k": 25, "beta": 5, "tau": 3.0})


def test_cnndm_table_puts_the_papers_k25_figures_apart_from_our_k10_rows(tmp_path):
    """Ge et al. Table 10 (CNN-DM) by the same rule: a k = 10 configuration's drafting rows keep the paper's k = 25
    figures in paper_k25_*; speed beside the paper's against the same implementation's baseline."""
    import json

    import yaml

    from helpers.bart import gpt2_files
    from fastdec.tracks.gad.cnndm import table10
    from fastdec.tracks.gad.plan import Plan
    from gad_helpers import REPO

    cfg = yaml.safe_load((REPO / "config/cnndm.yaml").read_text())
    cfg["gad"]["block_size"] = 10
    plan = Plan(cfg, str(tmp_path))
    files = gpt2_files(tmp_path / "gpt2")
    ids = json.loads(files["encoder.json"].read_text())
    text = " ".join(str(ids[c]) for c in "ab")  # the hypothesis "ab" as GPT-2 ids
    (tmp_path / "ref.txt").write_text("ab\nab\n")

    def run(name, specs, seconds):
        methods = parse_methods(specs)
        records = {m.label: [Record(m.label, i, [4, 5, 2], seconds[m.name], 1 if m.k else 3, src_len=3,
                                    drafted=[m.k or 0] * int(bool(m.k)), accepted=[2] * int(bool(m.k)))
                             for i in range(2)] for m in methods}
        write_run(str(tmp_path / name), methods, records, lambda toks: text)
        return read_run(str(tmp_path / name))

    times = {"fairseq": 6.0, "greedy": 4.0, "nat": 0.5, "gad": 1.0}
    test = run("test", plan.methods(plan.test), times)
    ar = {n: run(n, [plan.baseline], times) for n in ("teacher", "baseline")}
    t = table10(test, ar, plan, str(tmp_path / "ref.txt"), str(files["encoder.json"]),
                str(files["vocab.bpe"])).set_index("system")
    gad = t.loc["GAD (k = 25)"]
    assert pd.isna(gad["paper_rouge1"]) and gad["paper_k25_rouge1"] == 43.00 and gad["paper_k25_speed"] == 3.0
    he = t.loc["GAD++ (k = 25, top-5, tau = 3.0)"]
    assert he["paper_k25_rouge2"] == 19.42 and "paper_k25" in he["note"]
    assert t.loc["AR verifier (beam = 5)", "paper_rouge1"] == 42.55  # no k: beside ours
    assert gad["speedup"] == 6.0 and gad["speed_same_impl"] == 4.0
    assert gad["paper_k25_speed_same_impl"] == round(3.0 / 1.1, 2)


@pytest.mark.parametrize("variants", [("gad_big",), ("gad_big", "kd_ensemble_big"), ("nat_big_drafter",),
                                      ("kd_ensemble",), ()], ids=lambda v: "+".join(v) or "wmt14_ende")
def test_paper_scale_configs_write_their_tables_4_to_6(tmp_path, variants):
    """Each config (config/wmt14_ende.yaml with its variants merged in, as Snakemake merges --configfile files)
    writes its gad.paper_tables from its own test run and teacher, with the paper's half and size it names."""
    import json

    import yaml
    from snakemake.utils import update_config

    from fastdec.tracks.gad import outputs
    from fastdec.tracks.gad.plan import Plan, table_items
    from gad_helpers import REPO

    cfg = yaml.safe_load((REPO / "config/wmt14_ende.yaml").read_text())
    for v in variants:
        update_config(cfg, yaml.safe_load((REPO / f"config/variants/{v}.yaml").read_text()))
    R = str(tmp_path)
    plan = Plan(cfg, R)
    times = {"fairseq": 6.0, "greedy": 4.0, "nat": 0.5, "gad": 1.0}
    specs = plan.methods(plan.test)
    _run(tmp_path / "gad/bench/test", {s: times[T.parse_method(s).name] for s in specs})
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval/teacher_b5.json").write_text(json.dumps({"bleu": 30.0}))
    written = {}
    for path, item in table_items(cfg, R).items():
        if item.name in ("gad_table4_big", "gad_table5_nat_big", "gad_table6_teachers"):
            outputs.make_table(item.name, cfg, R, str(tmp_path / "out.csv"))
            written[item.name] = pd.read_csv(tmp_path / "out.csv").set_index("label")
    big, ensemble = "gad_big" in variants, any("kd_ensemble" in v for v in variants)
    expect = {"gad_table4_big", "gad_table6_teachers"} if big else {"gad_table5_nat_big"} if variants == (
        "nat_big_drafter",) else {"gad_table6_teachers"}
    assert set(written) == expect
    if "gad_table6_teachers" in written:
        t6 = written["gad_table6_teachers"]
        paper = P.GAD_TABLE6[("ensemble" if ensemble else "single", "big" if big else "base")]
        he = f"gad-k{30 if big else 25}-top5-tau{6 if big else 3}"
        assert t6.loc[he, "paper_bleu"] == paper["gad_pp_he"]["bleu"]
        assert t6.loc["teacher (beam search)", "bleu"] == 30.0
    if big:
        assert written["gad_table4_big"].loc["gad-k30-top5-tau6", "paper_speed"] == 5.0
    if "gad_table5_nat_big" in written:
        assert written["gad_table5_nat_big"].loc["gad-k30-top3-tau1-natbig", "paper_bleu"] == 29.12
