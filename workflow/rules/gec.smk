# GEC track (Ge et al. 2022, Input-guided Aggressive Decoding): a Transformer GEC model trained in the workflow,
# decoded at batch 1 with fairseq beam 5, fairseq greedy, the engine's greedy decoding and IAD in ONE process on
# the same weights (scripts/benchmark_decoding.py), scored with MaxMatch (M2); the paper's Tables 1, 2, 12 and
# Figure 5 with its numbers beside ours. Data: UA-GEC (embedded in the ua-gec package, offline; default) or the
# BEA-2019 restricted English setting (config/gec_bea19.yaml). Everything goes to results/<experiment>/gec/.
import re
import shlex

if "gec" not in config:
    raise ValueError("config: tracks.gec_iad is on but there is no `gec:` section (see workflow/schemas/gec.schema.yaml)")


validate(config["gec"], "../schemas/gec.schema.yaml")

GEC = config["gec"]
G = f"{R}/gec"
GDATA = GEC["data"]
GB = GEC["benchmark"]
GSPLIT = GB["split"]
GEC_BEAM = GB["beam"]
GEC_CAPS = GB["iad_draft_caps"]
GEC_LABELS = [f"fairseq-beam{GEC_BEAM}", "fairseq-greedy", "greedy", "iad"] + [f"iad-draft{c}" for c in GEC_CAPS]
GEC_METHODS = "fairseq-beam,fairseq-greedy,greedy,iad"
GEC_SIDES = ["src", "tgt"]
# Benchmark runs are named <device>-t<threads>-n<sentences|all>: Table 1 runs on config `device` with
# benchmark.threads; Table 12 runs on the CPU with each of benchmark.cpu_threads (an identical run is reused).
GEC_N = str(GB["sentences"] or "all")
_cpu_n = GB["cpu_sentences"]
GEC_CPU_N = str(_cpu_n) if _cpu_n and (GB["sentences"] is None or _cpu_n < GB["sentences"]) else GEC_N
GEC_RUN1 = f"{config['device']}-t{GB['threads']}-n{GEC_N}"
GEC_CPU_RUNS = {t: f"cpu-t{t}-n{GEC_CPU_N}" for t in GB["cpu_threads"]}
_m = GEC["model"]
GEC_MODEL_DESC = (
    f"{_m['extra_args'].get('encoder-layers', 6)}+{_m['extra_args'].get('decoder-layers', 6)}"
    f" ({_m['arch']}, {_m['extra_args'].get('encoder-embed-dim', '')})".replace(", )", ")")
)
GEC_FULL = ["train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.m2", "stats.json"]


# --- data: a prepared corpus in {G}/data/full --------------------------------------------------------------------
if GDATA["source"] == "uagec":

    rule gec_prepare_uagec:
        # UA-GEC from the installed ua-gec package (offline): tokenised sentences, test M2 with both annotators.
        output:
            [f"{G}/data/full/{f}" for f in GEC_FULL],
        params:
            out=lambda wc, output: os.path.dirname(output[0]),
            valid_size=GDATA["uagec"]["valid_size"],
            seed=GDATA["uagec"]["seed"],
            layer=GDATA["uagec"]["layer"],
        log:
            log("gec_prepare_uagec"),
        benchmark:
            bench("gec_prepare_uagec")
        threads: 1
        conda:
            CONDA_ENV
        resources:
            mem_mb=4000,
            runtime=30,
        shell:
            "$PY $SCRIPTS/prepare_uagec.py --out {params.out} --valid-size {params.valid_size} "
            "--seed {params.seed} --layer {params.layer} > {log} 2>&1"

