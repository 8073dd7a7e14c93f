"""Compiling the project's C sources (``native/*.c``) on first use with the system C compiler: each build is kept in
a cache folder under a name keyed by its source, compiler, flags and CPU (a ``-march=native`` build is not portable,
and a shared home on a cluster mixes CPUs)."""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Sequence

NATIVE_DIR = Path(__file__).with_name("native")


class NativeUnavailable(RuntimeError):
    """A C source cannot be compiled or loaded here (the message says why and what to do)."""


def _cache_dirs() -> List[Path]:
    """Where compiled sources are kept: ``$FASTDEC_NATIVE_CACHE`` when set (only there), else the user's cache folder,
    else a per-user folder in the temporary directory (a read-only home)."""
    if os.environ.get("FASTDEC_NATIVE_CACHE"):
        return [Path(os.environ["FASTDEC_NATIVE_CACHE"])]
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [Path(home) / "fastdec" / "native", Path(tempfile.gettempdir()) / f"fastdec-native-{uid}"]


def _build_target(name: str):
    """``(path, None)`` of an existing build, or ``(path, temporary file to compile into)`` in the first writable
    cache folder."""
    dirs = _cache_dirs()
    for d in dirs:
        if (d / name).is_file():
            return d / name, None
    errors = []
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=d, suffix=".so", delete=False) as tmp:
                return d / name, tmp.name
        except OSError as exc:
            errors.append(f"{d} ({exc})")
    raise NativeUnavailable(f"cannot write the compiled C code to {'; '.join(errors)}; set FASTDEC_NATIVE_CACHE to a "
                            "writable folder")


def _cpu_flags() -> str:
    """The CPU's feature flags: the key of a -march=native build."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _sources(path: Path, seen=None) -> List[str]:
    """The text of ``path`` and of every file of its folder it includes (``#include "part.c"``), recursively, in
    order: what a build's cache key hashes (a part changed is a new build)."""
    seen = set() if seen is None else seen
    seen.add(path)
    text = path.read_text()
    texts = [text]
    for line in text.splitlines():
        if line.startswith('#include "'):
            part = path.with_name(line.split('"')[1])
            if part not in seen:
                texts += _sources(part, seen)
    return texts


def compiled(source: str, stem: str, flags: Sequence[str], what: str) -> Path:
    """The shared library built from ``native/<source>`` with ``flags`` (compiled now if no cache folder holds it);
    ``what`` names it in errors ("the fast backend")."""
    path_in = NATIVE_DIR / source
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise NativeUnavailable("no C compiler found (set CC, or install gcc: apt-get install gcc)")
    key = hashlib.sha256("\0".join([*_sources(path_in), compiler, *flags, _cpu_flags()]).encode()).hexdigest()[:16]
    path, tmp = _build_target(f"{stem}_{key}.so")
    if tmp is not None:
        cmd = [compiler, *flags, str(path_in), "-o", tmp, "-lm"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            os.unlink(tmp)
            raise NativeUnavailable(f"cannot run the C compiler {compiler!r} ({exc}); set CC or install gcc") from None
        if proc.returncode != 0:
            os.unlink(tmp)
            raise NativeUnavailable(f"compiling {what} failed ({' '.join(cmd)}):\n{proc.stderr[-2000:]}")
        os.replace(tmp, path)  # atomic: parallel jobs may build it at the same time
    return path
