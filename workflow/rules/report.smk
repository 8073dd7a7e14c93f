# The report: every table with the paper's number beside ours, as Markdown (and `snakemake --report`).


rule report:
    input:
        report_tables(),
    output:
        report(f"{R}/report/report.md", caption="../report/report.rst", category="Report"),
    params:
        config_name=EXP,
    log:
        log("report"),
    benchmark:
        bench("report")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "$PY $SCRIPTS/make_report.py --experiment {params.config_name} --tables {input} --output {output} "
        "> {log} 2>&1"
