# The experiment layer shared by every track: ONE benchmark rule (every method of a run on the same weights, in one
# process, interleaved: `fastdec bench`) and ONE table rule (`fastdec tables TRACK NAME`). Which runs and tables
# exist, and the files each reads, come from the tracks (fastdec/tracks/registry.py); results follow one schema
# (docs/RESULTS.md).
from fastdec.tracks.base import ct2_conversions
from fastdec.tracks.specs import alternatives
from fastdec.workflow.experiments import bench_runs, table_items
from fastdec.workflow.plan import write_resolved_config

BENCH = bench_runs(config, R)  # run dir (relative to R) -> BenchRun
TABLES = table_items(config, R)  # table path (relative to R) -> TableItem
# folder (relative to R) of a checkpoint converted for CTranslate2 -> a run that decodes with it
CT2 = {L.relative(d): run for d, run in ct2_conversions(BENCH).items()}


rule bench:
    input:
        unpack(lambda wc: BENCH[wc.run].inputs()),
    output:
        summary=L.run("{run}/summary.csv"),
        sentences=L.run("{run}/sentences.jsonl"),
        meta=L.run("{run}/meta.json"),
    log:
        L.log("bench/{run}"),
    benchmark:
        L.benchmark("bench/{run}")
    wildcard_constraints:
        run=alternatives(BENCH),
    # exclusive runs claim every core Snakemake was given (capped at --cores), so no other job runs beside the
    # timing; torch itself uses the run's own thread count.
    threads: lambda wc: max(BENCH[wc.run].threads, 4096 if BENCH[wc.run].exclusive else 1)
    resources:
        mem_mb=lambda wc: BENCH[wc.run].mem_mb,
        runtime=lambda wc: BENCH[wc.run].runtime,
        gpu=lambda wc: BENCH[wc.run].gpus,
    params:
        run=lambda wc: BENCH[wc.run],
        data_bin=lambda wc, input: os.path.dirname(input.dictionary),
        ref=lambda wc, input: (
            f"--ref {input.ref} --lang {BENCH[wc.run].lang}"
            if BENCH[wc.run].ref
            else ""
        ),
        limit=lambda wc: f"--limit {BENCH[wc.run].limit}" if BENCH[wc.run].limit else "",
        methods=lambda wc: ",".join(BENCH[wc.run].methods),
        out=lambda wc, output: os.path.dirname(output.summary),
    shell:
        "export OMP_NUM_THREADS={params.run.threads} MKL_NUM_THREADS={params.run.threads}; "
        "$PY -m fastdec bench --checkpoint {input.checkpoint} --data-bin {params.data_bin} --input {input.src} "
        "{params.ref} --methods '{params.methods}' {params.limit} --warmup {params.run.warmup} "
        "--repeats {params.run.repeats} --max-len-a {params.run.max_len_a} --max-len-b {params.run.max_len_b} "
        "--device {params.run.device} --dtype {params.run.dtype} --threads {params.run.threads} --out-dir {params.out} "
        "> {log} 2>&1"


rule ct2_convert:
    # the checkpoint as CTranslate2's own fairseq converter writes it, for the ct2 rows of the bench runs
    input:
        checkpoint=lambda wc: CT2[wc.ct2].checkpoint,
        dictionary=lambda wc: CT2[wc.ct2].dictionary,
    output:
        L.path("{ct2}", "model.bin"),
    log:
        L.log("ct2_convert/{ct2}"),
    benchmark:
        L.benchmark("ct2_convert/{ct2}")
    wildcard_constraints:
        ct2=alternatives(CT2),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        data_bin=lambda wc, input: os.path.dirname(input.dictionary),
        langs=lambda wc: "--source-lang {} --target-lang {}".format(*CT2[wc.ct2].langs),
        out=lambda wc, output: os.path.dirname(output[0]),
    shell:
        "$PY -m fastdec ct2-convert --checkpoint {input.checkpoint} --data-bin {params.data_bin} {params.langs} "
        "--output-dir {params.out} > {log} 2>&1"


rule resolved_config:
    # The config as the jobs see it (validated, schema defaults filled in), written once for the table jobs; a changed
    # value rewrites it (params), and the tables after it.
    output:
        L.path("config.yaml"),
    log:
        L.log("resolved_config"),
    localrule: True
    params:
        config=json.dumps(config),
    run:
        write_resolved_config(params.config, output[0], log[0])


rule table:
    input:
        config=L.path("config.yaml"),
        reads=lambda wc: TABLES[wc.item].inputs,
    output:
        report(
            L.path("{item}"),
            caption="../report/table.rst",
            category="Tables and figures",
        ),
    log:
        L.log("tables/{item}"),
    benchmark:
        L.benchmark("tables/{item}")
    wildcard_constraints:
        item=alternatives(TABLES),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        track=lambda wc: TABLES[wc.item].track,
        name=lambda wc: TABLES[wc.item].name,
        caption=lambda wc: TABLES[wc.item].caption_text(REPO),
        results=lambda wc, output: output[0][: -len(wc.item) - 1],  # results/<experiment>
    shell:
        "MPLBACKEND=Agg $PY -m fastdec tables {params.track} {params.name} --config {input.config} "
        "--results {params.results} --output {output} > {log} 2>&1"
