"""Hsu et al.'s Tables 1-3 from hand-made run rows (what tables.collect makes of the runs): the GPU columns, the
pruning rows of each base, the paper's figures on their own rows, and those figures read against the paper's text."""
import re
from pathlib import Path

import pandas as pd
import pytest

from fastdec.tracks.students import paper as P
from fastdec.tracks.students import tables as T

PAPER = Path("/work/shared/papers/efficient-inference-nmt.txt")


def row(model, self_attn, ffn, enc, dec, *, pruned=False, cpu=100.0, gpu=None, heads=(8, 4, 4)):
    return {"model": model, "self_attn": self_attn, "ffn": ffn, "encoder_layers": enc, "decoder_layers": dec,
            "pruned": pruned, "bleu": 20.0, "bleu_greedy": 19.0, "wps_cpu_b1_greedy": cpu, "wps_cpu_b1_beam": cpu,
            "wps_cpu_b1_fairseq_greedy": cpu, "wps_batched_beam": 10 * cpu, "identical_to_greedy_pct": 100.0,
            "wps_gpu_batched_beam": float("nan") if gpu is None else gpu,
            "gpu_columns": T.NO_GPU if gpu is None else "GPU run: beam 5, batch 128 (students.decode.gpu)",
            "params": 1000, "decoder_params": 600, "decoder_ffn_params": 200, "heads_enc": heads[0],
            "heads_encdec": heads[1],
            "heads_dec": heads[2] if self_attn == "attention" else 0}


def students(gpu: bool) -> pd.DataFrame:
    g = (lambda v: v) if gpu else (lambda v: None)
    return pd.DataFrame([
        row("transformer_3_3", "attention", True, 3, 3, cpu=100, gpu=g(1000)),
        row("ssru_3_3", "ssru", True, 3, 3, cpu=110, gpu=g(1200)),
        row("ssru_noffn_3_3", "ssru", False, 3, 3, cpu=150, gpu=g(1300)),
        row("aan_3_3", "aan", True, 3, 3, cpu=105, gpu=g(1100)),
        row("ssru_noffn_6_1", "ssru", False, 6, 1, cpu=200, gpu=g(1800)),
        row("transformer_6_1", "attention", True, 6, 1, cpu=160, gpu=g(1500)),
        row("ssru_noffn_6_1_pruned_0p01", "ssru", False, 6, 1, pruned=True, cpu=210, gpu=g(1840), heads=(5, 4, 0)),
        row("transformer_6_1_pruned_0p01", "attention", True, 6, 1, pruned=True, cpu=170, gpu=g(1600),
            heads=(6, 3, 4)),
    ])


BASES = ["ssru_noffn_6_1", "transformer_6_1"]
PRUNED = [(f"{b}_l0_0p01", f"{b}_pruned_0p01", 0.01) for b in BASES]


@pytest.mark.parametrize("table", [lambda df: T.table1(df, "transformer_3_3"),
                                   lambda df: T.table3(df, "transformer_3_3", BASES)])
def test_gpu_columns_are_filled_from_gpu_runs_and_blank_and_labelled_without(table):
    with_gpu = table(students(gpu=True)).set_index("model")
    assert with_gpu.loc["transformer_3_3", "wps_gpu_batched_beam"] == 1000
    assert with_gpu.loc["ssru_3_3", "speedup_gpu_pct"] == 20.0 and with_gpu.loc["transformer_3_3", "speedup_gpu_pct"] == 0
    assert set(with_gpu["gpu_columns"]) == {"GPU run: beam 5, batch 128 (students.decode.gpu)"}
    cpu_only = table(students(gpu=False)).set_index("model")
    assert cpu_only["wps_gpu_batched_beam"].isna().all() and cpu_only["speedup_gpu_pct"].isna().all()
    assert set(cpu_only["gpu_columns"]) == {T.NO_GPU} and "no students.decode.gpu" in T.NO_GPU
    # the CPU columns do not depend on the GPU runs
    assert cpu_only.loc["ssru_3_3", "speedup_cpu_b1_pct"] == with_gpu.loc["ssru_3_3", "speedup_cpu_b1_pct"] == 10.0


