"""The CUDA path as far as a CPU machine can take it: device/dtype checks naming the config key, mixed devices, the
fp16 training flags, the wheelhouse listing, and scripts/gpu_run.sh's argument handling and dry run (snakemake -n
on config/demo_gpu.yaml and the docs/GPU.md row it would append). Nothing here runs a GPU."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from fastdec.workflow.device import check_device

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def test_check_device_names_the_key():
    with pytest.raises(ValueError, match="dtype: float16 needs device: cuda"):
        check_device({"device": "cpu", "dtype": "float16"}, local_run=False)
    with pytest.raises(ValueError, match="config device: cuda, but torch"):
        check_device({"device": "cuda"}, local_run=True, cuda_available=False)
    check_device({"device": "cuda", "dtype": "bfloat16"}, local_run=False)  # a dry run / cluster submission plans
    check_device({"device": "cuda", "dtype": "float16"}, local_run=True, cuda_available=True)
    check_device({"device": "cpu"}, local_run=True)


def test_fp16_on_cpu_config_stops_before_any_job(tmp_path):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    cfg["dtype"] = "float16"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "-n", "--cores", "1", "-s",
                        str(REPO / "Snakefile"), "--directory", str(REPO), "--configfile", str(path)],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode != 0 and "dtype: float16 needs device: cuda" in r.stdout + r.stderr


def test_mixed_devices_are_refused():
    from fastdec.engine import Verifier, draft_verify_accept
    from fastdec.engine.batched import decode_batched
    from fastdec.engine.profile import build_random_transformer
    from helpers.drafters import FixedTokensDrafter

    model, d, _ = build_random_transformer(seed=1, dtype=torch.float64, max_positions=32)
    ver = Verifier(model)
    drafter = FixedTokensDrafter([[5, 6]])
    drafter.device = torch.device("cuda", 0)
    src = torch.tensor([5, 6, d.eos()])
    with pytest.raises(ValueError, match="mixed devices: the fixed drafter is on cuda:0 but the verifier on cpu"):
        draft_verify_accept(ver, src, drafter)
    with pytest.raises(ValueError, match="mixed devices"):
        decode_batched(ver, [src, src], drafter, batch_size=2)
    drafter.device = torch.device("cpu")
    assert draft_verify_accept(ver, src, drafter, max_len_b=4).tokens[-1] == d.eos()


def test_training_precision_flags():
    from fastdec.train import fairseq_train_command

    spec = {"arch": "transformer", "max_update": 10, "lr": 0.001, "warmup_updates": 1, "max_tokens": 100}
    assert "--fp16" in fairseq_train_command(spec, "bin", "ckpt", device="cuda", dtype="float16")
    assert "--bf16" in fairseq_train_command(spec, "bin", "ckpt", device="cuda", dtype="bfloat16")
    fp32 = fairseq_train_command(spec, "bin", "ckpt", device="cuda")
    assert "--fp16" not in fp32 and "--bf16" not in fp32 and "--cpu" not in fp32
    with pytest.raises(ValueError, match="needs device cuda"):
        fairseq_train_command(spec, "bin", "ckpt", device="cpu", dtype="float16")


def test_wheelhouse_listing_is_the_tested_environment_without_torch():
    r = subprocess.run([sys.executable, "-m", "fastdec", "gpu-wheels", "--dry-run", "--out", "wh"], cwd=REPO,
                       capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    pins = {line.split("==")[0]: line.split("==")[1] for line in r.stdout.splitlines() if "==" in line
            and " " not in line}
    assert "torch" not in pins and "torchaudio" not in pins and not any(p.startswith("nvidia") for p in pins)
    optional = {"ctranslate2", "pulp"}  # CPU rows / Snakemake's ILP scheduler: only with --with-optional
    assert not optional & set(pins)
    for f in ("requirements.txt", "requirements-build.txt"):  # every other pin of envs/ at its pinned version
        for line in (REPO / "envs" / f).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and line.split("==")[0] not in optional:
                name, version = line.split("==")
                assert pins.get(name.lower().replace("_", "-")) == version, line
    fairseq = [line for line in r.stdout.splitlines() if "fairseq-fixed==" in line and "pip" in line]
    assert fairseq and "--no-binary :all: --no-build-isolation" in fairseq[0] and "--only-binary" not in fairseq[0]
    assert "--python-version 3.12" in r.stdout and "--abi cp312" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "fastdec", "gpu-wheels", "--dry-run", "--python-version", "twelve"],
                         cwd=REPO, capture_output=True, text=True, env=ENV)
    assert bad.returncode != 0 and "--python-version" in bad.stderr


def _listing(*args):
    r = subprocess.run([sys.executable, "-m", "fastdec", "gpu-wheels", "--dry-run", "--out", "wh", *args], cwd=REPO,
                       capture_output=True, text=True, env=ENV, timeout=120)
    return r, {line.split("==")[0] for line in r.stdout.splitlines() if "==" in line and " " not in line}


def test_wheelhouse_leaves_out_what_the_gpu_machine_has(tmp_path):
    have = tmp_path / "have.txt"
    have.write_text("# the GPU machine's pip freeze\nPandas==2.2.3\nmatplotlib\nsnakemake_interface_common==1.0\n")
    r, pins = _listing("--have", str(have), "--with-optional")
    assert r.returncode == 0, r.stderr
    assert not {"pandas", "matplotlib", "snakemake-interface-common"} & pins  # names normalised as pip does
    assert {"fairseq-fixed", "snakemake", "sacrebleu", "ctranslate2", "pulp"} <= pins
    # the list of the machines lent here leaves out what they have and keeps the tested sacrebleu
    r, pins = _listing("--have", "envs/gpu-image-cuda.txt")
    assert r.returncode == 0, r.stderr
    assert {"fairseq-fixed", "snakemake", "sacrebleu", "hydra-core", "ua-gec"} <= pins
    assert not {"numpy", "pandas", "pyyaml", "cython", "setuptools", "ctranslate2", "pulp"} & pins
    for bad, msg in ((tmp_path / "missing.txt", "pip list --format=freeze"), (tmp_path / "empty.txt", "names no")):
        if "empty" in bad.name:
            bad.write_text("# nothing\n")
        r, _ = _listing("--have", str(bad))
        assert r.returncode != 0 and f"--have {bad}" in r.stderr and msg in r.stderr


def test_only_pure_python_wheels_replace_a_source_archive():
    from fastdec.workflow.gpu_wheels import is_pure

    assert is_pure("antlr4_python3_runtime-4.9.3-py3-none-any.whl")
    assert is_pure("humanfriendly-10.0-py2.py3-none-any.whl")
    assert not is_pure("bitarray-3.12.3-cp311-cp311-manylinux_2_17_x86_64.whl")
    assert not is_pure("foo-1.0-cp311-none-any.whl") and not is_pure("foo-1.0-py2-none-any.whl")


def _gpu_run(*args, cwd=REPO):
    return subprocess.run(["bash", str(REPO / "scripts/gpu_run.sh"), *args], cwd=cwd, capture_output=True,
                          text=True, env=ENV, timeout=300)


@pytest.mark.parametrize("args, msg", [
    (["--part", "some"], "--part must be bench or all"),
    (["--dtype", "fp8"], "--dtype must be"),
    (["--cores", "0"], "--cores must be"),
    (["--config", "nope.yaml"], "config file nope.yaml not found"),
    (["--wheelhouse", "/nonexistent"], "make gpu-wheels"),
    (["--frobnicate"], "unknown option --frobnicate"),
    (["--config"], "--config needs a value"),
    (["--config", "config/demo_gpu.yaml", "--config", "nope.yaml"], "config file nope.yaml not found"),
    (["--python", "/bin/false"], "cannot import torch"),
])
def test_gpu_run_bad_arguments(args, msg):
    r = _gpu_run(*args)
    assert r.returncode == 2 and msg in r.stderr


@pytest.mark.slow  # runs fairseq-train / Snakemake itself
def test_gpu_run_dry_run_plans_the_tables_and_the_record(tmp_path):
    wheels = tmp_path / "wh"
    wheels.mkdir()
    (wheels / "requirements-gpu.txt").write_text("fairseq-fixed==0.12.3.1\nsnakemake==9.27.1\n")
    r = _gpu_run("--dry-run", "--wheelhouse", str(wheels), "--python", sys.executable, "--venv",
                 str(tmp_path / "venv"), "--cores", "4", "--dtype", "float16")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert f"--no-index --find-links {wheels}" in out and "--no-build-isolation --no-deps fairseq-fixed==0.12.3.1" in out
    assert "--resources gpu=1" in out and "dtype=float16" in out
    checks = [line.split("--dtype ")[1] for line in out.splitlines() if "fastdec selfcheck" in line and "+ " in line]
    assert checks == ["float64", "float32", "float16"]  # float64 must pass; float32 and the run's dtype are reported
    for table in ("gec/tables/gec_table1.csv", "gad/tables/gad_table1.csv", "gad/figures/gad_figure7_batch.png",
                  "gec/figures/gec_figure6_batch.png", "blockwise/tables/blockwise_table4.csv"):
        assert f"results/demo_gpu/{table}" in out, table  # asked of snakemake (and planned by its dry run)
    assert "This was a dry-run" in out
    row = [line for line in r.stdout.splitlines() if line.startswith("| 20")]
    assert row and "| dry run |" in row[0] and "--dtype float16" in row[0] and "dtype float16" in row[0]
    assert not (tmp_path / "venv").exists()


def test_record_appends_a_dated_row_and_copies_the_tables(tmp_path):
    from fastdec.bench.methods import parse_methods
    from fastdec.bench.results import Record, write_run

    R = tmp_path / "results/demo_gpu"
    methods = parse_methods("fairseq:beam=5,greedy,gad:k=25")
    recs = {m.label: [Record(m.label, 0, [5, 2], t, 2)] for m, t in zip(methods, (0.9, 0.3, 0.1))}
    write_run(str(R / "gad/bench/test"), methods, recs, lambda t: "x")
    (R / "gad/tables").mkdir(parents=True)
    (R / "gad/tables/gad_table1.csv").write_text("system,bleu\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "GPU.md").write_text("| date | device | command | result |\n| --- | --- | --- | --- |\n")
    r = subprocess.run([sys.executable, "-m", "fastdec", "gpu-record", "--config",
                        str(REPO / "config/demo_gpu.yaml"), "--device-name", "NVIDIA H100 (torch 2.x, CUDA 12)",
                        "--docs", str(docs), "--command", "scripts/gpu_run.sh"], cwd=tmp_path, capture_output=True,
                       text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = (docs / "GPU.md").read_text().splitlines()
    assert len(lines) == 3 and "| NVIDIA H100 (torch 2.x, CUDA 12) | `scripts/gpu_run.sh` |" in lines[2]
    assert "gad-k25 9.00x (100% = greedy)" in lines[2] and "dtype float32" in lines[2]
    copied = list((docs / "gpu").glob("*-demo_gpu-nvidia-h100/gad_table1.csv"))
    assert copied and "1 files" in lines[2]


@pytest.mark.slow  # runs fairseq-train / Snakemake itself
def test_gpu_run_overlay_and_install_only_dry_runs(tmp_path):
    wheels = tmp_path / "wh"
    wheels.mkdir()
    (wheels / "requirements-gpu.txt").write_text("snakemake==9.27.1\n")  # fairseq present on the machine
    common = ["--dry-run", "--wheelhouse", str(wheels), "--python", sys.executable, "--venv", str(tmp_path / "venv")]
    r = _gpu_run(*common, "--config", "config/demo_gpu.yaml", "--config", "config/variants/gpu_lease.yaml")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert [line.split("--dtype ")[1] for line in out.splitlines() if "fastdec selfcheck" in line] == ["float64",
                                                                                                   "float32"]
    assert "--configfile config/demo_gpu.yaml config/variants/gpu_lease.yaml" in out
    assert "results/demo_gpu_lease/gec/tables/gec_table1.csv" in out and "This was a dry-run" in out
    assert "fairseq-fixed" not in out  # nothing to build when the listing has no fairseq
    row = [line for line in r.stdout.splitlines() if line.startswith("| 20")]
    assert row and "--config config/demo_gpu.yaml --config config/variants/gpu_lease.yaml" in row[0]
    r = _gpu_run(*common, "--install-only")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "-m venv --system-site-packages" in out and "--no-build-isolation --no-deps -e ." in out
    assert "snakemake --configfile" not in out and "dry run: " + str(tmp_path / "venv") + " is set up" in out


def test_record_merges_overlays_and_the_dtype():
    from fastdec.workflow.gpu_run import load_config, targets

    config = load_config([str(REPO / "config/demo_gpu.yaml"), str(REPO / "config/variants/gpu_lease.yaml")],
                         dtype="bfloat16")
    assert config["experiment"] == "demo_gpu_lease" and config["dtype"] == "bfloat16"
    assert config["train"]["teacher"]["max_minutes"] == 3 and config["train"]["teacher"]["lr"] == 0.0007
    assert config["gec"]["benchmark"]["sentences"] == 500 and config["gec"]["benchmark"]["batch_sizes"][-1] == 32
    assert all(t.startswith("results/demo_gpu_lease/") for t in targets(config, "bench"))


def _planned_jobs(out: str) -> int:
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith("total ")))


@pytest.mark.slow  # runs fairseq-train / Snakemake itself
def test_gpu_run_passes_snakemake_options_after_the_targets(tmp_path):
    """`-- --prioritize FILE` (a lease's first table first) must not take the benchmark targets as more files to
    prioritise, which would leave snakemake building its default target, the whole report."""
    common = ["--dry-run", "--python", sys.executable, "--venv", str(tmp_path / "venv")]
    plain = _gpu_run(*common)
    assert plain.returncode == 0, (plain.stdout + plain.stderr)[-3000:]
    first = _gpu_run(*common, "--", "--prioritize", "results/demo_gpu/gec/tables/gec_table1.csv")
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    assert "<targets> --prioritize results/demo_gpu/gec/tables/gec_table1.csv" in first.stdout
    assert _planned_jobs(first.stdout) == _planned_jobs(plain.stdout)
    everything = _gpu_run(*common, "--part", "all")
    assert _planned_jobs(everything.stdout) > _planned_jobs(plain.stdout)  # the check above can tell them apart
