# The efficient-student track (Hsu et al. 2020): the students and their L0 phases are trained by the ONE training
# rule (fastdec/workflow/models.py, plan.py here); benchmark runs and tables go through the ONE bench and table
# rules (plan.py). The track's own step: the start checkpoint of each pruning
# phase -- the base student for its L0 phase, the L0 student pruned (heads with gate 0 removed from the weights)
# for its fine-tuning -- without optimizer state and with a fresh training clock (fastdec.tracks.students.prune).
from fastdec.tracks.specs import alternatives
from fastdec.layout import ResultsLayout
from fastdec.tracks.students.plan import (
    init_checkpoint,
    init_source,
    pruned_names,
    student_spec,
    warm_started,
)

STUDENTS = config["students"]
STUDENTS_PHASES = [n for l0, ft, _ in pruned_names(STUDENTS) for n in (l0, ft)]
STUDENTS_DICTIONARY = ResultsLayout(R).dictionary(SRC, STUDENTS["data"])


rule students_warm_start:
    # students.init_from: verifier -- the student with every tensor it shares with the verifier (name and shape)
    input:
        verifier=ResultsLayout(R).model("verifier"),
        dictionary=STUDENTS_DICTIONARY,
    output:
        init=init_checkpoint(R, "{name}"),
        report=f"{R}/students/init/{{name}}.copied.json",
    log:
        log("students/warm_start_{name}"),
    benchmark:
        bench("students/warm_start_{name}")
    wildcard_constraints:
        name=alternatives(warm_started(STUDENTS)),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        data_bin=lambda wc, input: os.path.dirname(input.dictionary),
        spec=lambda wc: student_spec(STUDENTS, wc.name),
        plugin=P.plugin,
    shell:
        "$PY -m fastdec students-warm-start --verifier {input.verifier} --data-bin {params.data_bin} "
        "--spec '{params.spec}' --user-dir {params.plugin} --out {output.init} --report {output.report} > {log} 2>&1"


rule students_init:
    input:
        model=lambda wc: init_source(STUDENTS, wc.name, R)[0],
        dictionary=STUDENTS_DICTIONARY,
    output:
        init=init_checkpoint(R, "{name}"),
        heads=f"{R}/students/init/{{name}}.heads.json",
    log:
        log("students/init_{name}"),
    benchmark:
        bench("students/init_{name}")
    wildcard_constraints:
        name=alternatives(STUDENTS_PHASES),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        data_bin=lambda wc, input: os.path.dirname(input.dictionary),
        no_prune=lambda wc: "" if init_source(STUDENTS, wc.name, R)[1] else "--no-prune",
        min_heads=STUDENTS["pruning"]["min_heads_per_layer"],
    shell:
        "$PY -m fastdec students-prune --checkpoint {input.model} --data-bin {params.data_bin} "
        "--out {output.init} --report {output.heads} --min-heads-per-layer {params.min_heads} {params.no_prune} > {log} 2>&1"
