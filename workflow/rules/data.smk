# Data: embedded corpus (default) or downloaded archives (paper scale) -> checked, cleaned plain text -> tokens.

rule fetch_archive:
    output:
        "results/downloads/{archive}",
    params:
        url=lambda wc: DATA["download"]["archives"][wc.archive]["url"],
        sha=lambda wc: (
            f"--sha256 {DATA['download']['archives'][wc.archive]['sha256']}"
            if DATA["download"]["archives"][wc.archive].get("sha256")
            else ""
        ),
    log:
        "results/downloads/logs/{archive}.log",
    benchmark:
        "results/downloads/benchmarks/{archive}.tsv"
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=500,
        runtime=120,
    retries: 2
    shell:
        "$PY $SCRIPTS/fetch_archive.py --url '{params.url}' {params.sha} --output {output} > {log} 2>&1"


rule prepare_split:
    input:
        unpack(prepare_inputs),
    output:
        src=f"{R}/data/raw/{{split}}.{SRC}",
        tgt=f"{R}/data/raw/{{split}}.{TGT}",
        report=f"{R}/data/raw/{{split}}.report.json",
    params:
        sources=prepare_source_args,
        limit=lambda wc: (
            f"--limit {DATA['subset'][wc.split]}" if DATA.get("subset", {}).get(wc.split) else ""
        ),
        max_words=DATA["max_words"],
        max_ratio=DATA["max_ratio"],
    wildcard_constraints:
        split="train|valid|test",
    log:
        log("prepare_{split}"),
    benchmark:
        bench("prepare_{split}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "$PY $SCRIPTS/prepare_data.py {params.sources} --split {wildcards.split} {params.limit} "
        "--max-words {params.max_words} --max-ratio {params.max_ratio} "
        "--src-out {output.src} --tgt-out {output.tgt} --report {output.report} > {log} 2>&1"


rule tokenize:
    input:
        f"{R}/data/raw/{{split}}.{{lang}}",
    output:
        f"{R}/data/tok/{{split}}.{{lang}}",
    wildcard_constraints:
        split="train|valid|test",
    log:
        log("tokenize_{split}.{lang}"),
    benchmark:
        bench("tokenize_{split}.{lang}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "$PY $SCRIPTS/tokenize_text.py --lang {wildcards.lang} --input {input} --output {output} > {log} 2>&1"
