# Joint BPE over both training sides, applied to every split, then binarised with one joined dictionary.


rule learn_bpe:
    input:
        expand(f"{R}/data/tok/train.{{lang}}", lang=[SRC, TGT]),
    output:
        f"{R}/data/bpe/codes",
    params:
        merges=config["bpe"]["merges"],
        min_freq=config["bpe"].get("min_frequency", 2),
    log:
        log("learn_bpe"),
    benchmark:
        bench("learn_bpe")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "$PY $SCRIPTS/bpe.py learn --inputs {input} --merges {params.merges} "
        "--min-frequency {params.min_freq} --codes {output} > {log} 2>&1"


rule apply_bpe:
    input:
        codes=f"{R}/data/bpe/codes",
        text=f"{R}/data/tok/{{split}}.{{lang}}",
    output:
        f"{R}/data/bpe/{{split}}.{{lang}}",
    wildcard_constraints:
        split="train|valid|test",
    log:
        log("apply_bpe_{split}.{lang}"),
    benchmark:
        bench("apply_bpe_{split}.{lang}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "$PY $SCRIPTS/bpe.py apply --codes {input.codes} --input {input.text} --output {output} > {log} 2>&1"


rule latency_subset:
    # The batch-1 latency runs decode the first N test sentences (config decode.latency_sentences).
    input:
        f"{R}/data/bpe/test.{{lang}}",
    output:
        f"{R}/data/bpe/latency.{{lang}}",
    params:
        n=config["decode"].get("latency_sentences") or 10**9,
    log:
        log("latency_subset.{lang}"),
    benchmark:
        bench("latency_subset.{lang}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "head -n {params.n} {input} > {output} 2> {log}"


rule binarize:
    input:
        expand(f"{R}/data/bpe/{{split}}.{{lang}}", split=SPLITS + ["latency"], lang=[SRC, TGT]),
    output:
        dict=f"{R}/data-bin/raw/dict.{SRC}.txt",
        stamp=f"{R}/data-bin/raw/train.{SRC}-{TGT}.{SRC}.bin",
    params:
        prefix=lambda wc, input: os.path.dirname(input[0]),
        dest=lambda wc, output: os.path.dirname(output.dict),
        langs=f"--source-lang {SRC} --target-lang {TGT}",
    log:
        log("binarize"),
    benchmark:
        bench("binarize")
    threads: 2
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        # test1 = the latency subset (fairseq names a second --testpref split "test1").
        "$PY -m fairseq_cli.preprocess {params.langs} "
        "--trainpref {params.prefix}/train --validpref {params.prefix}/valid "
        "--testpref {params.prefix}/test,{params.prefix}/latency --destdir {params.dest} "
        "--joined-dictionary --workers {threads} > {log} 2>&1"
