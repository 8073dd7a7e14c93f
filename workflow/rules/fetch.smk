# Downloads of every track (paper-scale configs): results/<store>/<archive>, store `downloads` (data.download of the
# MT chain) or `gec_downloads` (gec.data.bea19); offline, the job stops with a message saying where to put the file.


rule fetch:
    output:
        "results/{store}/{archive}",
    log:
        "results/{store}/logs/{archive}.log",
    benchmark:
        "results/{store}/benchmarks/{archive}.tsv"
    wildcard_constraints:
        **P.fetch_constraints(),
    retries: 2
    threads: 1
    resources:
        mem_mb=500,
        runtime=120,
    params:
        url=P.fetch_url,
        sha=P.fetch_sha_arg,
    shell:
        "$PY -m fastdec fetch-archive --url '{params.url}' {params.sha} --output {output} > {log} 2>&1"
