# Scoring: sacreBLEU (with its signature) against the untokenised references, and the identical-to-greedy count.
# The table (tables/table1_at.csv) is written by the table rule of experiments.smk (fastdec/tracks/mt/plan.py).


rule score_bleu:
    input:
        hyp=f"{R}/decode/{{system}}/test.detok",
        ref=L.raw("test", TGT),
        timing=f"{R}/decode/{{system}}/test.timing.json",
        latency=f"{R}/decode/{{system}}/latency.timing.json",
        greedy=f"{R}/decode/verifier_b1/test.tok",
        tok=f"{R}/decode/{{system}}/test.tok",
    output:
        L.eval("{system}"),
    log:
        log("score_{system}"),
    benchmark:
        bench("score_{system}")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "$PY -m fastdec score --system {wildcards.system} --hyp {input.hyp} --ref {input.ref} "
        "--timing {input.timing} --latency {input.latency} --greedy {input.greedy} --tok {input.tok} "
        "--output {output} > {log} 2>&1"
