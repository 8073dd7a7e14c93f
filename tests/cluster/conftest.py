"""A real single-node SLURM (tests/helpers/local_slurm.py) for the whole session, stopped at its end, and the MT
data chain of the fault tests' small config, prepared once without SLURM (``fault_data``).

Where the SLURM and munge programs are missing, the fixture installs Debian's packages once (root and apt-get
needed); it skips, saying why, only where they cannot be installed."""
import pytest

from helpers.local_slurm import LocalSlurm, install_packages


@pytest.fixture(scope="session")
def local_slurm(tmp_path_factory):
    why = install_packages()
    if why:
        pytest.skip(f"no local SLURM: {why}")
    slurm = LocalSlurm(tmp_path_factory.mktemp("slurm"), gpus=2)
    with slurm:
        yield slurm


@pytest.fixture(scope="session")
def fault_data(tmp_path_factory, worker_id):
    """A workdir whose results/faults holds the MT data chain (splits, BPE, data-bin) of ``small_config(.., FAULTS)``,
    made by a local run once per session; what the SLURM fault tests exercise is the training, not these 19 jobs."""
    from helpers.shared import build_once
    from helpers.workflow_runs import FAULTS, small_config, snakemake

    def build(workdir):
        config = small_config(workdir, FAULTS)
        r = snakemake(workdir, f"results/{FAULTS}/data-bin/raw/dict.en.txt", "--configfile", str(config), timeout=900)
        return "" if r.returncode == 0 else r.stderr[-4000:]

    return build_once(tmp_path_factory, worker_id, "fault_data", build)

