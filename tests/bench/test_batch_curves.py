"""Figure 6 / 7 data: one row per (method, batch size) from a written run, speedups against beam search at the
largest batch, and a clear error when the run lacks a batch size."""
import pytest

from fastdec.bench.batch_curves import at_batch_sizes, batch_figure, batch_table
from fastdec.bench.methods import parse_methods
from fastdec.bench.results import Record, read_run, write_run

SPECS = ["fairseq:beam=5", "greedy", "iad"]


def _run(tmp_path, batch_sizes, seconds):
    methods = parse_methods(at_batch_sizes(SPECS, batch_sizes))
    toks = [[5, 2], [6, 7, 2], [8, 2], [9, 2]]
    records = {m.label: [Record(m.label, i, t, seconds[m.label] / len(toks), len(t)) for i, t in enumerate(toks)]
               for m in methods}
    write_run(str(tmp_path), methods, records, lambda t: " ".join(map(str, t)))
    return read_run(str(tmp_path))


def test_at_batch_sizes_spells_every_method_at_every_size():
    assert at_batch_sizes(["greedy", "gad:k=4:checkpoint=x.pt"], [1, 4]) == [
        "greedy", "gad:k=4:checkpoint=x.pt", "greedy:batch=4", "gad:k=4:checkpoint=x.pt:batch=4"]
    with pytest.raises(ValueError, match="already has a batch size"):
        at_batch_sizes(["iad:batch=2"], [1, 2])


def test_batch_table_and_figure(tmp_path):
    seconds = {"fairseq-beam5": 8.0, "greedy": 4.0, "iad": 1.0, "fairseq-beam5-bs4": 2.0, "greedy-bs4": 1.0,
               "iad-bs4": 0.5}
    run = _run(tmp_path / "run", [1, 4], seconds)
    df = batch_table(run, SPECS, [1, 4], "fairseq:beam=5", "figure6").set_index(["method", "batch_size"])
    assert df.loc[("iad", 4), "label"] == "iad-bs4"
    assert df.loc[("iad", 4), "speedup_vs_beam_at_max_batch"] == pytest.approx(4.0)   # 2.0 s / 0.5 s
    assert df.loc[("iad", 1), "speedup_vs_beam_at_max_batch"] == pytest.approx(2.0)
    assert df.loc[("iad", 4), "speedup_vs_greedy_same_batch"] == pytest.approx(2.0)
    assert df.loc[("iad", 4), "ms_per_batch"] == pytest.approx(500.0)  # 4 sentences = one batch of 4
    assert df.loc[("greedy", 1), "ms_per_batch"] == pytest.approx(1000.0)
    assert (df["identical_to_greedy_pct"] == 100).all() and df["paper_note"].str.contains("image only").all()
    out = tmp_path / "fig.png"
    points = batch_figure(df.reset_index(), str(out), title="t", paper="figure6")
    assert out.stat().st_size > 1000 and points["iad-bs4"] == pytest.approx(4.0)


def test_missing_batch_size_names_the_row(tmp_path):
    run = _run(tmp_path / "run", [1], {"fairseq-beam5": 1.0, "greedy": 1.0, "iad": 1.0})
    with pytest.raises(ValueError, match="fairseq-beam5-bs8"):
        batch_table(run, SPECS, [1, 8], "fairseq:beam=5", "figure7")
