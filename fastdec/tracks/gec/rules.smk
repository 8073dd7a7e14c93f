# GEC track (Ge et al. 2022, Input-guided Aggressive Decoding): a Transformer GEC model trained in the workflow,
# decoded at batch 1 with fairseq beam 5, fairseq greedy, the engine's greedy decoding and IAD in ONE process on
# the same weights (`fastdec bench`, rule bench), scored with MaxMatch (M2, rule gec_m2score) or, for simplification
# (gec.metric: sari), SARI and BLEU (rule gec_sari); the paper's Tables 1, 2, 12 and Figure 5, or Table 4 for its
# Wikilarge / NLPCC-18 settings, with its numbers beside ours (rule table). Runs and tables: plan.py here.
# Data: UA-GEC (embedded in the ua-gec package, offline; default), the BEA-2019 restricted English setting
# (config/gec_bea19.yaml), Wikilarge (config/wikilarge.yaml) or NLPCC-18 (config/nlpcc18.yaml, character level).
# Everything goes to results/<experiment>/gec/.
# BPE, binarisation (gec/data-bin) and the model (gec/models/gec) come from the shared rules of bpe.smk and
# train.smk; names and arguments from plan.py here (GecPlan).
import re

from fastdec.tracks.gec.plan import GecPlan, labels as gec_labels

GEC = config["gec"]
GECP = GecPlan(GEC, R, config["device"])
G = GECP.G
GDATA = GEC["data"]
GB = GEC["benchmark"]
GSPLIT = GB["split"]
GEC_LABELS = gec_labels(config)  # the methods of every GEC benchmark run (plan.py)


# --- data: a prepared corpus in {G}/data/full --------------------------------------------------------------------
if GDATA["source"] == "uagec":

    rule gec_prepare_uagec:
        # UA-GEC from the installed ua-gec package (offline): tokenised sentences, test M2 with both annotators.
        output:
            GECP.full,
        log:
            log("gec_prepare_uagec"),
        benchmark:
            bench("gec_prepare_uagec")
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            out=lambda wc, output: os.path.dirname(output[0]),
            valid_size=GDATA["uagec"]["valid_size"],
            seed=GDATA["uagec"]["seed"],
            layer=GDATA["uagec"]["layer"],
        shell:
            "$PY -m fastdec prepare-uagec --out {params.out} --valid-size {params.valid_size} "
            "--seed {params.seed} --layer {params.layer} > {log} 2>&1"

else:

    rule gec_prepare_download:
        # Downloaded corpora -> full/: BEA-2019 M2 corpora (train pairs from every annotator, CoNLL-2013 valid,
        # CoNLL-2014 test with M2), or Ge et al. Table 4's Wikilarge (TurkCorpus test with its 8 references) and
        # NLPCC-18 (training file, test gold M2). Archives: the fetch rule (fetch.smk); config names checked by
        # fastdec.tracks.gec.plan.check_gec; readers in data.py and corpora.py here.
        input:
            archives=GECP.downloads,
        output:
            GECP.full,
        log:
            log("gec_prepare_download"),
        benchmark:
            bench("gec_prepare_download")
        threads: 1
        resources:
            mem_mb=16000,
            runtime=60,
        params:
            source=GECP.source,
            out=lambda wc, output: os.path.dirname(output[0]),
            spec=GECP.prepare_spec_arg(),
            archives=GECP.archive_args,
            local=GECP.local_args(),
        shell:
            "$PY -m fastdec gec-data {params.source} {params.spec} {params.archives} {params.local} "
            "--out {params.out} > {log} 2>&1"


rule gec_select:
    # Subsets (smoke), empty/over-long training pairs dropped and counted, valid.m2 for every source.
    input:
        GECP.full,
    output:
        GECP.raw,
    log:
        log("gec_select"),
    benchmark:
        bench("gec_select")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        full=lambda wc, input: os.path.dirname(input[0]),
        out=lambda wc, output: os.path.dirname(output[0]),
        subset=GECP.subset_arg(),
        max_words=GECP.max_words_arg(),
        tokenisation=GECP.tokenisation_arg(),
    shell:
        "$PY -m fastdec gec-data select --full {params.full} --out {params.out} {params.subset} "
        "{params.max_words} {params.tokenisation} > {log} 2>&1"


