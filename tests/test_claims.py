"""The claims of Ge, Stern and Hsu et al. (fastdec.claims.checks_*) hold on tables that show them and fail on tables
that do not; a claim's row says "not run" when its table is absent and "not checkable" when a column is."""
import pandas as pd
import pytest

from fastdec.claims import checks_ge as G
from fastdec.claims import checks_hsu as H
from fastdec.claims import checks_stern as S
from fastdec.claims import orderings
from fastdec.claims.claim import FAILS, HOLDS, NOT_CHECKABLE, NOT_RUN, NotCheckable, run_claims
from helpers.claim_tables import (STERN_TABLE1, blockwise_figure4, blockwise_pairs, blockwise_table1, gad_table1,
                                  students_table1, students_table2)


def test_stern_table1_blocks_and_bleu():
    paper = blockwise_table1(STERN_TABLE1)
    for check in (S.distillation_raises_blocks, S.both_gives_largest_blocks, S.fine_tuning_bleu_falls_with_k,
                  S.both_bleu_above_fine_tuning):
        assert check(paper)[1], check.__name__
    swapped = blockwise_table1({**STERN_TABLE1, "Distillation": STERN_TABLE1["Regular"],
                                "Regular": STERN_TABLE1["Distillation"]})
    assert not S.distillation_raises_blocks(swapped)[1]
    ft_rising = blockwise_table1({**STERN_TABLE1, "Fine Tuning": [(24.0, 1.8), (25.0, 2.7), (27.0, 4.5)]})
    assert not S.fine_tuning_bleu_falls_with_k(ft_rising)[1]
    assert not S.both_bleu_above_fine_tuning(ft_rising)[1]
    assert not S.both_gives_largest_blocks(ft_rising)[1]  # k=6: fine-tuning's 4.5 above Both's 4.18


def test_stern_top_t_min_block_and_wall_clock():
    exact = [(26.58, 1.88), (26.36, 3.27)]
    assert S.top_t_raises_blocks(blockwise_pairs(exact, [(26.49, 1.92), (26.22, 3.47)], "top-2"))[1]
    assert not S.top_t_raises_blocks(blockwise_pairs(exact, [(26.49, 1.80), (26.22, 3.47)], "top-2"))[1]
    assert S.min_block_costs_bleu(blockwise_pairs(exact, [(25.0, 2.0), (25.0, 3.4)], "min block ℓ=2"))[1]
    assert not S.min_block_costs_bleu(blockwise_pairs(exact, [(26.9, 2.0), (25.0, 3.4)], "min block ℓ=2"))[1]
    assert S.speedup_below_mean_block(blockwise_figure4([1.88, 3.27], [1.72, 2.69]))[1]
    assert not S.speedup_below_mean_block(blockwise_figure4([1.88, 3.27], [1.72, 3.5]))[1]


def test_hsu_light_decoders_and_pruning():
    assert H.light_decoders_faster_at_batch_1(students_table1(ssru_wps=125.0))[1]
    assert not H.light_decoders_faster_at_batch_1(students_table1(ssru_wps=90.0))[1]
    with pytest.raises(NotCheckable):
        H.light_decoders_faster_at_batch_1(students_table1(125.0).query("self_attn == 'attention'"))
    assert H.pruning_removes_heads(students_table2("2/1/-"))[1]
    assert not H.pruning_removes_heads(students_table2("4/2/-"))[1]


