# GAD track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2/4.2): NAT block drafter trained on the verifier's Seq-KD
# data, GAD (exact top-1) and GAD++ (top-beta within tau) decoding with the engine, Tables 1-3, 7-9, 11, Figure 4.
#   drafter:  [init from verifier] -> fairseq-train --task block_drafting --criterion glat_block_loss
#   test:     one interleaved batch-1 benchmark (beam 5, greedy, NAT alone, GAD, GAD++ x2) -> Tables 1, 7, 9, Fig. 4
#   valid:    block-size sweep and beta x tau grid on a validation subset -> Tables 2, 3
#   extra:    peak memory in fresh processes (Table 8), iteration traces (Table 11)
from snakemake.utils import validate

if "gad" not in config:
    raise ValueError("config: tracks.gad is on but there is no `gad:` section (see workflow/schemas/gad.schema.yaml)")
validate(config["gad"], "../schemas/gad.schema.yaml")

if REPO not in sys.path:
    sys.path.insert(0, REPO)
from fastdec.gad.workflow import GadPlan  # noqa: E402  (names, paths, the drafter's training spec)

GADC = config["gad"]
GAD = GadPlan(GADC, R, DEC["beam"], SRC, TGT, config["train"]["verifier"])
G = GAD.G


rule gad_init_drafter:
    # All weights of the AT verifier + a <mask> embedding row: the drafter's starting point (init_from_verifier: all).
    input:
        verifier=f"{R}/models/verifier/model.pt",
        data=f"{GAD.data}/dict.{SRC}.txt",  # binarize_distill writes both dictionaries (joined)
    output:
        f"{G}/models/init_from_verifier.pt",
    params:
        dict=lambda wc, input: os.path.join(os.path.dirname(input.data), f"dict.{TGT}.txt"),
    log:
        log("gad_init_drafter"),
    benchmark:
        bench("gad_init_drafter")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=10,
    shell:
        "$PY $SCRIPTS/gad_init_drafter.py --verifier {input.verifier} --dict {params.dict} --output {output} "
        "> {log} 2>&1"