# --- synthetic pretraining (gec.pretrain, off by default): the pretrained model the GEC model fine-tunes from ------
if GECP.pretrain:

    include: "pretrain.smk"


# --- the benchmark set; the runs, tables and figure are plan.py's (rules bench and table) --------------------------
rule gec_bench_set:
    # The sentences of the benchmark tables: the first benchmark.sentences of the chosen split, with their gold
    # (M2 blocks, or the references of a simplification corpus).
    input:
        **GECP.bench_set_inputs(GSPLIT),
    output:
        **GECP.bench_set_outputs(),
    log:
        log("gec_bench_set"),
    benchmark:
        bench("gec_bench_set")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        n=GB["sentences"] or 0,
        gold_flag=GECP.bench_gold_flag(),
    shell:
        "$PY -m fastdec gec-data head --n {params.n} --pair {input.bpe} {output.bpe} "
        "--pair {input.src} {output.src} {params.gold_flag} {input.gold} {output.gold} > {log} 2>&1"


if GEC["metric"] == "m2":

    rule gec_m2score:
        # MaxMatch P/R/F0.5 over every annotator (the official scorer's per-sentence choice) of one method of a
        # benchmark run (fastdec/tracks/gec/plan.py), on its de-BPE'd hypotheses (hyps/<label>.txt, written with
        # summary.csv).
        input:
            run=f"{G}/bench/{{run}}/summary.csv",
            m2=f"{G}/bench/set.m2",
            gpt2=GECP.debpe_inputs(),  # BART's GPT-2 BPE files (gec.bpe.kind gpt2), else none
        output:
            json=f"{G}/bench/{{run}}/m2.{{label}}.json",
        log:
            log("gec_m2score_{run}_{label}"),
        benchmark:
            bench("gec_m2score_{run}_{label}")
        wildcard_constraints:
            run="[^/]+",
            label="|".join(re.escape(label) for label in GEC_LABELS),
        threads: 1
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            hyp=lambda wc, input: os.path.join(
                os.path.dirname(input.run), "hyps", f"{wc.label}.txt"
            ),
            arcs=lambda wc: (
                f"--max-transitive-arcs {GB['max_transitive_arcs']}"
                if GB["max_transitive_arcs"]
                else ""
            ),
            debpe=GECP.debpe_arg(),
        shell:
            "$PY -m fastdec m2score {params.hyp} {input.m2} {params.debpe} {params.arcs} --json {output.json} "
            "> {log} 2>&1"

else:

    rule gec_sari:
        # SARI and multi-reference BLEU (simplification, Ge et al. Table 4) of one method of a benchmark run, on its
        # de-BPE'd hypotheses against the benchmark set's sources and references.
        input:
            run=f"{G}/bench/{{run}}/summary.csv",
            src=f"{G}/bench/set.src",
            refs=f"{G}/bench/set.refs",
        output:
            json=f"{G}/bench/{{run}}/sari.{{label}}.json",
        log:
            log("gec_sari_{run}_{label}"),
        benchmark:
            bench("gec_sari_{run}_{label}")
        wildcard_constraints:
            run="[^/]+",
            label="|".join(re.escape(label) for label in GEC_LABELS),
        threads: 1
        resources:
            mem_mb=2000,
            runtime=30,
        params:
            hyp=lambda wc, input: os.path.join(
                os.path.dirname(input.run), "hyps", f"{wc.label}.txt"
            ),
        shell:
            "$PY -m fastdec sari-score {params.hyp} --source {input.src} --refs {input.refs} --remove-bpe "
            "--json {output.json} > {log} 2>&1"
