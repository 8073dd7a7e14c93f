# The efficient-student track (Hsu et al. 2020): the students and their L0 phases are trained by the ONE training
# rule (fastdec/workflow/models.py, fastdec/workflow/students.py); benchmark runs and tables go through the ONE
# bench and table rules (fastdec/tracks/students.py). The track's own step: pruning an L0-trained student (heads
# with gate 0 removed from the weights) before its fine-tuning.
from fastdec.workflow.models import alternatives
from fastdec.workflow.students import pruned_names

STUDENTS_L0 = [l0 for l0, _, _ in pruned_names(config["students"])]


rule students_prune:
    input:
        model=f"{R}/students/models/{{l0}}/model.pt",
        dictionary=f"{R}/data-bin/{config['students']['data']}/dict.{SRC}.txt",
    output:
        pruned=f"{R}/students/models/{{l0}}/pruned.pt",
        heads=f"{R}/students/models/{{l0}}/heads.json",
    params:
        data_bin=lambda wc, input: os.path.dirname(input.dictionary),
    wildcard_constraints:
        l0=alternatives(STUDENTS_L0),
    log:
        log("students/prune_{l0}"),
    benchmark:
        bench("students/prune_{l0}")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    shell:
        "$PY -m fastdec.students.prune --checkpoint {input.model} --data-bin {params.data_bin} "
        "--out {output.pruned} --report {output.heads} > {log} 2>&1"
