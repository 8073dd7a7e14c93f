"""Coverage registry: every numbered table and figure and the main quantitative in-text results of the four papers
(/work/shared/papers), and what this workflow does with each. The report ends with it; the tests check
every ``DEFAULT`` path against the files the default config writes (fastdec.workflow.experiments.table_items + track rules), that
every table item of the default config is listed here, and that a ``PAPER_SCALE`` entry's configs exist and write the
tables it names.

Papers: ``Xia`` = Xia et al. 2022 (GAD), ``Ge`` = Ge et al. 2022 (IAD + GAD, journal version), ``Stern`` = Stern et
al. 2018 (blockwise parallel decoding), ``Hsu`` = Hsu et al. 2020 (efficient inference for NMT).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import List, Optional

DEFAULT = "default run"
PAPER_SCALE = "paper-scale config"
NOT_YET = "not implemented yet"
NOT_HERE = "not reproducible here"
STATUSES = (DEFAULT, PAPER_SCALE, NOT_YET, NOT_HERE)


@dataclass(frozen=True)
class Entry:
    paper: str
    item: str
    shows: str
    status: str
    where: str = ""   # DEFAULT: output path relative to results/<exp>; PAPER_SCALE: the config (and path)
    why: str = ""     # NOT_YET / NOT_HERE: the reason

    def __post_init__(self):
        assert self.status in STATUSES, self.status
        assert bool(self.where) == (self.status in (DEFAULT, PAPER_SCALE)), self
        assert bool(self.why) == (self.status in (NOT_YET, NOT_HERE)), self


def _d(paper, item, shows, path):
    return Entry(paper, item, shows, DEFAULT, where=path)


def _p(paper, item, shows, config):
    return Entry(paper, item, shows, PAPER_SCALE, where=config)


def _y(paper, item, shows, why):
    return Entry(paper, item, shows, NOT_YET, why=why)


def _n(paper, item, shows, why):
    return Entry(paper, item, shows, NOT_HERE, why=why)


ILLUSTRATION = "an illustration of the method, no measured data"
HUMAN = "needs human evaluation"
T = "gad/tables/"
B = "blockwise/tables/"
SR = "superres/tables/"
S = "students/tables/"

REGISTRY: List[Entry] = [
    # ---- Xia et al. 2022 (GAD)
    _d("Xia", "Table 1", "GAD/GAD++ vs AT and NAT: BLEU, iterations, speedup (WMT14 En-De)", T + "gad_table1.csv"),
    _d("Xia", "Table 1 (AT rows)", "teacher, w/o Seq-KD baseline and verifier decoded by fairseq",
       "tables/table1_at.csv"),
    _d("Xia", "Table 1 (NAT baselines)", "cited NAT systems' BLEU/speedup (paper-only rows)", T + "gad_table1.csv"),
    _d("Xia", "Table 2", "block size k: mean accepted tokens, BLEU, speedup (dev)", T + "gad_table2_block_size.csv"),
    _d("Xia", "Table 3", "GAD++ top-beta x tau grid (dev)", T + "gad_table3_beta_tau.csv"),
    _p("Xia", "Table 4", "big drafter/verifier (k = 30, GAD++ top-5 tau = 6.0) beside the paper's big-model rows, "
       "its teacher and Blockwise rows cited", "config/wmt14_ende.yaml + config/variants/gad_big.yaml "
       "(gad/tables/gad_table4_big.csv; gad_table1.csv with Table 4 as its paper column)"),
    _p("Xia", "Table 5", "NAT-base and NAT-big drafters in GAD-base at k = 30, one test run",
       "config/wmt14_ende.yaml + config/variants/nat_big_drafter.yaml (gad/tables/gad_table5_nat_big.csv)"),
    _p("Xia", "Table 6", "single teacher vs 3-teacher ensemble for Seq-KD, base and big models: each run's half "
       "beside the paper's, the other half in its own paper columns",
       "config/wmt14_ende.yaml (single, base), + config/variants/kd_ensemble.yaml (ensemble, base), "
       "+ config/variants/gad_big.yaml (single, big), + config/variants/gad_big.yaml "
       "config/variants/kd_ensemble_big.yaml (ensemble, big) (gad/tables/gad_table6_teachers.csv)"),
    _d("Xia", "Table 7", "profiling of GAD++ by module", T + "gad_table7_modules.csv"),
    _d("Xia", "Table 8", "peak GPU memory of GAD vs AT", T + "gad_table8_memory.csv"),
    _d("Xia", "Table 9", "token repetition ratio", T + "gad_table9_repetition.csv"),
    _d("Xia", "Table 10", "drafter/verifier hyperparameters (from the training commands)",
       T + "gad_table10_hyperparameters.csv"),
    _d("Xia", "Table 11", "decoding examples (case study)", T + "gad_table11_case_study.csv"),
    _d("Xia", "Figure 1", "BLEU vs speedup of every system (paper's points beside ours)",
       "gad/figures/gad_figure1_bleu_speedup.png"),
    _n("Xia", "Figure 2", "draft-and-verify iteration", ILLUSTRATION),
    _n("Xia", "Figure 3", "GAD++ verification", ILLUSTRATION),
    _d("Xia", "Figure 4", "per-sentence speedup distribution of GAD++", "gad/figures/gad_figure4_speedup.png"),
    _d("Xia", "Cost-aware draft lengths (beyond the paper)", "GAD with each iteration's draft length chosen by what a "
       "verifier pass costs, beside fixed k and greedy at every batch size, and the lengths it chose",
       T + "gad_policy.csv"),
    _d("Xia", "Footnote 8", "mean accepted tokens on the dev set (GAD, GAD++, Blockwise)",
       T + "gad_table2_block_size.csv"),
    # ---- Ge et al. 2022 (IAD + GAD)
    _d("Ge", "Table 1", "IAD vs beam/greedy on CoNLL-13: F0.5 and speedup", "gec/tables/gec_table1.csv"),
    _d("Ge", "Table 2", "examples of IAD speedup ratios", "gec/tables/gec_table2.csv"),
    _p("Ge", "Table 3", "efficient GEC models on CoNLL-14 (12+2 BART-initialised)",
       "config/gec_bart.yaml (gec/tables/gec_table3.csv)"),
    _d("Ge", "Table 3 (cited rows)", "the table's rows as paper-only rows, our Table 1 systems beside",
       "gec/tables/gec_table3.csv"),
    _p("Ge", "Table 1 (synthetic data)", "the rows of the model pretrained on 300M synthetic pairs (paper-only "
       "rows in every run)", "config/gec_bea19.yaml + config/variants/gec_synthetic.yaml (gec.pretrain: 300M pairs "
       "noised from WMT News Crawl after Grundkiewicz et al. 2019, pretraining, then fine-tuning on BEA-2019; "
       "gec/tables/gec_table1.csv)"),
    _p("Ge", "Table 4", "IAD on NLPCC-18 Chinese GEC and Wikilarge simplification",
       "config/nlpcc18.yaml (NLPCC-18 columns: character-level M2 F0.5) and config/wikilarge.yaml (Wikilarge "
       "columns: SARI, BLEU), each gec/tables/gec_table4.csv"),
    _p("Ge", "Table 5", "GAD on WMT14 En<->De and WMT16 En<->Ro: every direction's teacher, w/o Seq-KD baseline "
       "(Ge's own, En-De 27.38) and verifier rows, the cited NAR systems of each direction",
       "config/wmt14_ende.yaml, wmt14_deen.yaml, wmt16_enro.yaml, wmt16_roen.yaml (gad/tables/gad_table1.csv, "
       "tables/table1_at.csv)"),
    _d("Ge", "Table 5 (cited rows)", "the NAR systems Ge cites beyond Xia's Table 1 (OaXE, DSLIP, F-VAE, Multi-Task "
       "NAT, CMLMC) as paper-only rows, WMT14 En-De", T + "gad_table1.csv"),
    _d("Ge", "Table 6", "block size k (= Xia Table 2)", T + "gad_table2_block_size.csv"),
    _d("Ge", "Table 7", "GAD++ beta x tau (= Xia Table 3)", T + "gad_table3_beta_tau.csv"),
    _p("Ge", "Table 8", "big GAD vs Blockwise (= Xia Table 4)",
       "config/wmt14_ende.yaml + config/variants/gad_big.yaml (gad/tables/gad_table4_big.csv)"),
    _p("Ge", "Table 9", "NAR-big drafter (= Xia Table 5)",
       "config/wmt14_ende.yaml + config/variants/nat_big_drafter.yaml (gad/tables/gad_table5_nat_big.csv)"),
    _p("Ge", "Table 10", "GAD/GAD++ on CNN-DM summarization (ROUGE)", "config/cnndm.yaml (gad/tables/ge_table10_cnndm.csv)"),
    _d("Ge", "Table 11", "GEC hyperparameters (from the training command; pretrain/fine-tune paper-only)",
       "gec/tables/gec_table11_hyperparameters.csv"),
    _d("Ge", "Table 12", "IAD on CPU by thread count", "gec/tables/gec_table12.csv"),
    _d("Ge", "Table 13", "GAD hyperparameters (= Xia Table 10)", T + "gad_table10_hyperparameters.csv"),
    _p("Ge", "Table 14", "per-direction GAD/GAD++ details",
       "config/wmt14_deen.yaml, wmt16_enro.yaml, wmt16_roen.yaml (gad/tables/gad_table1.csv)"),
    _d("Ge", "Table 15", "profiling (= Xia Table 7)", T + "gad_table7_modules.csv"),
    _d("Ge", "Table 16", "GPU memory (= Xia Table 8)", T + "gad_table8_memory.csv"),
    _d("Ge", "Table 17", "examples (= Xia Table 11)", T + "gad_table11_case_study.csv"),
    _n("Ge", "Figure 1", "autoregressive vs aggressive decoding", ILLUSTRATION),
    _n("Ge", "Figure 2", "IAD overview", ILLUSTRATION),
    _n("Ge", "Figure 3", "GAD iteration", ILLUSTRATION),
    _n("Ge", "Figure 4", "GAD++", ILLUSTRATION),
    _d("Ge", "Figure 5", "IAD speedup distribution vs edit distance", "gec/figures/gec_figure5.png"),
    _d("Ge", "Figure 6", "IAD latency per batch vs batch size (on the config's device; the paper: P100/V100/A100)",
       "gec/figures/gec_figure6_batch.png"),
    _d("Ge", "Figure 6 (data)", "the figure's points", "gec/tables/gec_figure6_batch.csv"),
    _d("Ge", "Figure 7", "GAD/GAD++ latency per batch vs batch size (on the config's device; the paper: P100/V100/A100)",
       "gad/figures/gad_figure7_batch.png"),
    _d("Ge", "Figure 7 (data)", "the figure's points", T + "gad_figure7_batch.csv"),
    _d("Ge", "Figure 8", "per-sentence speedup (= Xia Figure 4)", "gad/figures/gad_figure4_speedup.png"),
    _d("Ge", "Cost-aware draft lengths (beyond the paper)", "IAD with each iteration's draft length chosen by what a "
       "verifier pass costs, beside fixed drafts and greedy at every batch size, and the lengths it chose",
       "gec/tables/gec_policy.csv"),
    # ---- Stern et al. 2018 (blockwise parallel decoding)
    _d("Stern", "Table 1", "BLEU and mean accepted block size per k and training variant (dev)",
       B + "blockwise_table1.csv"),
    _d("Stern", "Table 1 (scatter)", "Table 1 as BLEU vs mean accepted block size", B + "blockwise_table1_scatter.png"),
    _d("Stern", "Table 2", "super-resolution (demo: grey 4x4 -> 8x8 patches of a portrait): mean accepted block size "
       "per k, frozen / fine-tuned heads, exact / within epsilon", SR + "stern_table2.csv"),
    _p("Stern", "Table 2 (CelebA)", "the paper's setting: CelebA 8x8 -> 32x32 RGB faces from the downloaded archive, "
       "an Image-Transformer-sized base, the whole development set", "config/celeba_superres.yaml "
       "(superres/tables/stern_table2.csv)"),
    _n("Stern", "Table 3", "human evaluation on CelebA", HUMAN),
    _d("Stern", "Table 4", "test BLEU and wall-clock speedup at batch 1", B + "blockwise_table4.csv"),
    _d("Stern", "Table 4 (prior work)", "cited systems' rows (paper-only)", B + "blockwise_table4.csv"),
    _n("Stern", "Figure 1", "predict / verify / accept substeps", ILLUSTRATION),
    _n("Stern", "Figure 2", "merged scoring and proposal", ILLUSTRATION),
    _n("Stern", "Figure 3", "Transformer with k output heads", ILLUSTRATION),
    _d("Stern", "Figure 4", "wall-clock speedup vs mean accepted block size (translation)", B + "blockwise_figure4.png"),
    _d("Stern", "Figure 4 (data)", "the figure's points", B + "blockwise_figure4.csv"),
    _d("Stern", "Figure 4 (super-resolution)", "wall-clock speedup vs mean accepted block size, fine-tuned heads "
       "within epsilon", SR + "stern_figure4_superres.png"),
    _d("Stern", "Figure 4 (super-resolution data)", "the figure's points", SR + "stern_figure4_superres.csv"),
    _p("Stern", "Figure 4 (super-resolution, CelebA)", "the super-resolution series on CelebA faces on one GPU",
       "config/celeba_superres.yaml (superres/tables/stern_figure4_superres.png)"),
    _d("Stern", "Sec. 5.2", "distance-based selection for ordinal outputs (pixel intensities)", SR + "stern_table2.csv"),
    _d("Stern", "Sec. 5.1", "approximate top-k acceptance", B + "blockwise_approx.csv"),
    _d("Stern", "Sec. 5.3", "minimum block size", B + "blockwise_minblock.csv"),
    _d("Stern", "Sec. 7.4", "step-by-step decoding example of our model", B + "blockwise_example.csv"),
    _d("Stern", "Batched (beyond the paper)", "exact blockwise decoding at batch 1-32 with per-row rollback; the "
       "paper times batch 1 only", B + "blockwise_batch.png"),
    _d("Stern", "Batched (data)", "the figure's points", B + "blockwise_batch.csv"),
    _d("Stern", "Cost-aware block lengths (beyond the paper)", "exact blockwise decoding with each iteration's block "
       "length chosen by what a verifier pass costs, beside fixed k and greedy at every batch size",
       B + "blockwise_policy.csv"),
    _d("Stern", "Blockwise vs GAD", "Ge Table 8 / Xia Table 4 comparison on the same data and hardware",
       B + "blockwise_vs_gad.csv"),
    _d("Xia, Ge, Stern, Hsu", "Claims", "the papers' hardware-independent claims checked on this run's tables "
       "(fastdec/claims/checks_*.py; each holds, fails, is not run or not checkable), summarised per paper at the top "
       "of the report", "tables/orderings.csv"),
    # ---- Hsu et al. 2020 (efficient inference for NMT)
    _d("Hsu", "Table 1", "SSRU/AAN decoders and no-FFN: BLEU and speed (CPU batch 1 and batched; the GPU columns "
       "blank and labelled: no GPU run in the default config)", S + "students_table1.csv"),
    _p("Hsu", "Table 1 (GPU columns)", "beam-5 speed at batch 128 on one GPU and its speedup, a second run of every "
       "student", "config/wmt14_ende.yaml (students/tables/students_table1.csv)"),
    _d("Hsu", "Table 2", "L0 head pruning (demo: a 6-1 SSRU student): heads kept, BLEU, speed, the paper's row beside "
       "each", S + "students_table2.csv"),
    _p("Hsu", "Table 2 (attention-decoder rows)", "the 12-1 standard-attention student pruned at each lambda, beside "
       "the 12-1 SSRU w/o FFN one", "config/wmt14_ende.yaml (students/tables/students_table2.csv)"),
    _d("Hsu", "Table 3", "all students: BLEU, CPU batch-1 and batched speed, parameters, speedup; the paper's figures "
       "on the row of the student each paper row is", S + "students_table3.csv"),
    _p("Hsu", "Table 3 (GPU columns)", "every student's GPU speedup (beam 5, batch 128, one GPU) beside the paper's",
       "config/wmt14_ende.yaml (students/tables/students_table3.csv)"),
    _n("Hsu", "Figure 1", "efficient Transformer architecture", ILLUSTRATION),
    _d("Hsu", "Figure 2", "quality vs speed over encoder/decoder depths", S + "students_figure2.png"),
    _d("Hsu", "Figure 2 (data)", "the figure's points", S + "students_figure2.csv"),
    _d("Hsu", "Student as GAD verifier", "beyond the paper: GAD with an efficient student as its verifier",
       S + "students_gad_verifier.csv"),
]


def counts(entries: Optional[List[Entry]] = None) -> Counter:
    return Counter(e.status for e in (REGISTRY if entries is None else entries))


def default_paths() -> set:
    return {e.where for e in REGISTRY if e.status == DEFAULT}


TITLE = "Coverage of the papers"


def coverage_table():
    """The report's coverage section: its counts line, then one row per entry."""
    import pandas as pd

    c = counts()
    head = f"{len(REGISTRY)} items: " + ", ".join(f"{s}: {c[s]}" for s in STATUSES)
    df = pd.DataFrame([{"paper": e.paper, "item": e.item, "shows": e.shows, "status": e.status,
                        "output / config / reason": e.where or e.why} for e in REGISTRY])
    return head, df


def coverage_markdown() -> str:
    from fastdec.report.markdown import df_to_markdown

    head, df = coverage_table()
    return "\n".join([f"## {TITLE}", "", f"{head}. Default-run paths are relative to `results/<experiment>`.", "",
                      df_to_markdown(df), ""])


def coverage_html() -> str:
    from fastdec.report.html import section_html

    head, df = coverage_table()
    return section_html(TITLE, f"{head}.", df)