rule gad_train_drafter:
    # The NAT block drafter on the SAME Seq-KD data-bin as the verifier (block_drafting adds <mask>); resumable.
    input:
        unpack(lambda wc: GAD.train_inputs()),
    output:
        model=f"{G}/models/drafter_k{{k}}/model.pt",
        summary=f"{G}/models/drafter_k{{k}}/train.json",
    params:
        spec=lambda wc, input: GAD.train_spec(wc.k, input.get("init"), input.get("verifier")),
        data=lambda wc, input: os.path.dirname(input.data),
        save_dir=f"{G}/models/drafter_k{{k}}/checkpoints",
        device=config["device"],
        plugin=PLUGIN,
    wildcard_constraints:
        k=r"\d+",
    log:
        log("gad_train_drafter_k{k}"),
    benchmark:
        bench("gad_train_drafter_k{k}")
    threads: GADC["train"]["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=GADC["train"]["mem_mb"],
        runtime=GADC["train"]["runtime"],
        gpu=GADC["train"]["gpus"],
    shell:
        "$PY $SCRIPTS/train.py --spec '{params.spec}' --data-bin {params.data} --save-dir {params.save_dir} "
        "--model-out {output.model} --summary {output.summary} --device {params.device} --threads {threads} "
        "--task block_drafting --criterion glat_block_loss --user-dir {params.plugin} >> {log} 2>&1"


rule gad_bench:
    # One process, batch 1, every sentence decoded by every system back to back (same weights, same load).
    input:
        unpack(lambda wc: GAD.bench_drafters(wc.run)),
        verifier=f"{R}/models/verifier/model.pt",
        data=f"{GAD.data}/dict.{SRC}.txt",
        src=lambda wc: GAD.runs[wc.run][0],
        ref=lambda wc: GAD.runs[wc.run][1],
    output:
        summary=f"{G}/bench/{{run}}/summary.csv",
        sentences=f"{G}/bench/{{run}}/sentences.jsonl",
        meta=f"{G}/bench/{{run}}/meta.json",
        hyps=directory(f"{G}/bench/{{run}}/hyps"),
    params:
        systems=lambda wc: ",".join(GAD.runs[wc.run][2]),
        limit=lambda wc: GAD.limit_arg(wc.run),
        drafters=lambda wc, input: GAD.drafter_for_args(wc.run, input),
        main_drafter=lambda wc, input: getattr(input, f"drafter_k{GAD.k}"),
        data=lambda wc, input: os.path.dirname(input.data),
        baseline=GAD.baseline,
        lang=TGT,
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
        warmup=GADC["warmup"],
        repeats=GADC["repeats"],
        device=config["device"],
        out_dir=lambda wc, output: os.path.dirname(output.summary),
    wildcard_constraints:
        run="test|valid",
    log:
        log("gad_bench_{run}"),
    benchmark:
        bench("gad_bench_{run}")
    threads: GADC["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=GADC["mem_mb"],
        runtime=GADC["runtime"],
        gpu=GADC["gpus"],
    shell:
        "$PY $SCRIPTS/gad_bench.py --verifier {input.verifier} --drafter {params.main_drafter} {params.drafters} "
        "--data-bin {params.data} --input {input.src} --ref {input.ref} --lang {params.lang} "
        "--systems {params.systems} --baseline {params.baseline} {params.limit} --warmup {params.warmup} "
        "--repeats {params.repeats} --max-len-a {params.a} --max-len-b {params.b} --device {params.device} "
        "--threads {threads} --out-dir {params.out_dir} > {log} 2>&1"


rule gad_table1:
    input:
        f"{G}/bench/test/summary.csv",
    output:
        report(f"{G}/tables/gad_table1.csv", caption="../report/gad_table1.rst", category="GAD"),
    params:
        paper=GADC["paper_reference"],
    log:
        log("gad_table1"),
    benchmark:
        bench("gad_table1")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_tables.py table1 --summary {input} --paper {params.paper} --output {output} > {log} 2>&1"


rule gad_table2:
    input:
        f"{G}/bench/valid/summary.csv",
    output:
        report(f"{G}/tables/gad_table2_block_size.csv", caption="../report/gad_table2_block_size.rst", category="GAD"),
    params:
        ks=",".join(str(k) for k in GADC["block_sizes"]),
        beta=GADC["table2"]["beta"],
        tau=GADC["table2"]["tau"],
    log:
        log("gad_table2"),
    benchmark:
        bench("gad_table2")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_tables.py table2 --summary {input} --block-sizes {params.ks} --beta {params.beta} "
        "--tau {params.tau} --output {output} > {log} 2>&1"


rule gad_table3:
    input:
        f"{G}/bench/valid/summary.csv",
    output:
        report(f"{G}/tables/gad_table3_beta_tau.csv", caption="../report/gad_table3_beta_tau.rst", category="GAD"),
    params:
        k=GAD.k,
        betas=",".join(str(b) for b in GADC["grid"]["betas"]),
        taus=",".join(f"{float(t):g}" for t in GADC["grid"]["taus"]),
    log:
        log("gad_table3"),
    benchmark:
        bench("gad_table3")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_tables.py table3 --summary {input} --k {params.k} --betas {params.betas} "
        "--taus {params.taus} --output {output} > {log} 2>&1"


rule gad_table7:
    input:
        f"{G}/bench/test/summary.csv",
    output:
        report(f"{G}/tables/gad_table7_modules.csv", caption="../report/gad_table7_modules.rst", category="GAD"),
    params:
        systems=f"{GAD.he},gad_k{GAD.k},greedy",
    log:
        log("gad_table7"),
    benchmark:
        bench("gad_table7")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_tables.py table7 --summary {input} --systems {params.systems} --output {output} > {log} 2>&1"


rule gad_table9:
    input:
        f"{G}/bench/test/summary.csv",
    output:
        report(f"{G}/tables/gad_table9_repetition.csv", caption="../report/gad_table9_repetition.rst", category="GAD"),
    params:
        systems=",".join(["greedy", GAD.baseline, f"nat_k{GAD.k}", f"gad_k{GAD.k}", GAD.hq, GAD.he]),
        hq=GAD.hq,
    log:
        log("gad_table9"),
    benchmark:
        bench("gad_table9")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_tables.py table9 --summary {input} --systems {params.systems} --hq {params.hq} "
        "--output {output} > {log} 2>&1"


rule gad_figure4:
    # Per-sentence speedup of GAD++ (high efficiency) over beam 5, from the interleaved test benchmark.
    input:
        f"{G}/bench/test/sentences.jsonl",
    output:
        png=report(f"{G}/figures/gad_figure4_speedup.png", caption="../report/gad_figure4_speedup.rst", category="GAD"),
        stats=f"{G}/figures/gad_figure4_speedup.json",
    params:
        system=GAD.he,
        baseline=GAD.baseline,
    log:
        log("gad_figure4"),
    benchmark:
        bench("gad_figure4")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/gad_figure.py --sentences {input} --system {params.system} --baseline {params.baseline} "
        "--output {output.png} --stats {output.stats} > {log} 2>&1"


rule gad_table8_memory:
    # Each system in a fresh process: a process' peak memory only grows, so one process cannot compare them.
    input:
        verifier=f"{R}/models/verifier/model.pt",
        drafter=GAD.drafter(GAD.k),
        data=f"{GAD.data}/dict.{SRC}.txt",
        src=f"{R}/data/bpe/test.{SRC}",
    output:
        table=report(f"{G}/tables/gad_table8_memory.csv", caption="../report/gad_table8_memory.rst", category="GAD"),
        raw=f"{G}/tables/gad_table8_memory.json",
    params:
        systems=",".join([GAD.baseline, "greedy", f"gad_k{GAD.k}", GAD.he]),
        data=lambda wc, input: os.path.dirname(input.data),
        n=GADC["memory_sentences"],
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
        device=config["device"],
    log:
        log("gad_table8_memory"),
    benchmark:
        bench("gad_table8_memory")
    threads: GADC["threads"]
    conda:
        CONDA_ENV
    resources:
        mem_mb=GADC["mem_mb"],
        runtime=GADC["runtime"],
        gpu=GADC["gpus"],
    shell:
        "$PY $SCRIPTS/gad_memory.py --verifier {input.verifier} --drafter {input.drafter} --data-bin {params.data} "
        "--input {input.src} --systems {params.systems} --limit {params.n} --max-len-a {params.a} "
        "--max-len-b {params.b} --device {params.device} --threads {threads} --output {output.table} "
        "--raw {output.raw} > {log} 2>&1"


rule gad_table11_case_study:
    input:
        verifier=f"{R}/models/verifier/model.pt",
        drafter=GAD.drafter(GAD.k),
        data=f"{GAD.data}/dict.{SRC}.txt",
        src=f"{R}/data/bpe/test.{SRC}",
    output:
        report(f"{G}/tables/gad_table11_case_study.csv", caption="../report/gad_table11_case_study.rst", category="GAD"),
    params:
        data=lambda wc, input: os.path.dirname(input.data),
        k=GAD.k,
        n=GADC["case_study"]["n"],
        pool=GADC["case_study"]["pool"],
        beta=GADC["case_study"]["beta"],
        tau=GADC["case_study"]["tau"],
        ids=GAD.case_ids_arg(),
        a=DEC["max_len_a"],
        b=DEC["max_len_b"],
    log:
        log("gad_table11_case_study"),
    benchmark:
        bench("gad_table11_case_study")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=GADC["mem_mb"],
        runtime=GADC["runtime"],
    shell:
        "$PY $SCRIPTS/gad_case_study.py --verifier {input.verifier} --drafter {input.drafter} --data-bin {params.data} "
        "--input {input.src} --k {params.k} --n {params.n} --pool {params.pool} --beta {params.beta} "
        "--tau {params.tau} {params.ids} --max-len-a {params.a} --max-len-b {params.b} --output {output} "
        "> {log} 2>&1"


# The report, in the paper's order (captions: workflow/report/<stem>.rst).
for _item in GAD.report_items():
    REPORT_ITEMS.append(_item)
