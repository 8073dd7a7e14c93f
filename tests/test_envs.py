"""The conda environment for clusters pins exactly what the pip set-up pins."""
from pathlib import Path

import yaml

ENVS = Path(__file__).resolve().parents[1] / "envs"


def pip_pins():
    pins = {}
    for name in ("requirements-torch.txt", "requirements-build.txt", "requirements.txt"):
        for line in (ENVS / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                pkg, ver = line.split("==")
                pins[pkg.lower()] = ver
    return pins


def test_conda_env_matches_pip_pins():
    env = yaml.safe_load((ENVS / "fastdec.yaml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pins = {line.split("==")[0].lower(): line.split("==")[1] for line in pip_section}
    assert conda_pins == pip_pins()
    assert "python=3.11" in env["dependencies"]


def test_every_requirement_is_pinned():
    for pkg, ver in pip_pins().items():
        assert ver and ver[0].isdigit(), pkg
