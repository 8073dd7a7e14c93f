# The report: every table and figure with the paper's number beside ours, as Markdown and as one HTML page (figures
# inline, delta columns; `fastdec report` joins several experiments), and `snakemake --report`.


rule report:
    input:
        tables=lambda wc: [L.path(item) for item in TABLES] + REPORT_ITEMS,
    output:
        md=report(
            L.report("report.md"), caption="../report/report.rst", category="Report"
        ),
        html=L.report("report.html"),
        item_list=L.report("items.json"),
    log:
        log("report"),
    benchmark:
        bench("report")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        experiment=EXP,
        captions=os.path.join(REPO, "workflow", "report"),
        results=lambda wc, output: os.path.dirname(os.path.dirname(output.md)),  # results/<experiment>
    shell:
        "$PY -m fastdec report --experiment {params.experiment} --captions {params.captions} "
        "--items {input.tables} --markdown {output.md} --output {output.html} {params.results} > {log} 2>&1"