def test_gpu_speed_reads_the_gpu_batch_row_of_a_run():
    summary = pd.DataFrame([{"label": "greedy", "mean_out_len": 10.0, "sent_per_s": 1.0},
                            {"label": "fairseq-beam5-bs128", "mean_out_len": 20.0, "sent_per_s": 50.0}])
    got = T.gpu_speed(summary, 5, 128)
    assert got["wps_gpu_batched_beam"] == 1000.0 and "batch 128" in got["gpu_columns"]
    with pytest.raises(KeyError):
        T.gpu_speed(summary, 5, 64)


def test_table2_has_each_base_and_its_pruned_rows_beside_the_papers():
    t = T.table2(students(gpu=False), BASES, PRUNED)
    assert t["model"].tolist() == ["ssru_noffn_6_1", "ssru_noffn_6_1_pruned_0p01", "transformer_6_1",
                                   "transformer_6_1_pruned_0p01"]
    assert t["base"].tolist() == ["ssru_noffn_6_1"] * 2 + ["transformer_6_1"] * 2
    assert t["heads"].tolist() == ["8/4/-", "5/4/-", "8/4/4", "6/3/4"]
    assert t["paper_row"].tolist() == ["SSRU w/o ffn", "+ pruned", "Baseline", "+ pruned"]
    assert t["paper_heads"].tolist() == ["96/8/-", "18/8/-", "96/8/8", "22/7/8"]
    assert t["paper_bleu"].tolist() == [28.9, 28.6, 29.2, 29.0]


def test_table3_puts_each_paper_row_on_the_student_it_is():
    t = T.table3(students(gpu=True), "transformer_3_3", BASES).set_index("model")
    assert "paper_note" in t and not t["paper_note"].str.contains("paper rows").any()
    expected = {"transformer_3_3": "Baseline", "ssru_3_3": "SSRU", "ssru_noffn_3_3": "+ Remove ffn",
                "ssru_noffn_6_1": "+ 12-1", "ssru_noffn_6_1_pruned_0p01": "+ Prune heads"}
    for model, label in expected.items():
        paper = next(r for r in P.TABLE3 if r[0] == label)
        got = t.loc[model, ["paper_row", "paper_bleu", "paper_speedup_gpu_pct", "paper_speedup_cpu_pct",
                            "paper_params_m"]].tolist()
        assert got[0] == label and got[1] == paper[1] and got[4] == paper[4], (model, got)
        for mine, theirs in zip(got[2:4], paper[2:4]):
            assert (theirs is None and pd.isna(mine)) or mine == theirs, (model, got)
    for model in ("aan_3_3", "transformer_6_1", "transformer_6_1_pruned_0p01"):  # no paper row is these
        assert pd.isna(t.loc[model, "paper_row"]) and pd.isna(t.loc[model, "paper_bleu"])


def _paper_table(text: str, caption: str, n_rows: int):
    """The tab-separated rows above the caption ``caption`` in the paper's text."""
    lines = text[:text.index(caption)].rstrip().splitlines()
    return [line.split("\t") for line in lines[-n_rows:]]


@pytest.mark.skipif(not PAPER.is_file(), reason="the paper's text is not on this machine")
def test_transcriptions_read_against_the_paper():
    text = PAPER.read_text()
    t2 = _paper_table(text, "Table 2: Head pruning", 4)
    kinds = [("attention", False), ("attention", True), ("ssru", False), ("ssru", True)]
    assert [(label, heads, float(bleu)) for label, heads, bleu in t2] == [P.TABLE2[k] for k in kinds]
    t3 = _paper_table(text, "Table 3: Decoding on a GPU", 5)
    for (label, bleu, speed, params), ours in zip(t3, P.TABLE3):
        gpu_cpu = re.fullmatch(r"(\d+)/(\d+)%", speed)
        assert (label, float(bleu), int(params.rstrip("M"))) == (ours[0], ours[1], ours[4])
        assert (tuple(map(int, gpu_cpu.groups())) if gpu_cpu else (None, None)) == ours[2:4]
    t1 = _paper_table(text, "Table 1: Results of replacing", 5)
    keys = [("attention", True), ("aan", True), ("ssru", True), ("aan", False), ("ssru", False)]
    for (_, bleu, wps, speedup), key in zip(t1, keys):
        assert (float(bleu), int(wps), 0 if speedup == "-" else int(speedup.rstrip("%"))) == P.TABLE1[key]
