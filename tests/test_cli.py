"""The one ``fastdec`` command: every subcommand answers ``--help``, ``fastdec --help`` lists them all without loading
torch or fairseq, the workflow's rules call nothing else, and a known bad input is one ``error:`` line and exit 2."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fastdec.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _fastdec(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fastdec", *map(str, args)], capture_output=True, text=True,
                          env=ENV, cwd=cwd, timeout=120)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_subcommand_answers_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: fastdec {name}") and f"fastdec {name}" in out.split("\n\n")[1]


def test_help_lists_every_subcommand_and_loads_no_torch():
    code = ("import sys; from fastdec.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print('LOADED', sorted(m for m in ('torch', 'fairseq', 'pandas') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("LOADED []")
    listed = re.findall(r"^    (\S+)", r.stdout, flags=re.M)
    assert listed == list(COMMANDS)


def test_rules_and_makefile_call_only_the_fastdec_command():
    rules = [*REPO.glob("workflow/rules/*.smk"), *REPO.glob("fastdec/tracks/*/*.smk"), REPO / "Makefile"]
    called = {m for f in rules for m in re.findall(r"-m fastdec ([a-z0-9-]+)|fastdec ([a-z0-9-]+) --", f.read_text())}
    assert {c for pair in called for c in pair if c} <= set(COMMANDS)
    assert not [f for f in rules if re.search(r"scripts/\w+\.py", f.read_text())]
    assert not [p.name for p in (REPO / "scripts").iterdir() if p.suffix == ".py"]


def test_a_missing_input_is_one_error_line_and_exit_2(tmp_path):
    missing = tmp_path / "missing.txt"
    r = _fastdec("tokenize-text", "--lang", "en", "--input", missing, "--output", tmp_path / "out.txt")
    assert r.returncode == 2 and r.stderr == f"error: {missing}: file not found\n"
    assert not (tmp_path / "out.txt").exists()


def test_a_failed_download_is_one_error_line_and_exit_2(tmp_path):
    # DownloadError is not a ValueError: the command's one error handler knows it too
    r = _fastdec("fetch-archive", "--url", (tmp_path / "none.tar.gz").as_uri(), "--output", tmp_path / "a.tar.gz")
    assert r.returncode == 2
    errors = r.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: could not download") and "Traceback" not in r.stderr