def test_hsu_ffn_share_at_the_papers_shape():
    """The plugin's student at the paper's shape gives the paper's third; another split of the same count fails."""
    from fastdec.tracks.students.sizes import paper_shape_split

    decoder, ffn = paper_shape_split()
    # 6 x (SSRU 2d^2 + d, cross-attention 4d^2 + 4d, FFN 2df + f + d, 3 layer norms 2d) + the 32K x d embedding
    # (post-norm, as Transformer-base: no final layer norm)
    d, f = 512, 2048
    assert ffn == 6 * (2 * d * f + f + d)
    assert decoder == 6 * (2 * d * d + d + 4 * d * d + 4 * d + 2 * d * f + f + d + 3 * 2 * d) + 32000 * d
    runs = pd.DataFrame([{"model": "ssru_3_3", "ffn": True, "decoder_params": 1.5e6, "decoder_ffn_params": 0.4e6},
                         {"model": "ssru_noffn_3_3", "ffn": False, "decoder_params": 1.1e6, "decoder_ffn_params": 0}])
    ours, holds = H.ffn_share_of_decoder(runs, (decoder, ffn))
    assert holds and "32.8%" in ours and "ssru_3_3: 27%" in ours and "noffn" not in ours
    assert not H.ffn_share_of_decoder(runs, (decoder, decoder // 2))[1]
    claim = next(c for c in H.CLAIMS if c.check is H.ffn_share_of_decoder)
    row = claim.row({"students_table1": students_table1(125.0)})
    assert row["status"] == NOT_CHECKABLE and "decoder_params" in row["ours"]


def test_ge_iad_identical_and_edit_ratio():
    t1 = pd.DataFrame({"method": ["greedy", "iad", "iad-fast"], "identical_to_greedy_pct": [100.0, 100.0, 100.0]})
    lossless = G.CLAIMS[1]
    assert lossless.row({G.T1: t1})["ours"] == "iad: 100.0%, iad-fast: 100.0%"
    assert lossless.row({G.T1: t1})["status"] == HOLDS
    assert lossless.row({G.T1: t1.assign(identical_to_greedy_pct=[100.0, 99.0, 100.0])})["status"] == FAILS
    # an int8 verifier is another model: its exact rows are held to its own greedy, the float32 share beside it
    int8 = pd.DataFrame({"method": ["iad", "iad-fast-int8"], "identical_to_greedy_pct": [100.0, 98.0],
                         "identical_to_backend_greedy_pct": [100.0, 100.0]})
    row = lossless.row({G.T1: int8})
    assert row["status"] == HOLDS
    assert row["ours"] == "iad: 100.0%, iad-fast-int8: 100.0% (98.0% of the PyTorch greedy's)"
    assert lossless.row({G.T1: int8.assign(identical_to_backend_greedy_pct=[100.0, 99.8])})["status"] == FAILS
    # a table without the column, or a row without a backend greedy: the PyTorch greedy's share decides
    assert lossless.row({G.T1: int8.assign(identical_to_backend_greedy_pct=[100.0, None])})["status"] == FAILS
    from fastdec.claims.summary import audit_lines
    assert audit_lines(G.AUDIT, {G.T1: int8}) == [
        "iad: 100.0%", "iad-fast-int8: 100.0% (98.0% of the PyTorch greedy's)"]
    rows = pd.DataFrame({"edit_ratio": [0.0, 0.1, 0.3, 0.5], "greedy_time": 1.0, "iad_time": [0.2, 0.3, 0.5, 0.9]})
    assert G.iad_speedup_falls_with_edits(rows)[1]
    assert not G.iad_speedup_falls_with_edits(rows.assign(iad_time=1.1 - rows["iad_time"]))[1]
    with pytest.raises(NotCheckable):
        G.iad_speedup_falls_with_edits(rows[:2])


def test_a_claim_without_its_table_is_not_run_and_failed_lists_only_failures():
    df = run_claims(orderings.CLAIMS, {"gad_table1": gad_table1(he=4.5)})
    status = dict(zip(df["claim"], df["status"]))
    assert status["vanilla GAD's output is identical to greedy decoding's"] == HOLDS
    assert status["mean iterations: NAT < GAD++ high-efficiency < GAD++ high-quality < GAD"] == FAILS
    assert (df[df["study"] != "Xia"]["status"] == NOT_RUN).all()
    assert orderings.failed(df) == ["mean iterations: NAT < GAD++ high-efficiency < GAD++ high-quality < GAD"]
    assert len(orderings.CLAIMS) >= 20 and list(df.columns) == ["study", "claim", "paper", "ours", "status"]
