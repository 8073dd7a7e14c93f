# GAD track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2/4.2): NAT block drafter trained on the verifier's Seq-KD
# data, GAD (exact top-1) and GAD++ (top-beta within tau) decoding with the engine, Tables 1-3, 7-9, 11, Figure 4.
#   drafter:  [init from verifier] -> the training rule (train.smk: gad/models/drafter_k<K>, task block_drafting,
#             criterion glat_block_loss)
#   test:     one interleaved batch-1 benchmark (beam 5, greedy, NAT alone, GAD, GAD++ x2) -> Tables 1, 7, 9, Fig. 4
#   valid:    block-size sweep and beta x tau grid on a validation subset -> Tables 2, 3
#             (both: the bench and table rules of experiments.smk, runs and tables from plan.py here)
#   here:     peak memory in fresh processes (Table 8), iteration traces (Table 11)
# The drafter's training spec: plan.py here (Plan.train_spec, used by the train rule).
from fastdec.tracks.gad.plan import Plan as GadTrack

GADC = config["gad"]
GT = GadTrack(config, R)  # the track's methods, drafters and paths (plan.py)
G = GT.G
VERIFIER = GT.L.model("verifier")
TEST_SRC = GT.L.bpe("test", SRC)


rule gad_init_drafter:
    # All weights of the AT verifier + a <mask> embedding row: the drafter's starting point (init_from_verifier: all).
    input:
        verifier=VERIFIER,
        data=GT.dictionary,  # binarize_distill writes both dictionaries (joined)
    output:
        GT.init_from_verifier,
    log:
        log("gad_init_drafter"),
    benchmark:
        bench("gad_init_drafter")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        dict=lambda wc, input: os.path.join(
            os.path.dirname(input.data), f"dict.{TGT}.txt"
        ),
    shell:
        "$PY -m fastdec gad-init-drafter --verifier {input.verifier} --dict {params.dict} --output {output} "
        "> {log} 2>&1"


# Tables 8 and 11 belong to the translation tables (gad.task translation); CNN-DM has Table 10 only.
if GT.task == "translation":

    rule gad_table8_memory:
        # Each method in a fresh process (a process' peak memory only grows), decoded by the common layer.
        input:
            verifier=VERIFIER,
            drafter=GT.drafter(GT.k),
            data=GT.dictionary,
            src=TEST_SRC,
        output:
            table=report(
                f"{G}/tables/gad_table8_memory.csv",
                caption="../../../workflow/report/gad_table8_memory.rst",
                category="GAD",
            ),
            raw=f"{G}/tables/gad_table8_memory.json",
        log:
            log("gad_table8_memory"),
        benchmark:
            bench("gad_table8_memory")
        threads: GADC["threads"]
        resources:
            mem_mb=GADC["mem_mb"],
            runtime=GADC["runtime"],
            gpu=GADC["gpus"],
        params:
            methods=",".join(GT.methods(GT.memory)),
            data=lambda wc, input: os.path.dirname(input.data),
            n=GADC["memory_sentences"],
            a=DEC["max_len_a"],
            b=DEC["max_len_b"],
            device=config["device"],
            ref=GT.g["paper_reference"],
        shell:
            "$PY -m fastdec gad-memory --checkpoint {input.verifier} --data-bin {params.data} --input {input.src} "
            "--methods '{params.methods}' --limit {params.n} --max-len-a {params.a} --max-len-b {params.b} "
            "--device {params.device} --threads {threads} --output {output.table} --raw {output.raw} --paper-reference {params.ref} > {log} 2>&1"

    rule gad_table11_case_study:
        input:
            verifier=VERIFIER,
            drafter=GT.drafter(GT.k),
            data=GT.dictionary,
            src=TEST_SRC,
        output:
            report(
                f"{G}/tables/gad_table11_case_study.csv",
                caption="../../../workflow/report/gad_table11_case_study.rst",
                category="GAD",
            ),
        log:
            log("gad_table11_case_study"),
        benchmark:
            bench("gad_table11_case_study")
        threads: 1
        resources:
            mem_mb=GADC["mem_mb"],
            runtime=GADC["runtime"],
        params:
            data=lambda wc, input: os.path.dirname(input.data),
            k=GT.k,
            n=GADC["case_study"]["n"],
            pool=GADC["case_study"]["pool"],
            beta=GADC["case_study"]["beta"],
            tau=GADC["case_study"]["tau"],
            ids=GT.case_ids_arg(),
            a=DEC["max_len_a"],
            b=DEC["max_len_b"],
        shell:
            "$PY -m fastdec gad-case-study --verifier {input.verifier} --drafter {input.drafter} --data-bin {params.data} "
            "--input {input.src} --k {params.k} --n {params.n} --pool {params.pool} --beta {params.beta} "
            "--tau {params.tau} {params.ids} --max-len-a {params.a} --max-len-b {params.b} --output {output} "
            "> {log} 2>&1"

    # After the table rule's GAD items in the report (captions: workflow/report/<stem>.rst).
    REPORT_ITEMS.extend(
        [
            f"{G}/tables/gad_table8_memory.csv",
            f"{G}/tables/gad_table11_case_study.csv",
        ]
    )
