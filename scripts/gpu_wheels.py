#!/usr/bin/env python
"""Prepare a wheelhouse for a GPU machine that has Python + CUDA torch but no package registry (`make gpu-wheels`).

Run on a connected machine; copy the folder over; ``scripts/gpu_run.sh --wheelhouse DIR`` installs from it offline.
The GPU machine's own CUDA torch is kept: torch (and torchaudio, which fairseq lists but the workflow never imports)
is left out. Everything else comes as wheels for the
target Python (``--python-version``, default 3.12) and manylinux x86_64, at the versions of the environment running
this script (the project's tested .venv, so no resolver runs on the GPU machine), or as source where a package has no
wheel; fairseq-fixed, which has C extensions, comes as source and is built there against the local torch. ``DIR/requirements-gpu.txt`` lists what the GPU machine installs.

    python scripts/gpu_wheels.py --out wheelhouse [--python-version 3.12] [--dry-run]
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# never downloaded: the GPU machine's CUDA build stays (an index torch would be a CPU or another CUDA build);
# torchaudio is listed by fairseq but never imported by the workflow
KEEP_LOCAL = re.compile(r"^(torch|torchaudio|triton|nvidia-.*|fastdec|pip)$")
SOURCE_ONLY = {"fairseq-fixed"}  # C extensions built on the GPU machine against its torch
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64", "any"]


def _name(req: str) -> str:
    return re.split(r"[=<>!~\[; ]", req, maxsplit=1)[0].strip().lower().replace("_", "-")


def environment_pins() -> list:
    """``name==version`` of every distribution of the running environment (the tested one: made from envs/), except
    the local-only ones; the same closure on the GPU machine, with no resolver run there."""
    from importlib.metadata import distributions

    pins = {}
    for d in distributions():
        name = _name(d.metadata["Name"] or "")
        if name and not KEEP_LOCAL.match(name):
            pins[name] = f"{name}=={d.version}"
    return [pins[k] for k in sorted(pins)]


def download_commands(pin: str, out: str, python_version: str) -> list:
    """pip commands for one pin, in order of preference: a wheel for the target Python and platform, the source."""
    pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "-d", out]
    # metadata of a source archive is prepared here: --no-build-isolation uses this environment's build tools
    # (fairseq's build needs torch, which an isolated build would download)
    source = pip + ["--no-binary", ":all:", "--no-build-isolation", pin]
    if _name(pin) in SOURCE_ONLY:
        return [source]
    abi = "cp" + python_version.replace(".", "")
    wheel = pip + ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
                   "--abi", abi, "--abi", "abi3", "--abi", "none"] + [x for p in PLATFORMS for x in ("--platform", p)]
    return [wheel + [pin], source]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="wheelhouse", help="the wheelhouse folder (default: wheelhouse)")
    ap.add_argument("--python-version", default="3.12", help="the GPU machine's Python, e.g. 3.12")
    ap.add_argument("--dry-run", action="store_true", help="print the pip commands and the list, download nothing")
    a = ap.parse_args()
    if not re.fullmatch(r"3\.\d+", a.python_version):
        raise SystemExit(f"error: --python-version must look like 3.12, got {a.python_version!r}")
    pins = environment_pins()
    listing = "\n".join(["# installed by scripts/gpu_run.sh from this wheelhouse (no index, --no-deps); torch stays "
                         "the local one", *pins]) + "\n"
    if a.dry_run:
        for pin in pins:
            print(" || ".join(" ".join(shlex.quote(c) for c in cmd) for cmd in download_commands(pin, a.out,
                                                                                              a.python_version)))
        print(listing, end="")
        return 0
    os.makedirs(a.out, exist_ok=True)
    sources = []
    for pin in pins:
        cmds = download_commands(pin, a.out, a.python_version)
        for i, cmd in enumerate(cmds):
            if subprocess.run(cmd, capture_output=True, text=True).returncode == 0:
                if i == len(cmds) - 1 and len(cmds) > 1 or _name(pin) in SOURCE_ONLY:
                    sources.append(pin)
                break
        else:
            raise SystemExit(f"error: no wheel for Python {a.python_version} and no source of {pin} on the index")
    Path(a.out, "requirements-gpu.txt").write_text(listing)
    print(f"wrote {a.out}: {len(pins)} packages ({len(sources)} as source: {', '.join(sources)}); copy the folder to "
          f"the GPU machine and run scripts/gpu_run.sh --wheelhouse {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
