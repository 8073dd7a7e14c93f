# GEC track, gec.pretrain (Ge et al. 2022, Sec. 4.1.1): synthetic pretraining pairs after Grundkiewicz et al. (2019).
# Clean monolingual text (downloaded by the fetch rule) -> shards -> noised (source, target) pairs; then the shared
# rules of bpe.smk BPE each shard with the GEC track's codes and binarise with its dictionary (gec/pretrain/data-bin),
# the ONE training rule trains gec/models/gec_pretrain on it and the GEC model fine-tunes from that
# (fastdec/workflow/models.py). Paths and arguments: plan.py here (GecPlan); steps: pretrain_data.py.
PT = GECP.PT
PRE = GEC["pretrain"]


rule gec_pretrain_split:
    # the first valid_sentences lines -> valid, the next `sentences` round-robin into the shards
    input:
        GECP.pretrain_downloads(),
    output:
        GECP.pretrain_clean(),
    log:
        log("gec_pretrain_split"),
    benchmark:
        bench("gec_pretrain_split")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=GECP.pretrain_runtime("split"),
    params:
        files=GECP.pretrain_file_args(),
        out=lambda wc, output: os.path.dirname(output[0]),
        sentences=GECP.pretrain_flag("sentences", "sentences"),
        valid=PRE["valid_sentences"],
        shards=PRE["shards"],
    shell:
        "$PY -m fastdec gec-synthetic split {params.files} --out {params.out} {params.sentences} "
        "--valid-sentences {params.valid} --shards {params.shards} > {log} 2>&1"


rule gec_pretrain_confusion:
    # confusion sets from the vocabulary of the first clean shard (a spellchecker's suggestions in the paper)
    input:
        f"{PT}/clean/train.0.txt",
    output:
        f"{PT}/confusion.json",
    log:
        log("gec_pretrain_confusion"),
    benchmark:
        bench("gec_pretrain_confusion")
    threads: 1
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        sample=GECP.pretrain_flag("confusion.sample_sentences", "sample"),
        vocab=PRE["confusion"]["vocab_size"],
        candidates=PRE["confusion"]["max_candidates"],
        tokenize=GECP.pretrain_tokenize_flag(),
    shell:
        "$PY -m fastdec gec-synthetic confusion --text {input} --out {output} {params.sample} "
        "--vocab-size {params.vocab} --max-candidates {params.candidates} {params.tokenize} > {log} 2>&1"


rule gec_pretrain_corrupt:
    # one shard (or the held-out valid lines) -> noised source, clean target; seeded by noise.seed and the shard
    input:
        text=f"{PT}/clean/{{part}}.txt",
        confusion=f"{PT}/confusion.json",
    output:
        src=f"{PT}/noised/{{part}}.src",
        tgt=f"{PT}/noised/{{part}}.tgt",
    log:
        log("gec_pretrain_corrupt_{part}"),
    benchmark:
        bench("gec_pretrain_corrupt_{part}")
    wildcard_constraints:
        part=r"valid|train\.\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=GECP.pretrain_runtime("corrupt"),
    params:
        noise=GECP.pretrain_noise_arg(),
        shard=GECP.pretrain_shard_number,
        max_words=GECP.pretrain_flag("max_words", "max-words"),
        tokenize=GECP.pretrain_tokenize_flag(),
    shell:
        "$PY -m fastdec gec-synthetic corrupt --text {input.text} --confusion {input.confusion} --src {output.src} "
        "--tgt {output.tgt} --noise {params.noise} --shard {params.shard} {params.max_words} {params.tokenize} "
        "> {log} 2>&1"


# the BPE'd shards (rule apply_bpe) -> the training split fairseq binarises
ruleorder: gec_pretrain_join > apply_bpe


rule gec_pretrain_join:
    input:
        [
            f"{R}/gec/pretrain/data/bpe/{shard}.{{lang}}"
            for shard in GECP.pretrain_shards()
        ],
    output:
        f"{R}/gec/pretrain/data/bpe/train.{{lang}}",
    log:
        log("gec_pretrain_join_{lang}"),
    benchmark:
        bench("gec_pretrain_join_{lang}")
    wildcard_constraints:
        lang="src|tgt",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=GECP.pretrain_runtime("join"),
    shell:
        "cat {input} > {output} 2> {log}"
