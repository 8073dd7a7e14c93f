"""The synthetic-data noise (fastdec/tracks/gec/synthetic.py) and its steps (fastdec/tracks/gec/pretrain_data.py): hand-checkable
confusion sets and operations, rates on a large input, seed reproducibility, blank and odd lines."""
import gzip
import json
import random
from collections import Counter

import pytest

from fastdec.data.download import DownloadError, iter_member_lines
from fastdec.tracks.gec import pretrain_data
from fastdec.tracks.gec.synthetic import Noiser, NoiseParams, build_confusion_sets, noise_chars, noise_lines

COUNTS = Counter({"the": 100, "then": 50, "them": 40, "they": 30, "form": 20, "from": 60, "cat": 10, "cut": 5,
                  "a": 90, "2019": 30, "dog": 8})
VOCAB = ["the", "from", "then", "them", "they", "form", "cat", "cut", "dog"]
SENT = "the cat sat on the mat with the dog from then on".split()


def only(op, **kw):
    weights = {"substitute": 0.0, "delete": 0.0, "insert": 0.0, "swap": 0.0, op: 1.0}
    return NoiseParams(**{"error_rate": 1.0, "error_rate_std": 0.0, "char_rate": 0.0, **weights, **kw})


def test_confusion_sets_are_frequent_orthographic_neighbours():
    sets = build_confusion_sets(COUNTS, vocab_size=100, max_candidates=3)
    assert sets["the"] == ["then", "them", "they"]      # insertions, most frequent first, cut at 3
    assert sets["then"] == ["the", "them", "they"]      # a deletion and two substitutions
    assert sets["form"] == ["from"] and sets["from"] == ["form"]   # an adjacent swap
    assert sets["cat"] == ["cut"]
    assert "2019" not in sets and "a" not in sets and "dog" not in sets  # numbers, 1-letter words, no neighbour
    # the 3 most frequent words take part: the, from, then
    assert build_confusion_sets(COUNTS, vocab_size=3, max_candidates=5) == {"the": ["then"], "then": ["the"]}


def test_each_word_operation():
    conf = build_confusion_sets(COUNTS, 100, 20)
    sub = Noiser(only("substitute"), conf, VOCAB)(SENT)
    assert len(sub) == len(SENT)
    for old, new in zip(SENT, sub):
        assert new in conf[old] if old in conf else new == old   # "sat", "on", ... have no confusion set
    assert Noiser(only("delete"), conf, VOCAB)(["a", "b", "c"]) == ["a"]  # never empty: the first word stays
    ins = Noiser(only("insert"), conf, VOCAB)(["a", "b"])
    assert ins[0::2] == ["a", "b"] and set(ins[1::2]) <= set(VOCAB) and len(ins) == 4
    assert Noiser(only("swap"), conf, VOCAB)(["a", "b", "c", "d"]) == ["b", "a", "d", "c"]
    # the last word has no right neighbour: "c" swaps with its left one (by then "a")
    assert Noiser(only("swap"), conf, VOCAB)(["a", "b", "c"]) == ["b", "c", "a"]
    capital = Noiser(only("substitute"), conf, VOCAB)(["Cat"])
    assert capital == ["Cut"]                            # the confusion set is looked up lower-cased, case kept


def test_character_noise_changes_one_character():
    rng = random.Random(0)
    seen = set()
    for _ in range(400):
        out = noise_chars("house", rng)
        seen.add(len(out) - 5)
        # one substitution, deletion, insertion or adjacent swap: length within one, the letters mostly kept
        assert abs(len(out) - 5) <= 1 and len(set(out) & set("house")) >= 3
    assert seen == {-1, 0, 1}
    assert all(len(noise_chars("a", rng)) in (1, 2) for _ in range(50))
    words = Noiser(NoiseParams(error_rate=0.0, error_rate_std=0.0, char_rate=1.0), {}, VOCAB)(SENT)
    assert len(words) == len(SENT) and sum(a != b for a, b in zip(words, SENT)) >= len(SENT) // 2


def large_input(n=4000, seed=3):
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(5, 30))) for _ in range(n)]


@pytest.mark.parametrize("params", [
    NoiseParams(error_rate=0.15, error_rate_std=0.0),
    NoiseParams(error_rate=0.15, error_rate_std=0.2),   # clipped at 0: the mean share is ~0.176, not 0.15
    NoiseParams(error_rate=0.4, error_rate_std=0.1, substitute=0.4, delete=0.3, insert=0.2, swap=0.1, char_rate=0.3),
])
def test_rates_on_a_large_input(params):
    conf = build_confusion_sets(COUNTS, 100, 20)
    noiser = Noiser(params, conf, VOCAB, shard=7)
    pairs = list(noise_lines(large_input(), noiser))
    s = noiser.stats
    assert s["sentences"] == 4000 and len(pairs) == 4000
    assert s["chosen"] / s["words"] == pytest.approx(params.expected_word_rate(), abs=0.01)
    ops = s["substitute"] + s["substitute_no_candidates"] + s["delete"] + s["insert"] + s["swap"]
    for op in ("delete", "insert", "swap"):  # a swap consumes its neighbour, which then is not changed again
        assert s[op] / ops == pytest.approx(getattr(params, op), abs=0.03), op
    assert s["char"] / sum(len(src.split()) for src, _ in pairs) == pytest.approx(params.char_rate, abs=0.01)
    assert all(tgt in set(large_input()) for _, tgt in pairs[:50])