else:
    BEA = GDATA.get("bea19")
    if not BEA:
        raise ValueError("config gec.data.source is bea19 but gec.data.bea19 is missing")
    _bea_specs = [(f"gec.data.bea19.train[{i}]", s) for i, s in enumerate(BEA["train"])]
    _bea_specs += [("gec.data.bea19.valid", BEA["valid"]), ("gec.data.bea19.test", BEA["test"])]
    for _key, _spec in _bea_specs:
        if "archive" in _spec and _spec["archive"] not in BEA["archives"]:
            raise ValueError(f"config {_key}.archive: {_spec['archive']!r} is not a name under gec.data.bea19.archives")
        if "local" in _spec and _spec["local"] not in BEA["local"]:
            raise ValueError(f"config {_key}.local: {_spec['local']!r} is not a name under gec.data.bea19.local")
        if "local" in _spec and not (BEA["local"][_spec["local"]] and os.path.isfile(BEA["local"][_spec["local"]])):
            # Not fatal here (a dry run must work anywhere); the data job stops with the same message.
            print(f"gec: config key gec.data.bea19.local.{_spec['local']}: file not found: "
                  f"{BEA['local'][_spec['local']]!r}; the job gec_prepare_bea19 will stop there", file=sys.stderr)
    GEC_ARCHIVES = sorted({s["archive"] for _, s in _bea_specs if "archive" in s})

    rule gec_fetch:
        output:
            "results/gec_downloads/{archive}",
        params:
            url=lambda wc: BEA["archives"][wc.archive]["url"],
            sha=lambda wc: (
                f"--sha256 {BEA['archives'][wc.archive]['sha256']}" if BEA["archives"][wc.archive].get("sha256") else ""
            ),
        wildcard_constraints:
            archive="|".join(re.escape(a) for a in GEC_ARCHIVES),
        log:
            "results/gec_downloads/logs/{archive}.log",
        benchmark:
            "results/gec_downloads/benchmarks/{archive}.tsv"
        threads: 1
        conda:
            CONDA_ENV
        resources:
            mem_mb=500,
            runtime=120,
        retries: 2
        shell:
            "$PY $SCRIPTS/fetch_archive.py --url '{params.url}' {params.sha} --output {output} > {log} 2>&1"

    rule gec_prepare_bea19:
        # M2 corpora -> train pairs (every annotator's correction), CoNLL-2013 valid, CoNLL-2014 test (with M2).
        input:
            archives=[f"results/gec_downloads/{a}" for a in GEC_ARCHIVES],
        output:
            [f"{G}/data/full/{f}" for f in GEC_FULL + ["valid.m2"]],
        params:
            out=lambda wc, output: os.path.dirname(output[0]),
            sources=shlex.quote(json.dumps({"train": BEA["train"], "valid": BEA["valid"], "test": BEA["test"]})),
            archives=lambda wc, input: " ".join(
                f"--archive {a}={shlex.quote(p)}" for a, p in zip(GEC_ARCHIVES, input.archives)
            ),
            local=" ".join(f"--local {shlex.quote(f'{k}={v or str()}')}" for k, v in BEA["local"].items()),
        log:
            log("gec_prepare_bea19"),
        benchmark:
            bench("gec_prepare_bea19")
        threads: 1
        conda:
            CONDA_ENV
        resources:
            mem_mb=16000,
            runtime=60,
        shell:
            "$PY $SCRIPTS/gec_data.py bea19 --sources {params.sources} {params.archives} {params.local} "
            "--out {params.out} > {log} 2>&1"


rule gec_select:
    # Subsets (smoke), empty/over-long training pairs dropped and counted, valid.m2 for every source.
    input:
        [f"{G}/data/full/{f}" for f in GEC_FULL + (["valid.m2"] if GDATA["source"] == "bea19" else [])],
    output:
        [f"{G}/data/raw/{f}" for f in ["train.src", "train.tgt", "valid.src", "valid.tgt", "valid.m2", "test.src",
                                        "test.m2", "report.json"]],
    params:
        full=lambda wc, input: os.path.dirname(input[0]),
        out=lambda wc, output: os.path.dirname(output[0]),
        subset=" ".join(f"--subset-{k} {v}" for k, v in GDATA["subset"].items() if v),
        max_words=f"--max-words {GDATA['max_words']}" if GDATA["max_words"] else "",
    log:
        log("gec_select"),
    benchmark:
        bench("gec_select")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "$PY $SCRIPTS/gec_data.py select --full {params.full} --out {params.out} {params.subset} "
        "{params.max_words} > {log} 2>&1"


