"""The half-precision code (float16 / bfloat16) run on the CPU, where the engine normally refuses it.

A GPU run in ``dtype: float16|bfloat16`` goes through casts that no float32/float64 test reaches: weights and
positional tables converted to half, masks applied to half scores (SDPA and the explicit path), log-softmax upcast
to float32, the NAT drafter's half logits, fairseq's generator on a half model. ``HALF_ON_CPU`` lifts the CPU
refusal so that a dtype mismatch in any of them fails here, not in a GPU lease. Ties may flip in half precision
(GPU.md reports the identical rate as measured), so outputs must mostly, not always, equal greedy's.
"""
import pytest
import torch

import fastdec.engine.verifier as verifier_module
from fastdec.bench.results import read_run
from fastdec.cli import main
from fastdec.engine import InputCopyDrafter, accept_top1, greedy_decode
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.nat_drafter import NATDrafter
from fastdec.engine.profile import build_random_nat_drafter, build_random_transformer
from fastdec.engine.selfcheck import VARIANTS, check_model, random_sources
from fastdec.engine.verifier import Verifier, resolve_device_dtype

HALF = [torch.bfloat16, torch.float16]


@pytest.fixture
def half_on_cpu(monkeypatch):
    monkeypatch.setattr(verifier_module, "HALF_ON_CPU", True)


def test_half_on_cpu_is_refused_by_default():
    for dt in ("float16", "bfloat16"):
        with pytest.raises(ValueError, match="only supported on CUDA"):
            resolve_device_dtype("cpu", dt)


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "explicit"])
def test_every_exact_method_decodes_in_half_precision(half_on_cpu, dtype, use_sdpa):
    identical = total = 0
    for i, (variant, kwargs) in enumerate(VARIANTS.items()):
        model, d, _ = build_random_transformer(seed=100 + i, dtype=torch.float32, max_positions=64, **kwargs)
        ver = Verifier(model, device="cpu", dtype=dtype, use_sdpa=use_sdpa)
        ver.start(torch.tensor([4, 5, 6, d.eos()]))
        out = ver.forward(torch.tensor([d.eos(), 7, 8]))
        assert out.hidden.dtype == dtype and out.log_probs.dtype == torch.float32, variant
        assert torch.isfinite(out.log_probs).all(), variant
        nat, _ = build_random_nat_drafter(d, seed=i, dtype=torch.float32, init_std=0.5)
        nat = NATDrafter(nat, k=5, verifier_vocab_size=ver.vocab_size, device="cpu", dtype=dtype)
        rows = check_model(ver, len(d), d.eos(), sentences=6, batch=3, seed=i, nat_drafter=nat)
        assert {r["method"] for r in rows} == {"greedy", "iad", "gad", "noisy-top1", "gad++-beta1", "blockwise-k1",
                                                "iad+cost", "gad+cost", "noisy-top1+cost"}
        identical += sum(r["identical"] for r in rows)
        total += sum(r["total"] for r in rows)
    assert identical >= 0.9 * total, f"{identical}/{total} identical to greedy in {dtype}"


def test_bench_runs_a_half_precision_checkpoint(half_on_cpu, tiny_checkpoint, tiny_databin, tmp_path):
    lines = (tiny_databin.parent / "test.src").read_text().splitlines()[:6]
    inp = tmp_path / "in.txt"
    inp.write_text("".join(line + "\n" for line in lines))
    rc = main(["bench", "--checkpoint", str(tiny_checkpoint), "--data-bin", str(tiny_databin), "--input", str(inp),
               "--methods", "fairseq:beam=5,fairseq:beam=1,iad,greedy:batch=4,iad:batch=4", "--threads", "1",
               "--max-len-a", "1.2", "--max-len-b", "5", "--dtype", "bfloat16", "--out-dir", str(tmp_path / "run")])
    assert rc == 0
    run = read_run(str(tmp_path / "run"))
    assert run.meta["dtype"] == "bfloat16"
    assert list(run.summary.index) == ["fairseq-beam5", "fairseq-greedy", "iad", "greedy-bs4", "iad-bs4", "greedy"]
    assert (run.summary["n_sentences"] == len(lines)).all() and (run.summary["sent_per_s"] > 0).all()
    same = run.summary.loc[["fairseq-greedy", "iad", "greedy-bs4", "iad-bs4"], "identical_to_greedy"]
    assert same.sum() >= 0.8 * 4 * len(lines), same.to_dict()


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_efficient_students_decode_in_half_precision(half_on_cpu, dtype):
    """The students' own cached decoder (SSRU and AAN state per position; batch 1, its only mode) in half."""
    from fastdec.engine.student_verifier import StudentVerifier
    from helpers.students import STUDENT_CONFIGS, build_random_student

    identical = total = 0
    for idx, kwargs in enumerate(STUDENT_CONFIGS):
        model, d = build_random_student(seed=200 + idx, init_std=0.6, dtype=torch.float32, **kwargs)
        ver = StudentVerifier(model, device="cpu", dtype=dtype)
        for src in random_sources(len(d), d.eos(), 6, seed=idx):
            greedy = greedy_decode(ver, src, max_len_a=1.2, max_len_b=10).tokens
            iad = draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, max_len_a=1.2, max_len_b=10)
            identical += iad.tokens == greedy
            total += 1
    assert identical >= 0.9 * total, f"{identical}/{total} identical to greedy in {dtype}"
