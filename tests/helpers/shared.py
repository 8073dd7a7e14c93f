"""Expensive test inputs built once per test session, also under pytest-xdist: the first worker that needs one builds
it in the session's shared temporary folder while any other worker that needs it waits on a file lock, then reads it.
A failed build is recorded, so the other workers fail at once with its message instead of building it again."""
from pathlib import Path
from typing import Callable

import pytest


def build_once(tmp_path_factory, worker_id: str, name: str, build: Callable[[Path], str]) -> Path:
    """The folder ``name`` in the session's shared temporary folder, filled by ``build(folder)`` the first time.
    ``build`` returns "" when it succeeded, else the error to report."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    folder, failed = shared / name, shared / f"{name}.failed"
    with FileLock(str(shared / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"building {name} failed on another worker:\n{failed.read_text()}")
        if not (folder / "done").exists():
            folder.mkdir(exist_ok=True)
            error = build(folder)
            if error:
                failed.write_text(error)
                pytest.fail(error)
            (folder / "done").touch()
    return folder