# --- BPE and binarisation (as bpe.smk: joint BPE, one joined dictionary) -----------------------------------------
rule gec_learn_bpe:
    input:
        [f"{G}/data/raw/train.{s}" for s in GEC_SIDES],
    output:
        f"{G}/data/bpe/codes",
    params:
        merges=GEC["bpe"]["merges"],
        min_freq=GEC["bpe"]["min_frequency"],
    log:
        log("gec_learn_bpe"),
    benchmark:
        bench("gec_learn_bpe")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "$PY $SCRIPTS/bpe.py learn --inputs {input} --merges {params.merges} "
        "--min-frequency {params.min_freq} --codes {output} > {log} 2>&1"


rule gec_apply_bpe:
    input:
        codes=f"{G}/data/bpe/codes",
        text=f"{G}/data/raw/{{split}}.{{side}}",
    output:
        f"{G}/data/bpe/{{split}}.{{side}}",
    wildcard_constraints:
        split="train|valid|test",
        side="src|tgt",
    log:
        log("gec_apply_bpe_{split}.{side}"),
    benchmark:
        bench("gec_apply_bpe_{split}.{side}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "$PY $SCRIPTS/bpe.py apply --codes {input.codes} --input {input.text} --output {output} > {log} 2>&1"


rule gec_binarize:
    input:
        [f"{G}/data/bpe/{split}.{s}" for split in ("train", "valid") for s in GEC_SIDES],
    output:
        dict=f"{G}/data-bin/dict.src.txt",
        stamp=f"{G}/data-bin/train.src-tgt.src.bin",
    params:
        prefix=lambda wc, input: os.path.dirname(input[0]),
        dest=lambda wc, output: os.path.dirname(output.dict),
    log:
        log("gec_binarize"),
    benchmark:
        bench("gec_binarize")
    threads: 2
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "$PY -m fairseq_cli.preprocess --source-lang src --target-lang tgt "
        "--trainpref {params.prefix}/train --validpref {params.prefix}/valid --destdir {params.dest} "
        "--joined-dictionary --workers {threads} > {log} 2>&1"


# --- the GEC model (resumable, scripts/train.py) --------------------------------------------------------------------
rule gec_train:
    input:
        data=f"{G}/data-bin/dict.src.txt",
        stamp=f"{G}/data-bin/train.src-tgt.src.bin",
    output:
        model=f"{G}/models/gec/model.pt",
        summary=f"{G}/models/gec/train.json",
    params:
        spec=json.dumps(GEC["model"]),
        data=lambda wc, input: os.path.dirname(input.data),
        save_dir=lambda wc, output: os.path.join(os.path.dirname(output.model), "checkpoints"),
        device=config["device"],
    log:
        log("gec_train"),
    benchmark:
        bench("gec_train")
    threads: GEC["model"]["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=GEC["model"]["mem_mb"],
        runtime=GEC["model"]["runtime"],
        gpu=GEC["model"]["gpus"],
    priority: 40
    shell:
        "$PY $SCRIPTS/train.py --spec '{params.spec}' --data-bin {params.data} --save-dir {params.save_dir} "
        "--model-out {output.model} --summary {output.summary} --device {params.device} "
        "--threads {threads} >> {log} 2>&1"


# --- benchmark: beam 5, fairseq greedy, engine greedy, IAD at batch 1, one process, same weights -------------------
rule gec_bench_set:
    # The sentences of Table 1 / Table 2 / Figure 5: the first benchmark.sentences of the chosen split.
    input:
        bpe=f"{G}/data/bpe/{GSPLIT}.src",
        src=f"{G}/data/raw/{GSPLIT}.src",
        m2=f"{G}/data/raw/{GSPLIT}.m2",
    output:
        bpe=f"{G}/bench/set.bpe",
        src=f"{G}/bench/set.src",
        m2=f"{G}/bench/set.m2",
    params:
        n=GB["sentences"] or 0,
    log:
        log("gec_bench_set"),
    benchmark:
        bench("gec_bench_set")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gec_data.py head --n {params.n} --pair {input.bpe} {output.bpe} "
        "--pair {input.src} {output.src} --m2 {input.m2} {output.m2} > {log} 2>&1"


rule gec_benchmark:
    input:
        model=f"{G}/models/gec/model.pt",
        data=f"{G}/data-bin/dict.src.txt",
        src=f"{G}/bench/set.bpe",
    output:
        csv=f"{G}/bench/{{device}}-t{{threads}}-n{{n}}/bench.csv",
        hyps=[f"{G}/bench/{{device}}-t{{threads}}-n{{n}}/hyp.{label}.txt" for label in GEC_LABELS],
        stats=[f"{G}/bench/{{device}}-t{{threads}}-n{{n}}/stats.{label}.jsonl" for label in GEC_LABELS],
    params:
        data_bin=lambda wc, input: os.path.dirname(input.data),
        methods=GEC_METHODS,
        beam=GEC_BEAM,
        a=GB["max_len_a"],
        b=GB["max_len_b"],
        warmup=GB["warmup"],
        caps=f"--max-draft-lens {','.join(str(c) for c in GEC_CAPS)}" if GEC_CAPS else "",
        limit=lambda wc: "" if wc.n == "all" else f"--limit {wc.n}",
        hyp=lambda wc, output: os.path.join(os.path.dirname(output.csv), "hyp"),
        stats=lambda wc, output: os.path.join(os.path.dirname(output.csv), "stats"),
    wildcard_constraints:
        device="cpu|cuda",
        threads=r"\d+",
        n=r"\d+|all",
    log:
        log("gec_benchmark_{device}-t{threads}-n{n}"),
    benchmark:
        bench("gec_benchmark_{device}-t{threads}-n{n}")
    # exclusive: claim every core Snakemake was given (capped at --cores), so no other job runs beside the timing;
    # torch itself uses {wildcards.threads} threads.
    threads: lambda wc: max(int(wc.threads), 4096 if GB["exclusive"] else 1)
    conda:
        CONDA_ENV
    resources:
        mem_mb=GB["mem_mb"],
        runtime=GB["runtime"],
        gpu=lambda wc: GB["gpus"] if wc.device == "cuda" else 0,
    shell:
        "export OMP_NUM_THREADS={wildcards.threads} MKL_NUM_THREADS={wildcards.threads}; "
        "$PY $SCRIPTS/benchmark_decoding.py --checkpoint {input.model} --data-bin {params.data_bin} "
        "--input {input.src} {params.limit} --methods {params.methods} --beam {params.beam} --batch-sizes 1 "
        "--max-len-a {params.a} --max-len-b {params.b} --device {wildcards.device} --threads {wildcards.threads} "
        "--warmup {params.warmup} {params.caps} --csv {output.csv} --hyp-prefix {params.hyp} "
        "--stats-prefix {params.stats} > {log} 2>&1"


rule gec_m2score:
    # MaxMatch P/R/F0.5 over both annotators (the official scorer's per-sentence choice), on de-BPE'd output.
    input:
        hyp=f"{G}/bench/{{run}}/hyp.{{label}}.txt",
        m2=f"{G}/bench/set.m2",
    output:
        tok=f"{G}/bench/{{run}}/hyp.{{label}}.tok",
        json=f"{G}/bench/{{run}}/m2.{{label}}.json",
    params:
        arcs=lambda wc: f"--max-transitive-arcs {GB['max_transitive_arcs']}" if GB["max_transitive_arcs"] else "",
    wildcard_constraints:
        run="[^/]+",
        label="|".join(re.escape(label) for label in GEC_LABELS),
    log:
        log("gec_m2score_{run}_{label}"),
    benchmark:
        bench("gec_m2score_{run}_{label}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "sed -E 's/(@@ )|(@@ ?$)//g' {input.hyp} > {output.tok} 2> {log}; "
        "$PY $SCRIPTS/m2score.py {output.tok} {input.m2} {params.arcs} --json {output.json} >> {log} 2>&1"


# --- tables and figure ----------------------------------------------------------------------------------------------
rule gec_table1:
    input:
        bench=f"{G}/bench/{GEC_RUN1}/bench.csv",
        m2=[f"{G}/bench/{GEC_RUN1}/m2.{label}.json" for label in GEC_LABELS],
    output:
        report(f"{G}/tables/gec_table1.csv", caption="../report/gec_table1.rst", category="GEC (IAD paper)"),
    params:
        beam=GEC_BEAM,
        split=GSPLIT,
        corpus=GDATA["source"],
        strict="--strict-identical" if GB["strict_identical"] else "",
    log:
        log("gec_table1"),
    benchmark:
        bench("gec_table1")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gec_tables.py table1 --bench {input.bench} --m2 {input.m2} --beam {params.beam} "
        "--split {params.split} --corpus {params.corpus} {params.strict} --output {output} > {log} 2>&1"


rule gec_analyze:
    # Figure 5 (speedup over greedy vs edit ratio) and Table 2 (examples with their decoding blocks).
    input:
        src=f"{G}/bench/set.src",
        stats=[f"{G}/bench/{GEC_RUN1}/stats.{label}.jsonl" for label in ("greedy", "iad")],
        hyps=[f"{G}/bench/{GEC_RUN1}/hyp.{label}.txt" for label in ("greedy", "iad")],
    output:
        figure=report(f"{G}/figures/gec_figure5.png", caption="../report/gec_figure5.rst",
                      category="GEC (IAD paper)"),
        examples=report(f"{G}/tables/gec_table2.csv", caption="../report/gec_table2.rst",
                        category="GEC (IAD paper)"),
        per_sentence=f"{G}/analysis/per_sentence.csv",
        summary=f"{G}/analysis/summary.json",
    params:
        stats=lambda wc, input: os.path.join(os.path.dirname(input.stats[0]), "stats"),
        hyp=lambda wc, input: os.path.join(os.path.dirname(input.hyps[0]), "hyp"),
        title=f"{EXP}: {GDATA['source']} {GSPLIT}, {GEC_MODEL_DESC}, {config['device']}, {GB['threads']} thread(s)",
    log:
        log("gec_analyze"),
    benchmark:
        bench("gec_analyze")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "MPLBACKEND=Agg $PY $SCRIPTS/gec_tables.py analyze --source {input.src} --stats-prefix {params.stats} "
        "--hyp-prefix {params.hyp} --figure {output.figure} --examples {output.examples} "
        "--per-sentence {output.per_sentence} --summary {output.summary} --title '{params.title}' > {log} 2>&1"


rule gec_table12:
    input:
        [f"{G}/bench/{run}/bench.csv" for run in GEC_CPU_RUNS.values()],
    output:
        report(f"{G}/tables/gec_table12.csv", caption="../report/gec_table12.rst", category="GEC (IAD paper)"),
    params:
        runs=lambda wc, input: " ".join(f"--run {t}={p}" for t, p in zip(GEC_CPU_RUNS, input)),
        model=GEC_MODEL_DESC,
        beam=GEC_BEAM,
    log:
        log("gec_table12"),
    benchmark:
        bench("gec_table12")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gec_tables.py table12 {params.runs} --model '{params.model}' --beam {params.beam} "
        "--output {output} > {log} 2>&1"


# Report order: Table 1, Figure 5, Table 2, Table 12 (captions: workflow/report/gec_*.rst).
REPORT_ITEMS.append(f"{G}/tables/gec_table1.csv")
REPORT_ITEMS.append(f"{G}/figures/gec_figure5.png")
REPORT_ITEMS.append(f"{G}/tables/gec_table2.csv")
REPORT_ITEMS.append(f"{G}/tables/gec_table12.csv")
