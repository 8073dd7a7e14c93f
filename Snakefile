# fastdec: reproduction workflow for lossless fast seq2seq decoding.
#   snakemake --cores all                                   # embedded demo (config/config.yaml), CPU, offline
#   snakemake --cores all --configfile config/smoke.yaml    # tiny subset, minutes
#   snakemake --profile profiles/slurm --configfile config/wmt14_ende.yaml
from snakemake.utils import min_version, validate

min_version("8.0")


# The demo default applies only when no --configfile is given: Snakemake would otherwise deep-merge it under the
# chosen config, and keys set only in the demo (e.g. data.subset) would leak into paper-scale runs.
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"


# Validate (and fill defaults) before any job is scheduled: a wrong key, type or value stops here.
validate(config, schema="workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
# The stages every track shares, ONE rule each: downloads, BPE and binarisation, training.
include: "workflow/rules/fetch.smk"
include: "workflow/rules/bpe.smk"
include: "workflow/rules/train.smk"


# The MT chain (teacher -> Seq-KD -> verifier) feeds the MT tracks; the GEC track has its own data and models.
if MT_CHAIN:

    include: "workflow/rules/data.smk"
    include: "workflow/rules/distill.smk"
    include: "workflow/rules/decode.smk"
    include: "workflow/rules/evaluate.smk"


# Each switched-on track's own rules (fastdec/tracks/<track>/rules.smk; the tracks: fastdec/tracks/registry.py).
for track_rules in P.rule_files:

    include: track_rules


# Every track's benchmark runs and tables: one bench rule and one table rule (runs and tables: fastdec/tracks/).
include: "workflow/rules/experiments.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),


# A `device: cuda` run executed on this machine needs a GPU here (checked once jobs are about to start: a dry run, or
# a cluster profile submitting to GPU nodes, is planned anywhere).
onstart:
    check_device(config, local_run=not workflow.non_local_exec_or_dryrun)


# Every rule without a `conda:` of its own runs in CONDA_ENV under --software-deployment-method conda.
default_conda_env(workflow, CONDA_ENV)
