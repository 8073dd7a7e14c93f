# ONE training rule for every model: the MT chain's teacher, baseline and verifier, the GEC model, the GAD drafters
# and the Blockwise models, at results/<experiment>/<track>models/<name>/ (model.pt, train.json, checkpoints/).
# Inputs, spec, task/criterion/--user-dir, resources and priority of each: fastdec/workflow/models.py. Resumable:
# `fastdec train` continues from checkpoints/checkpoint_last.pt.
MODELS = P.models


rule train:
    input:
        unpack(MODELS.inputs),
    output:
        model=L.model("{name}", "{track}"),
        summary=L.train_summary("{name}", "{track}"),
    log:
        log("{track}train_{name}"),
    benchmark:
        bench("{track}train_{name}")
    wildcard_constraints:
        track=MODELS.track_regex(),
        name=MODELS.name_regex(),
    # the teacher (-> Seq-KD -> verifier -> drafters) and the GEC model head the longest chains
    priority: MODELS.priority
    threads: MODELS.threads
    resources:
        mem_mb=MODELS.resource("mem_mb"),
        runtime=MODELS.resource("runtime"),
        gpu=MODELS.resource("gpus"),
    params:
        spec=MODELS.spec,
        data=MODELS.data,
        save_dir=L.checkpoints("{name}", "{track}"),
        device=config["device"],
        dtype=config["dtype"],
        flags=MODELS.flags,
    shell:
        "$PY -m fastdec train --spec '{params.spec}' --data-bin {params.data} --save-dir {params.save_dir} "
        "--model-out {output.model} --summary {output.summary} --device {params.device} --dtype {params.dtype} "
        "--threads {threads} {params.flags} >> {log} 2>&1"


rule bart_init:
    # the pretrained BART's weights (all, or the decoder layers init_from_bart names) for --finetune-from-model
    input:
        P.bart.init_archive,
    output:
        L.bart_init("{track}", "{name}"),
    log:
        log("{track}bart_init_{name}"),
    benchmark:
        bench("{track}bart_init_{name}")
    wildcard_constraints:
        **P.bart.init_constraints(),
    threads: 1
    resources:
        mem_mb=12000,
        runtime=30,
    params:
        member=P.bart.init_member,
        layers=P.bart.init_layers_arg,
    shell:
        "$PY -m fastdec bart-init --archive {input} --member {params.member} {params.layers} --output {output} "
        "> {log} 2>&1"
