# AT models: the teacher and the no-KD baseline train on the original data, the verifier on the Seq-KD data.
rule train_at:
    input:
        data=lambda wc: f"{AT_DATA[wc.model]}/dict.{SRC}.txt",
    output:
        model=f"{R}/models/{{model}}/model.pt",
        summary=f"{R}/models/{{model}}/train.json",
    params:
        spec=lambda wc: json.dumps(train_spec(wc.model)),
        data=lambda wc: AT_DATA[wc.model],
        save_dir=f"{R}/models/{{model}}/checkpoints",
        device=config["device"],
    wildcard_constraints:
        model="baseline|verifier",
    log:
        log("train_{model}"),
    benchmark:
        bench("train_{model}")
    threads: lambda wc: train_spec(wc.model).get("threads", 2)
    conda:
        CONDA_ENV
    resources:
        mem_mb=lambda wc: train_spec(wc.model).get("mem_mb", 4000),
        runtime=lambda wc: train_spec(wc.model).get("runtime", 60),
        gpu=lambda wc: train_spec(wc.model).get("gpus", 0),
    shell:
        "$PY $SCRIPTS/train.py --spec '{params.spec}' --data-bin {params.data} --save-dir {params.save_dir} "
        "--model-out {output.model} --summary {output.summary} --device {params.device} "
        "--threads {threads} >> {log} 2>&1"


# The teacher is on the critical path (teacher -> Seq-KD -> verifier): schedule it before the baseline.
use rule train_at as train_teacher with:
    wildcard_constraints:
        model="teacher",
    priority: 50
