"""The table of cost-aware draft lengths: every ``policy=cost`` row of a real benchmark run beside its fixed-k twin and
the greedy decoding of the same backend and batch size, the draft lengths the policy chose as the run recorded them,
and its one-line answer for the report's summary."""
import pandas as pd
import pytest

from fastdec.bench.policy_table import FLOOR, fixed_twin, policy_table, summary_line, write_policy_table
from fastdec.bench.results import read_run
from fastdec.cli import main


@pytest.fixture(scope="module")
def cost_run(tiny_checkpoint, tiny_databin, tmp_path_factory):
    out = tmp_path_factory.mktemp("policy") / "run"
    lines = (tiny_databin.parent / "test.src").read_text().splitlines()[:6]
    inp = out.parent / "in.txt"
    inp.write_text("".join(line + "\n" for line in lines))
    methods = ("greedy,iad,iad:policy=cost,greedy:backend=fast,iad:backend=fast,iad:backend=fast:policy=cost,"
               "greedy:batch=3,iad:batch=3,iad:batch=3:policy=cost")
    rc = main(["bench", "--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin), "--input", str(inp),
               "--methods", methods, "--threads", "1", "--max-len-a", "1.2", "--max-len-b", "5",
               "--warmup", "1", "--out-dir", str(out)])
    assert rc == 0
    return read_run(str(out))


def test_every_cost_row_sits_beside_its_fixed_twin_and_the_greedy_of_its_backend_and_batch(cost_run):
    df = policy_table({"b": cost_run})
    assert list(zip(df["method"], df["backend"], df["batch_size"])) == [
        ("iad", "torch", 1), ("iad-fast", "fast", 1), ("iad", "torch", 3)]
    for row in df.itertuples():
        label = {("torch", 1): "iad-cost", ("fast", 1): "iad-fast-cost", ("torch", 3): "iad-cost-bs3"}[
            (row.backend, row.batch_size)]
        method = next(m for m in cost_run.methods() if m.label == label)
        cost, fixed = cost_run.row(label), cost_run.row(fixed_twin(method, cost_run.methods()).label)
        assert row.cost_x_greedy == pytest.approx(cost["speedup_vs_greedy_same_batch"])
        assert row.fixed_x_greedy == pytest.approx(fixed["speedup_vs_greedy_same_batch"])
        assert row.cost_vs_fixed == pytest.approx(fixed["total_time_s"] / cost["total_time_s"])
        assert row.greedy_ms_per_sentence == pytest.approx(cost["ms_per_sentence"] * row.cost_x_greedy)
        assert row.at_least_097 == (row.cost_x_greedy >= FLOOR)
        assert row.identical_to_greedy_pct == 100.0 and row.exact
        # the lengths the policy allowed, as the run's sentences recorded them
        planned = [n for rec in cost_run.records()[label] for n in rec.planned]
        assert planned and row.drafted_iterations_pct == pytest.approx(100 * sum(n > 0 for n in planned) / len(planned))
        assert row.longest_draft == max(planned)
        assert 0.0 <= row.policy_time_pct < 100.0


def test_the_summary_line_counts_the_rows_that_keep_greedy_s_speed():
    df = pd.DataFrame({"run": ["a", "a", "b"], "method": ["iad", "gad-k10", "iad"], "batch_size": [1, 1, 8],
                       "exact": [True, True, True], "cost_x_greedy": [1.5, 0.98, 0.90],
                       "cost_vs_fixed": [1.1, 4.0, 0.8], "identical_to_greedy_pct": [100.0, 100.0, 100.0]})
    line = summary_line(df)
    assert line.startswith("2 of 3 exact cost-aware rows at 0.97x") and "slowest 0.90x: iad at batch 8, b" in line
    assert "faster than fixed k in 2 of 3" in line and "100.0-100.0 %" in line
    assert summary_line(df.assign(exact=False)) is None
    # int8 rows: lossless against their own backend's greedy, whatever their share of the float32 greedy's
    int8 = df.assign(identical_to_greedy_pct=[98.0, 100.0, 99.0], identical_to_backend_greedy_pct=[100.0, 100.0, 100.0])
    assert "identical to their own backend's greedy: 100.0-100.0 %" in summary_line(int8)
    assert "99.5-100.0 %" in summary_line(int8.assign(identical_to_backend_greedy_pct=[100.0, 99.5, 100.0]))


def test_the_table_is_written_and_runs_without_cost_rows_are_a_clear_error(tmp_path, cost_run):
    with pytest.raises(ValueError, match="no cost-aware method"):
        write_policy_table({}, str(tmp_path / "t.csv"))
    out = tmp_path / "t.csv"
    write_policy_table({"b": cost_run.path}, str(out))
    assert len(pd.read_csv(out)) == 3


def test_a_cost_row_s_fixed_twin_and_replay_have_its_drafter():
    """GAD with the cheap drafter is the same method as GAD with the paper's but for the drafter's checkpoint (which a
    method's equality leaves out): each cost-aware row is set beside the fixed row of its own drafter, and a replay
    follows the cost-aware row of its own drafter."""
    from fastdec.bench.methods import parse_methods
    from fastdec.bench.runner import _replayed

    ms = parse_methods("gad:k=10:checkpoint=a.pt,gad:k=10:label=gad-k10-cheap:checkpoint=b.pt,"
                       "gad:k=10:policy=cost:checkpoint=a.pt,"
                       "gad:k=10:label=gad-k10-cheap-cost:checkpoint=b.pt:policy=cost,"
                       "gad:k=10:label=replay-b:checkpoint=b.pt:policy=replay,gad:k=10:policy=replay:checkpoint=a.pt")
    by = {m.label: m for m in ms}
    assert fixed_twin(by["gad-k10-cost"], ms).label == "gad-k10"
    assert fixed_twin(by["gad-k10-cheap-cost"], ms).label == "gad-k10-cheap"
    assert _replayed(ms) == {"replay-b": "gad-k10-cheap-cost", "gad-k10-replay": "gad-k10-cost"}
    with pytest.raises(ValueError, match="add the method"):
        _replayed([m for m in ms if m.label != "gad-k10-cheap-cost"])
