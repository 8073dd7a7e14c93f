# Decoding with fairseq's own SequenceGenerator (beam search and greedy): the baselines every speedup is measured
# against. Two runs per system: batched over the test set (BLEU, sentences/s) and batch 1 (latency per sentence).


rule decode_fairseq:
    input:
        model=lambda wc: L.model(at_system(wc)[0]),
        data=L.dictionary(SRC),
    output:
        tok=f"{R}/decode/{{system}}/{{run}}.tok",
        detok=f"{R}/decode/{{system}}/{{run}}.detok",
        timing=f"{R}/decode/{{system}}/{{run}}.timing.json",
    log:
        log("decode_{system}_{run}"),
    benchmark:
        bench("decode_{system}_{run}")
    wildcard_constraints:
        system="|".join(AT_SYSTEMS),
        run="test|latency",
    threads: DEC["threads"]
    resources:
        mem_mb=DEC["mem_mb"],
        runtime=DEC["runtime"],
        gpu=DEC["gpus"],
    params:
        beam=lambda wc: at_system(wc)[1],
        # batched: max_tokens per batch; latency: one sentence per batch on the latency subset (split test1)
        batching=lambda wc: (
            f"--max-tokens {DEC['max_tokens']}"
            if wc.run == "test"
            else "--batch-size 1"
        ),
        subset=lambda wc: "test" if wc.run == "test" else "test1",
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
        device=config["device"],
        data_bin=lambda wc, input: os.path.dirname(input.data),
        lang=TGT,
    shell:
        "$PY -m fastdec fairseq-decode --data-bin {params.data_bin} --checkpoint {input.model} "
        "--subset {params.subset} --beam {params.beam} {params.batching} --max-len-a {params.a} "
        "--max-len-b {params.b} --device {params.device} --threads {threads} --lang {params.lang} "
        "--tok-out {output.tok} --detok-out {output.detok} --timing {output.timing} > {log} 2>&1"
