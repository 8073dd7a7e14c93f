"""The C sources' builds: a source and the parts it includes key its cached build together."""
import shutil

import pytest

from fastdec.engine import native_build


def test_a_part_a_source_includes_keys_its_build(tmp_path, monkeypatch):
    """Changing a part that a source includes (``#include "part.c"``) makes a new build, not the cached one."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text('#include "part.c"\nint answer(void) { return part(); }\n')
    (src / "part.c").write_text("static int part(void) { return 1; }\n")
    monkeypatch.setattr(native_build, "NATIVE_DIR", src)
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(tmp_path / "cache"))
    first = native_build.compiled("main.c", "main", ["-O1", "-fPIC", "-shared"], "a test source")
    assert native_build.compiled("main.c", "main", ["-O1", "-fPIC", "-shared"], "a test source") == first
    (src / "part.c").write_text("static int part(void) { return 2; }\n")
    second = native_build.compiled("main.c", "main", ["-O1", "-fPIC", "-shared"], "a test source")
    assert second != first and second.is_file() and first.is_file()
