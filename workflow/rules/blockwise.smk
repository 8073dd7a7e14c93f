# Blockwise parallel decoding (Stern et al. 2018): combined scoring/proposal models on top of the AT models of the
# MT chain, decoded with the engine (fastdec/engine/blockwise_drafter.py), and the paper's tables.
#
#   variant   base model                 training data       base parameters
#   regular   models/baseline            data-bin/raw        frozen (only the new head layer trains)
#   distill   models/verifier (Seq-KD)   data-bin/distill    frozen
#   finetune  models/baseline            data-bin/raw        fine-tuned
#   both      models/verifier (Seq-KD)   data-bin/distill    fine-tuned
#
# Outputs under results/<experiment>/blockwise/: models/<variant>_k<K>/, eval/{valid,test}/<variant>_k<K>.json
# (+ hyps/), tables/blockwise_*.csv|png. Helpers: fastdec/blockwise/workflow.py.
if "blockwise" not in config:
    raise ValueError(
        "config: tracks.blockwise is on but the config has no `blockwise:` section "
        "(see workflow/schemas/blockwise.schema.yaml)"
    )


validate(config["blockwise"], "../schemas/blockwise.schema.yaml")

if REPO not in sys.path:
    sys.path.insert(0, REPO)
import fastdec.blockwise.workflow as bwf

BW = config["blockwise"]
bwf.check_config(BW, config["device"])
BW_DIR = f"{R}/blockwise"
BW_DEC = BW["decode"]
BW_MODELS = bwf.models(BW)
BW_TEST_KS = bwf.train_block_sizes(BW) if "both" in BW["variants"] else []
# The GAD track's test benchmark (workflow/rules/gad.smk: {GAD.G}/bench/test/{summary.csv,sentences.jsonl}), only
# when that track is on; the comparison table recomputes its rows on the test sentences this track decodes.
BW_GAD_DIR = (getattr(globals().get("GAD"), "G", None) or f"{R}/gad") if TRACKS["gad"] else None
BW_GAD = [f"{BW_GAD_DIR}/bench/test/summary.csv", f"{BW_GAD_DIR}/bench/test/sentences.jsonl"] if BW_GAD_DIR else []
BW_OUTPUTS = bwf.table_outputs(BW, f"{BW_DIR}/tables", BW_GAD)


