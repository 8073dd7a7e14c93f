# MT chain data: embedded corpus (default) or downloaded archives (paper scale, fetch.smk) -> checked, cleaned plain
# text -> tokens; the latency subset of the BPE'd test set.


rule prepare_split:
    input:
        unpack(prepare_inputs),
    output:
        src=L.raw("{split}", SRC),
        tgt=L.raw("{split}", TGT),
        report=f"{R}/data/raw/{{split}}.report.json",
    log:
        log("prepare_{split}"),
    benchmark:
        bench("prepare_{split}")
    wildcard_constraints:
        split="train|valid|test|final",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        sources=prepare_source_args,
        limit=lambda wc: (
            f"--limit {DATA['subset'][wc.split]}"
            if DATA.get("subset", {}).get(wc.split)
            else ""
        ),
        max_words=DATA["max_words"],
        max_ratio=DATA["max_ratio"],
    shell:
        "$PY -m fastdec prepare-data {params.sources} --split {wildcards.split} {params.limit} "
        "--max-words {params.max_words} --max-ratio {params.max_ratio} "
        "--src-out {output.src} --tgt-out {output.tgt} --report {output.report} > {log} 2>&1"


rule tokenize:
    input:
        L.raw("{split}", "{lang}"),
    output:
        L.data("tok", "{split}", "{lang}"),
    log:
        log("tokenize_{split}.{lang}"),
    benchmark:
        bench("tokenize_{split}.{lang}")
    wildcard_constraints:
        split="train|valid|test|final",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "$PY -m fastdec tokenize-text --lang {wildcards.lang} --input {input} --output {output} > {log} 2>&1"


rule latency_subset:
    # The batch-1 latency runs decode the first N test sentences (config decode.latency_sentences).
    input:
        L.bpe("test", "{lang}"),
    output:
        L.bpe("latency", "{lang}"),
    log:
        log("latency_subset.{lang}"),
    benchmark:
        bench("latency_subset.{lang}")
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        n=DEC.get("latency_sentences") or 10**9,
    shell:
        "head -n {params.n} {input} > {output} 2> {log}"