def test_expected_rate_of_the_clipped_normal():
    assert NoiseParams(error_rate=0.15, error_rate_std=0.0).expected_word_rate() == 0.15
    # E[max(0, X)], X ~ N(0.15, 0.2): 0.15 * Phi(0.75) + 0.2 * phi(0.75) = 0.1160 + 0.0602
    assert NoiseParams().expected_word_rate() == pytest.approx(0.1762, abs=2e-4)


def test_same_seed_same_output_other_seed_or_shard_differs():
    conf = build_confusion_sets(COUNTS, 100, 20)
    lines = large_input(300)
    run = lambda seed, shard: list(noise_lines(lines, Noiser(NoiseParams(seed=seed), conf, VOCAB, shard=shard)))
    assert run(1, 0) == run(1, 0)
    assert run(1, 0) != run(2, 0) and run(1, 0) != run(1, 1)


def test_blank_long_and_odd_lines():
    noiser = Noiser(NoiseParams(seed=5), {}, VOCAB)
    lines = ["", "   ", "x", "a " * 200, "émigré naïve café — “quoted” 😀", "tab\tseparated words"]
    pairs = list(noise_lines(lines, noiser, max_words=100))
    assert noiser.stats["skipped_empty"] == 2 and noiser.stats["skipped_long"] == 1
    assert [t for _, t in pairs] == ["x", "émigré naïve café — “quoted” 😀", "tab separated words"]
    assert all(src.strip() and "\n" not in src for src, _ in pairs)
    assert Noiser(NoiseParams(), {}, VOCAB)([]) == []


@pytest.mark.parametrize("bad, key", [
    (dict(error_rate=1.5), "error_rate"),
    (dict(char_rate=-0.1), "char_rate"),
    (dict(error_rate_std=-1), "error_rate_std"),
    (dict(substitute=0.5), "sum to 0.8"),
])
def test_bad_noise_parameters_name_the_key(bad, key):
    with pytest.raises(ValueError, match=key):
        NoiseParams(**bad)


def test_split_confusion_corrupt_steps(tmp_path):
    clean = [f"The cat number {i} sat on the mat ." for i in range(50)] + ["", "They came from the form."]
    gz = tmp_path / "news.2019.en.shuffled.deduped.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(clean) + "\n")
    stats = pretrain_data.split_clean([(str(gz), None)], str(tmp_path / "clean"), 40, 5, 3)
    assert stats == {"valid": 5, "train": 40, "shards": 3}
    shards = [(tmp_path / f"clean/train.{k}.txt").read_text().splitlines() for k in range(3)]
    assert [len(s) for s in shards] == [14, 13, 13] and shards[0][0] == clean[5] and shards[1][0] == clean[6]
    with pytest.raises(ValueError, match="gec.pretrain.sentences"):
        pretrain_data.split_clean([(str(gz), None)], str(tmp_path / "c2"), 100, 5, 2)
    info = pretrain_data.build_confusion(str(tmp_path / "clean/train.0.txt"), str(tmp_path / "conf.json"), None,
                                         100, 5, tokenize=True)
    assert info["vocab"] > 5
    out = pretrain_data.corrupt(str(tmp_path / "clean/train.1.txt"), str(tmp_path / "conf.json"),
                                str(tmp_path / "t.src"), str(tmp_path / "t.tgt"), {"seed": 3}, 1, None, True)
    tgt = (tmp_path / "t.tgt").read_text().splitlines()
    assert out["sentences"] == len(tgt) == 13 and tgt[0] == "The cat number 6 sat on the mat ."
    assert len((tmp_path / "t.src").read_text().splitlines()) == 13
    assert json.loads(json.dumps(out))["word_change_rate"] > 0


def test_streaming_reader_needs_a_gzip_or_a_tar_member(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("a\n")
    with pytest.raises(DownloadError, match="not a gzip"):
        list(iter_member_lines(plain))
    with pytest.raises(DownloadError, match="not a tar"):
        list(iter_member_lines(plain, "x.txt"))


def test_confusion_sets_fold_case():
    sets = build_confusion_sets(Counter({"The": 60, "the": 50, "then": 30, "Then": 30}), 10, 5)
    assert sets == {"the": ["then"], "then": ["the"]}   # "The" and "the" are one word, and outrank "then"