rule blockwise_train:
    input:
        base=lambda wc: f"{R}/models/{bwf.VARIANT_SETUP[wc.variant][0]}/model.pt",
        data=lambda wc: f"{R}/data-bin/{bwf.VARIANT_SETUP[wc.variant][1]}/dict.{SRC}.txt",
    output:
        model=f"{BW_DIR}/models/{{variant}}_k{{k}}/model.pt",
        summary=f"{BW_DIR}/models/{{variant}}_k{{k}}/train.json",
    params:
        spec=lambda wc, input: json.dumps(bwf.train_spec(BW, wc.variant, wc.k, input.base)),
        data=lambda wc, input: os.path.dirname(input.data),
        save_dir=f"{BW_DIR}/models/{{variant}}_k{{k}}/checkpoints",
        device=config["device"],
        plugin=PLUGIN,
    wildcard_constraints:
        variant="regular|distill|finetune|both",
        k=r"\d+",
    log:
        log("blockwise_train_{variant}_k{k}"),
    benchmark:
        bench("blockwise_train_{variant}_k{k}")
    threads: BW["train"]["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=BW["train"]["mem_mb"],
        runtime=BW["train"]["runtime"],
        gpu=BW["train"]["gpus"],
    shell:
        "$PY $SCRIPTS/train.py --spec '{params.spec}' --data-bin {params.data} --save-dir {params.save_dir} "
        "--model-out {output.model} --summary {output.summary} --device {params.device} "
        "--criterion blockwise_cross_entropy --user-dir {params.plugin} --threads {threads} >> {log} 2>&1"


# Table 1 (valid): greedy with p_1 and blockwise decoding of every k (exact; plus top-k and minimum block size for
# the "both" models), interleaved per sentence in one process, batch size 1.
rule blockwise_eval_valid:
    input:
        model=f"{BW_DIR}/models/{{variant}}_k{{k}}/model.pt",
        src=f"{R}/data/bpe/valid.{SRC}",
        ref=f"{R}/data/raw/valid.{TGT}",
        dict=f"{R}/data-bin/raw/dict.{SRC}.txt",
    output:
        f"{BW_DIR}/eval/valid/{{variant}}_k{{k}}.json",
    params:
        split="valid",
        settings=lambda wc: bwf.valid_settings(BW, wc.variant, wc.k),
        extra=bwf.limit_arg(BW_DEC["valid_sentences"]),
        data_bin=lambda wc, input: os.path.dirname(input.dict),
        lang=TGT,
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
        device=config["device"],
        precision=BW_DEC["head_precision"],
        warmup=BW_DEC["warmup"],
        hyp_dir=f"{BW_DIR}/eval/valid/hyps/{{variant}}_k{{k}}",
    wildcard_constraints:
        variant="regular|distill|finetune|both",
        k=r"\d+",
    log:
        log("blockwise_eval_valid_{variant}_k{k}"),
    benchmark:
        bench("blockwise_eval_valid_{variant}_k{k}")
    threads: BW_DEC["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=BW_DEC["mem_mb"],
        runtime=BW_DEC["runtime"],
        gpu=BW_DEC["gpus"],
    shell:
        "$PY $SCRIPTS/blockwise_eval.py --checkpoint {input.model} --data-bin {params.data_bin} "
        "--input {input.src} --ref {input.ref} --lang {params.lang} --settings {params.settings} {params.extra} "
        "--max-len-a {params.a} --max-len-b {params.b} --device {params.device} "
        "--head-precision {params.precision} --warmup {params.warmup} --threads {threads} "
        "--meta variant={wildcards.variant} --meta split={params.split} --output {output} "
        "--hyp-dir {params.hyp_dir} > {log} 2>&1"


# Table 4 / benchmark (test, "both" models): fairseq beam search, engine greedy and blockwise decoding of every k on
# the same weights, batch size 1, interleaved per sentence in one process.
use rule blockwise_eval_valid as blockwise_eval_test with:
    input:
        model=f"{BW_DIR}/models/{{variant}}_k{{k}}/model.pt",
        src=f"{R}/data/bpe/test.{SRC}",
        ref=f"{R}/data/raw/test.{TGT}",
        dict=f"{R}/data-bin/raw/dict.{SRC}.txt",
    output:
        f"{BW_DIR}/eval/test/{{variant}}_k{{k}}.json",
    params:
        split="test",
        settings=lambda wc: bwf.test_settings(BW, wc.k, config["device"]),
        extra=f"{bwf.limit_arg(BW_DEC['test_sentences'])} --beams {BW_DEC['beam']}",
        data_bin=lambda wc, input: os.path.dirname(input.dict),
        lang=TGT,
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
        device=config["device"],
        precision=BW_DEC["head_precision"],
        warmup=BW_DEC["warmup"],
        hyp_dir=f"{BW_DIR}/eval/test/hyps/{{variant}}_k{{k}}",
    wildcard_constraints:
        variant="both",
        k=r"\d+",
    log:
        log("blockwise_eval_test_{variant}_k{k}"),
    benchmark:
        bench("blockwise_eval_test_{variant}_k{k}")


rule blockwise_tables:
    input:
        valid=[f"{BW_DIR}/eval/valid/{v}_k{k}.json" for v, k in BW_MODELS],
        test=[f"{BW_DIR}/eval/test/both_k{k}.json" for k in BW_TEST_KS],
        gad=BW_GAD,
        ref=f"{R}/data/raw/test.{TGT}",
    output:
        **{
            name: report(path, caption=f"../report/{os.path.basename(path).rsplit('.', 1)[0]}.rst",
                         category="Blockwise (Stern et al. 2018)")
            for name, path in BW_OUTPUTS.items()
        },
    params:
        ks=",".join(str(k) for k in sorted(BW["block_sizes"])),
        topk=",".join(str(t) for t in BW_DEC["topk"]) or "none",
        min_blocks=",".join(str(x) for x in BW_DEC["min_block_sizes"]) or "none",
        beam=BW_DEC["beam"],
        experiment=EXP,
        outputs=lambda wc, output: " ".join(f"--out-{n.replace('_', '-')} {p}" for n, p in output.items()),
        gad=lambda wc, input: (
            f"--gad-summary {input.gad[0]} --gad-sentences {input.gad[1]} --ref {input.ref} --lang {TGT}"
            if input.gad
            else ""
        ),
    log:
        log("blockwise_tables"),
    benchmark:
        bench("blockwise_tables")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "$PY $SCRIPTS/blockwise_tables.py --valid {input.valid} --test {input.test} {params.gad} "
        "--block-sizes {params.ks} --topk {params.topk} --min-block-sizes {params.min_blocks} --beam {params.beam} "
        "--title {params.experiment} {params.outputs} > {log} 2>&1"


for _bw_item in BW_OUTPUTS.values():
    REPORT_ITEMS.append(_bw_item)
