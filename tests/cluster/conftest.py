"""A real single-node SLURM (tests/helpers/local_slurm.py) for the whole session, stopped at its end.

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
