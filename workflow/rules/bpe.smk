# Joint BPE over both training sides, applied to every split, then binarised with one joined dictionary: ONE rule
# each for every dataset of the plan (fastdec/workflow/plan.py, Plan.datasets): the MT chain's ({ds} = "",
# data-bin/raw), the GEC track's ({ds} = "gec/", gec/data-bin) and its synthetic pretraining pairs ({ds} =
# "gec/pretrain/", gec/pretrain/data-bin: the GEC track's codes and dictionary, Dataset.codes_from/dict_from). A
# dataset with bpe.kind gpt2 (BART-initialised models) gets BART's GPT-2 BPE instead (rule gpt2_bpe) and BART's
# dictionary.


rule learn_bpe:
    input:
        P.bpe_train_text,
    output:
        f"{R}/{{ds}}data/bpe/codes",
    log:
        log("{ds}learn_bpe"),
    benchmark:
        bench("{ds}learn_bpe")
    wildcard_constraints:
        **P.bpe_constraints(),
    threads: 1
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        merges=P.bpe_merges,
        min_freq=P.bpe_min_frequency,
    shell:
        "$PY -m fastdec bpe learn --inputs {input} --merges {params.merges} "
        "--min-frequency {params.min_freq} --codes {output} > {log} 2>&1"


rule apply_bpe:
    input:
        codes=P.bpe_codes,
        text=P.bpe_text,
    output:
        f"{R}/{{ds}}data/bpe/{{split}}.{{lang}}",
    log:
        log("{ds}apply_bpe_{split}.{lang}"),
    benchmark:
        bench("{ds}apply_bpe_{split}.{lang}")
    wildcard_constraints:
        **P.bpe_constraints(),
        split=r"train|valid|test|final|train\.\d+",  # train.<k>: a shard of the synthetic pretraining pairs
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "$PY -m fastdec bpe apply --codes {input.codes} --input {input.text} --output {output} > {log} 2>&1"


rule gpt2_bpe:
    # BART's GPT-2 byte-level BPE on the untokenised text, as fairseq's BART recipe applies it (ids per line)
    input:
        text=P.bpe_text,
        encoder=P.bart.file("encoder.json"),
        vocab=P.bart.file("vocab.bpe"),
    output:
        f"{R}/{{ds}}data/bpe/{{split}}.{{lang}}",
    log:
        log("{ds}gpt2_bpe_{split}.{lang}"),
    benchmark:
        bench("{ds}gpt2_bpe_{split}.{lang}")
    wildcard_constraints:
        **P.bpe_constraints(gpt2=True),
        split="train|valid|test",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        truncate=P.gpt2_truncate_arg,
    shell:
        "$PY -m fastdec gpt2-bpe --encoder-json {input.encoder} --vocab-bpe {input.vocab} --input {input.text} "
        "--output {output} {params.truncate} > {log} 2>&1"


rule binarize:
    # declared output: the source dictionary (fairseq writes both, and the .bin/.idx files beside them)
    input:
        splits=P.binarize_inputs,
        srcdict=P.binarize_dict,
    output:
        f"{R}/{{bin}}/dict.{{src}}.txt",
    log:
        log("{bin}/binarize.{src}"),
    benchmark:
        bench("{bin}/binarize.{src}")
    wildcard_constraints:
        **P.bin_constraints(),
    threads: 2
    resources:
        mem_mb=4000,
        runtime=P.binarize_runtime,
    params:
        prefix=lambda wc, input: os.path.dirname(input.splits[0]),
        srcdict=P.binarize_dict_arg,
        dest=lambda wc, output: os.path.dirname(output[0]),
        tgt=P.binarize_tgt,
        tests=P.binarize_test_arg,
    shell:
        "$PY -m fairseq_cli.preprocess --source-lang {wildcards.src} --target-lang {params.tgt} "
        "--trainpref {params.prefix}/train --validpref {params.prefix}/valid {params.tests} "
        "--destdir {params.dest} --joined-dictionary {params.srcdict} --workers {threads} > {log} 2>&1"
