# The report: every table and figure with the paper's number beside ours, as Markdown (and `snakemake --report`).


rule report:
    input:
        tables=lambda wc: [f"{R}/{item}" for item in TABLES] + REPORT_ITEMS,
    output:
        report(f"{R}/report/report.md", caption="../report/report.rst", category="Report"),
    params:
        experiment=EXP,
        captions=os.path.join(REPO, "workflow", "report"),
    log:
        log("report"),
    benchmark:
        bench("report")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/make_report.py --experiment {params.experiment} --captions {params.captions} "
        "--items {input.tables} --output {output} > {log} 2>&1"
