"""``fastdec gpu-wheels``: prepare a wheelhouse for a GPU machine that has Python + CUDA torch but no package registry
(`make gpu-wheels`).

Run on a connected machine; copy the folder over; ``scripts/gpu_run.sh --wheelhouse DIR`` installs from it offline.
The GPU machine's own CUDA torch is kept: torch (and torchaudio, which fairseq lists but the workflow never imports)
is left out, and so is what only the CPU rows use, unless ``--with-optional`` (ctranslate2; pulp, Snakemake's ILP
scheduler). Everything else comes as wheels for the target Python (``--python-version``, default 3.12) and manylinux
x86_64, at the versions of the environment running this script (the project's tested .venv, so no resolver runs on
the GPU machine), or as source where a package has no wheel; fairseq-fixed, which has C extensions, comes as source
and is built there against the local torch. A pure-Python package published only as source is turned into a wheel
here, so nothing but fairseq is built there. ``DIR/requirements-gpu.txt`` lists what the GPU machine installs.

``--have FILE`` leaves out what the GPU machine already has (FILE: its ``pip freeze`` or ``pip list --format=freeze``,
or one name per line), keeping its versions, for a small folder: a machine reached through a transfer limit (e.g.
envs/gpu-image-cuda.txt, the image of the H100/H200 machines this project is lent) gets only what is missing.

    fastdec gpu-wheels --out wheelhouse [--python-version 3.12] [--have FILE] [--dry-run]
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# never downloaded: the GPU machine's CUDA build stays (an index torch would be a CPU or another CUDA build);
# torchaudio is listed by fairseq but never imported by the workflow
KEEP_LOCAL = re.compile(r"^(torch|torchaudio|triton|nvidia-.*|fastdec|pip)$")
# what a GPU run never imports, left out unless --with-optional (a folder that fits a transfer limit): the CTranslate2
# peer rows are CPU rows (config key ct2), and Snakemake falls back to its greedy scheduler without pulp
OPTIONAL = {"ctranslate2": "the CTranslate2 peer rows (config key ct2)", "pulp": "Snakemake's ILP scheduler"}
SOURCE_ONLY = {"fairseq-fixed"}  # C extensions built on the GPU machine against its torch
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64", "any"]


def _name(req: str) -> str:
    return re.split(r"[=<>!~\[; ]", req, maxsplit=1)[0].strip().lower().replace("_", "-")


def read_have(path: str) -> set:
    """Names of the packages a GPU machine has already, from its ``pip freeze`` (or one name per line; # comments)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ValueError(f"--have {path}: {e.strerror}; write it on the GPU machine with "
                         "'python3 -m pip list --format=freeze > have.txt' and copy it here")
    names = {_name(line.split("#")[0]) for line in lines}
    names.discard("")
    if not names:
        raise ValueError(f"--have {path} names no package")
    return names


def environment_pins(have: frozenset = frozenset()) -> list:
    """``name==version`` of every distribution of the running environment (the tested one: made from envs/), except
    the local-only ones and those the GPU machine has (``have``); no resolver runs on the GPU machine."""
    from importlib.metadata import distributions

    pins = {}
    for d in distributions():
        name = _name(d.metadata["Name"] or "")
        if name and not KEEP_LOCAL.match(name) and name not in have:
            pins[name] = f"{name}=={d.version}"
    return [pins[k] for k in sorted(pins)]


def is_pure(wheel: str) -> bool:
    """A wheel any Python 3 on any platform installs (``py3-none-any``, ``py2.py3-none-any``)."""
    python, abi, platform = wheel[:-len(".whl")].split("-")[-3:]
    return abi == "none" and platform == "any" and "py3" in python.split(".")


def wheel_from_source(archive: Path, out: Path) -> bool:
    """Build a source archive into a wheel here; keep the wheel only if it is pure Python (any Python, any platform),
    and then drop the archive: the GPU machine needs no build backend for it. False: the archive stays."""
    before = set(out.glob("*.whl"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(out), str(archive)],
                       capture_output=True, text=True)
    built = set(out.glob("*.whl")) - before
    pure = [w for w in built if is_pure(w.name)]
    for w in built - set(pure):
        w.unlink()
    if r.returncode == 0 and pure:
        archive.unlink()
        return True
    return False


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


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", default="wheelhouse", help="the wheelhouse folder (default: wheelhouse)")
    ap.add_argument("--python-version", default="3.12", help="the GPU machine's Python, e.g. 3.12")
    ap.add_argument("--with-optional", action="store_true",
                    help="also " + ", ".join(f"{k} ({v})" for k, v in OPTIONAL.items()))
    ap.add_argument("--have", metavar="FILE", help="leave out the packages named in FILE (the GPU machine's pip freeze)")
    ap.add_argument("--dry-run", action="store_true", help="print the pip commands and the list, download nothing")


def main(a: argparse.Namespace) -> int:
    if not re.fullmatch(r"3\.\d+", a.python_version):
        raise ValueError(f"--python-version must look like 3.12, got {a.python_version!r}")
    leave_out = (read_have(a.have) if a.have else set()) | (set() if a.with_optional else set(OPTIONAL))
    pins = environment_pins(frozenset(leave_out))
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
            raise ValueError(f"no wheel for Python {a.python_version} and no source of {pin} on the index")
    out = Path(a.out)
    for archive in sorted(p for p in out.iterdir() if p.name.endswith((".tar.gz", ".zip", ".tar.bz2"))):
        pin = next((p for p in sources if archive.name.lower().replace("_", "-").startswith(p.split("==")[0] + "-")),
                   None)
        if pin and _name(pin) not in SOURCE_ONLY and wheel_from_source(archive, out):
            sources.remove(pin)
    Path(a.out, "requirements-gpu.txt").write_text(listing)
    mib = sum(p.stat().st_size for p in out.iterdir()) / 2 ** 20
    print(f"wrote {a.out}: {len(pins)} packages, {mib:.1f} MiB ({len(sources)} as source, built on the GPU machine: "
          f"{', '.join(sources) or 'none'}); copy the folder to the GPU machine and run "
          f"scripts/gpu_run.sh --wheelhouse {a.out}")
    return 0
