# Scoring: sacreBLEU (with its signature) against the untokenised references, and the identical-to-greedy count.


rule score_bleu:
    input:
        hyp=f"{R}/decode/{{system}}/test.detok",
        ref=f"{R}/data/raw/test.{TGT}",
        timing=f"{R}/decode/{{system}}/test.timing.json",
        latency=f"{R}/decode/{{system}}/latency.timing.json",
        greedy=f"{R}/decode/verifier_b1/test.tok",
        tok=f"{R}/decode/{{system}}/test.tok",
    output:
        f"{R}/eval/{{system}}.json",
    log:
        log("score_{system}"),
    benchmark:
        bench("score_{system}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "$PY $SCRIPTS/score.py --system {wildcards.system} --hyp {input.hyp} --ref {input.ref} "
        "--timing {input.timing} --latency {input.latency} --greedy {input.greedy} --tok {input.tok} "
        "--output {output} > {log} 2>&1"


rule table_at:
    input:
        [f"{R}/eval/{s}.json" for s in AT_SYSTEMS],
    output:
        report(
            f"{R}/tables/table1_at.csv",
            caption="../report/table1_at.rst",
            category="Translation (GAD paper)",
        ),
    log:
        log("table_at"),
    benchmark:
        bench("table_at")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/make_table.py at --inputs {input} --output {output} > {log} 2>&1"


if TRACKS["mt_at"]:
    REPORT_ITEMS.append(f"{R}/tables/table1_at.csv")
