"""CTranslate2 as a peer baseline on the same weights: converted from a real fairseq-train checkpoint, its float32
greedy output equals the engine's greedy output token for token under fairseq's length conventions."""
import pytest

from fastdec.engine.ctranslate2_backend import CT2Generator, convert
from fastdec.engine.load import load_model
from fastdec.engine.loop import greedy_decode
from fastdec.engine.verifier import Verifier


@pytest.fixture(scope="module")
def converted(tiny_checkpoint, tiny_databin, tmp_path_factory):
    out = tmp_path_factory.mktemp("ct2") / "model"
    convert(str(tiny_checkpoint), str(tiny_databin), str(out), source_lang="src", target_lang="tgt")
    return out


def test_ct2_greedy_equals_engine_greedy(converted, tiny_checkpoint, tiny_databin):
    loaded = load_model(str(tiny_checkpoint), str(tiny_databin))
    ver = Verifier(loaded.model)
    lines = (tiny_databin.parent / "test.src").read_text().splitlines()
    sources = [loaded.encode(line) for line in lines]
    for a, b in ((0.0, 5), (1.2, 10)):  # a binding and a loose length limit
        gen = CT2Generator(str(converted), loaded.src_dict, loaded.tgt_dict, beam=1, max_len_a=a, max_len_b=b,
                           max_positions=ver.max_positions)
        ours = [greedy_decode(ver, s, max_len_a=a, max_len_b=b).tokens for s in sources]
        theirs = [r.tokens for r in gen.generate(sources)]
        assert theirs == ours, (a, b)
    # batched: one length limit per batch (its longest source, as fairseq's padded batches); a loose limit agrees
    assert [r.tokens for r in gen.generate(sources, batch_size=8)] == ours
    beam = CT2Generator(str(converted), loaded.src_dict, loaded.tgt_dict, beam=5, compute_type="int8",
                        max_len_b=10).generate(sources[:4])
    assert all(r.tokens[-1] == loaded.tgt_dict.eos() and len(r.tokens) <= 11 and r.time > 0 for r in beam)


def test_ct2_errors_name_the_fix(converted, tiny_databin, tmp_path):
    from fairseq.data import Dictionary

    d = Dictionary.load(str(tiny_databin / "dict.src.txt"))
    with pytest.raises(ValueError, match="compute_type"):
        CT2Generator(str(converted), d, d, compute_type="int3")
    with pytest.raises(ValueError, match="convert the checkpoint first"):
        CT2Generator(str(tmp_path), d, d)
    with pytest.raises(ValueError, match="no such checkpoint"):
        convert(str(tmp_path / "nope.pt"), str(tiny_databin), str(tmp_path / "o"), source_lang="src", target_lang="tgt")
    with pytest.raises(ValueError, match="beam"):
        CT2Generator(str(converted), d, d, beam=0)


def test_ct2_rows_in_a_bench_run(converted, tiny_checkpoint, tiny_databin, tmp_path):
    """`fastdec bench` with CTranslate2 rows beside fairseq's and the engine's: one grammar, one results schema."""
    import subprocess
    import sys
    from pathlib import Path

    from fastdec.bench.methods import parse_method
    from fastdec.bench.results import read_run

    inp = tmp_path / "in.txt"
    lines = (tiny_databin.parent / "test.src").read_text().splitlines()[:8]
    inp.write_text("".join(line + "\n" for line in lines))
    methods = ",".join(["fairseq:beam=5", f"ct2:model={converted}", f"ct2:beam=5:compute=int8:model={converted}",
                        f"ct2:batch=4:model={converted}", "greedy"])
    r = subprocess.run([sys.executable, "-m", "fastdec", "bench", "--checkpoint", str(tiny_checkpoint), "--data-bin",
                        str(tiny_databin), "--input", str(inp), "--methods", methods, "--threads", "1",
                        "--max-len-a", "1.2", "--max-len-b", "5", "--out-dir", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_run(str(tmp_path / "run"))
    assert list(run.summary.index) == ["fairseq-beam5", "ct2-greedy", "ct2-beam5-int8", "ct2-greedy-bs4", "greedy"]
    assert run.row("ct2-greedy")["identical_to_greedy"] == 8 and run.row("ct2-greedy-bs4")["identical_to_greedy"] == 8
    assert not run.row("ct2-greedy")["exact"] and run.row("ct2-greedy")["speedup_vs_greedy"] > 0
    assert parse_method("ct2:beam=5:compute=int8:model=x").spec == "ct2:beam=5:compute=int8:model=x"
    for bad, words in (("ct2:compute=int3", "compute"), ("ct2:k=3", "only beam")):
        with pytest.raises(ValueError, match=words):
            parse_method(bad)
    r = subprocess.run([sys.executable, "-m", "fastdec", "bench", "--checkpoint", str(tiny_checkpoint), "--data-bin",
                        str(tiny_databin), "--input", str(inp), "--methods", "ct2", "--out-dir", str(tmp_path / "x")],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 2 and "ct2:model=PATH" in r.stderr
