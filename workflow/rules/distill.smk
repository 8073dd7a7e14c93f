# Sequence-level knowledge distillation (Kim & Rush 2016): the teacher translates the training set with beam
# search, scattered over config distill.shards jobs and gathered into a new training set with the same dictionary.
# distill.teachers > 1: an ensemble of teachers (teacher, teacher2, ..: other seeds) translates (GAD paper Table 6).


rule shard_train:
    input:
        src=L.bpe("train", SRC),
        tgt=L.bpe("train", TGT),
    output:
        [f"{R}/distill/shards/{i}.{lang}" for i in SHARDS for lang in (SRC, TGT)],
    log:
        log("distill_shard"),
    benchmark:
        bench("distill_shard")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "$PY -m fastdec distill shard --src {input.src} --tgt {input.tgt} --outputs {output} > {log} 2>&1"


rule distill_shard:
    input:
        src=f"{R}/distill/shards/{{shard}}.{SRC}",
        tgt=f"{R}/distill/shards/{{shard}}.{TGT}",
        dict=L.dictionary(SRC),
        teachers=P.teachers,
    output:
        f"{R}/distill/shards/{{shard}}.hyp",
    log:
        log("distill_translate_{shard}"),
    benchmark:
        bench("distill_translate_{shard}")
    wildcard_constraints:
        shard=r"\d+",
    threads: KD["threads"]
    resources:
        mem_mb=KD["mem_mb"],
        runtime=KD["runtime"],
        gpu=KD["gpus"],
    params:
        beam=KD["beam"],
        max_tokens=KD["max_tokens"],
        a=config["decode"]["max_len_a"],
        b=config["decode"]["max_len_b"],
        device=config["device"],
        langs=f"--src-lang {SRC} --tgt-lang {TGT}",
        ensemble=lambda wc, input: ":".join(input.teachers),  # fairseq-generate --path a.pt:b.pt: an ensemble
    shell:
        "$PY -m fastdec distill translate --src {input.src} --tgt {input.tgt} {params.langs} "
        "--dict {input.dict} --checkpoint {params.ensemble} --output {output} --beam {params.beam} "
        "--max-tokens {params.max_tokens} --max-len-a {params.a} --max-len-b {params.b} "
        "--device {params.device} --threads {threads} > {log} 2>&1"


rule distill_gather:
    input:
        src=[f"{R}/distill/shards/{i}.{SRC}" for i in SHARDS],
        hyp=[f"{R}/distill/shards/{i}.hyp" for i in SHARDS],
    output:
        src=f"{R}/distill/train.{SRC}",
        tgt=f"{R}/distill/train.{TGT}",
        report=f"{R}/distill/report.json",
    log:
        log("distill_gather"),
    benchmark:
        bench("distill_gather")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "$PY -m fastdec distill gather --src-shards {input.src} --hyp-shards {input.hyp} "
        "--src-out {output.src} --tgt-out {output.tgt} --report {output.report} > {log} 2>&1"


rule binarize_distill:
    input:
        train=rules.distill_gather.output.src,
        train_tgt=rules.distill_gather.output.tgt,
        valid=expand(L.bpe("valid", "{lang}"), lang=[SRC, TGT]),
        dict=L.dictionary(SRC),
    output:
        dict=L.dictionary(SRC, "distill"),
    log:
        log("binarize_distill"),
    benchmark:
        bench("binarize_distill")
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        dest=lambda wc, output: os.path.dirname(output.dict),
        train=lambda wc, input: input.train.rsplit(".", 1)[0],
        valid=lambda wc, input: input.valid[0].rsplit(".", 1)[0],
        langs=f"--source-lang {SRC} --target-lang {TGT}",
    shell:
        "$PY -m fairseq_cli.preprocess {params.langs} "
        "--trainpref {params.train} --validpref {params.valid} --destdir {params.dest} "
        "--srcdict {input.dict} --tgtdict {input.dict} --workers {threads} > {log} 2>&1"
