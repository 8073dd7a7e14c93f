# Super-resolution track (Stern et al. 2018, Sec. 7.2): patches of a photograph matplotlib ships, or CelebA faces
# from the fetch rule's download (superres.source: celeba), low -> high resolution as intensity tokens (images.py here), one data-bin with a joined dictionary; the models (superres/models/
# base and its proposal heads) come from the ONE training rule, the decoding runs and tables from experiments.smk
# (runs, models and tables: plan.py here).
from fastdec.tracks.superres import plan as superres_plan

SR = superres_plan.section(config)


rule superres_data:
    input:
        superres_plan.data_inputs(SR),
    output:
        superres_plan.data_files(R),
    log:
        log("superres/data"),
    benchmark:
        bench("superres/data")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=superres_plan.job_runtime(SR, 10),
    params:
        out=lambda wc, output: os.path.dirname(output[0]),
        args=superres_plan.data_args(SR),
    shell:
        "$PY -m fastdec superres-data --out {params.out} {params.args} > {log} 2>&1"


rule superres_binarize:
    # declared output: the source dictionary (fairseq writes the target's and the .bin/.idx files beside it; a rerun
    # removes the target's first, as fairseq refuses to overwrite it)
    input:
        superres_plan.data_files(R),
    output:
        f"{superres_plan.data_bin(R)}/dict.{superres_plan.SRC}.txt",
    log:
        log("superres/binarize"),
    benchmark:
        bench("superres/binarize")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=superres_plan.job_runtime(SR, 20),
    params:
        prefix=lambda wc, input: os.path.dirname(input[0]),
        dest=lambda wc, output: os.path.dirname(output[0]),
        src=superres_plan.SRC,
        tgt=superres_plan.TGT,
    shell:
        "rm -rf {params.dest}/dict.{params.tgt}.txt; "
        "$PY -m fairseq_cli.preprocess --source-lang {params.src} --target-lang {params.tgt} "
        "--trainpref {params.prefix}/train --validpref {params.prefix}/valid --testpref {params.prefix}/test "
        "--destdir {params.dest} --joined-dictionary --workers {threads} > {log} 2>&1"
