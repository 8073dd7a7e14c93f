"""The workflow's plan: what the Snakemake rules build, as plain Python the .smk files call (no rule logic there).

* :mod:`.plan` -- :class:`Plan` (paths, the shared stages' wildcards and arguments: fetch, BPE, binarise),
  :func:`check_config` (sections, their schemas, cross-field checks), :func:`load_config` (config files merged and
  checked as Snakemake reads them), the job interpreter and conda env.
* :mod:`.device` -- :func:`check_device` (``device`` / ``dtype`` usable here).
* :mod:`.models` -- every trained model, for the one training rule.
* :mod:`.experiments` -- every benchmark run and table (the tracks' and the claims'), :mod:`.tables_cli` --
  ``fastdec tables``.
* :mod:`.report_cli` -- ``fastdec report`` (the report rule's Markdown and HTML; several experiments on one page).
* the GPU path: :mod:`.gpu_pack` (``fastdec gpu-pack``), :mod:`.gpu_record` (``fastdec gpu-record``), :mod:`.gpu_run`
  (scripts/gpu_run.sh's targets and record), :mod:`.gpu_wheels` (``fastdec gpu-wheels``).

Each track's names, paths, training specs, runs and tables: fastdec/tracks/<track>/ (fastdec.tracks.registry).
"""
from fastdec.workflow.device import check_device
from fastdec.workflow.plan import Plan, check_config, default_conda_env, job_python

__all__ = ["Plan", "check_config", "check_device", "default_conda_env", "job_python"]
