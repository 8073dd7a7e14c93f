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
