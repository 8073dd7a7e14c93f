"""MaxMatch (M2) scorer: hand-made cases with the answers worked out by hand in the comments.

Conventions of the official CoNLL-2014 scorer that the expected numbers follow:
P = c/e (1.0 when nothing is proposed), R = c/g (1.0 when there is no gold edit),
F0.5 = 1.25 P R / (0.25 P + R) (0.0 when P = R = 0).
"""
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fastdec.eval import m2
from fastdec.eval.m2 import GoldEdit, M2FormatError

REPO = Path(__file__).resolve().parents[1]

# Two gold edits, one annotator: "see -> sees" (tokens 1-2) and "dogs -> dog" (tokens 3-4).
SEE_DOGS = """S She see a dogs .
A 1 2|||SVA|||sees|||REQUIRED|||-NONE-|||0
A 3 4|||Noun:Num|||dog|||REQUIRED|||-NONE-|||0
"""


def run(m2_text, hyps, **kw):
    return m2.score(hyps, m2.parse_m2(m2_text), **kw)


def prf(res):
    return (round(res.precision, 6), round(res.recall, 6), round(res.f, 6))


def test_perfect_correction():
    # Both gold edits proposed, nothing else: c = e = g = 2 -> P = R = F = 1.
    res = run(SEE_DOGS, ["She sees a dog ."])
    assert (res.correct, res.proposed, res.gold) == (2, 2, 2)
    assert prf(res) == (1.0, 1.0, 1.0)
    s = res.sentences[0]
    assert s.system_edits == [(1, 2, "see", "sees"), (3, 4, "dogs", "dog")]
    assert s.correct_edits == s.system_edits


def test_no_correction():
    # Output = input: e = 0, c = 0, g = 2 -> P = 1.0 (official: nothing proposed), R = 0, F = 0.
    res = run(SEE_DOGS, ["She see a dogs ."])
    assert (res.correct, res.proposed, res.gold) == (0, 0, 2)
    assert prf(res) == (1.0, 0.0, 0.0)
    assert (res.tp, res.fp, res.fn) == (0, 0, 2)


def test_one_of_two_edits():
    # Only "see -> sees": c = 1, e = 1, g = 2 -> P = 1, R = 0.5, F = 1.25*0.5/(0.25+0.5) = 0.833333.
    res = run(SEE_DOGS, ["She sees a dogs ."])
    assert (res.correct, res.proposed, res.gold) == (1, 1, 2)
    assert prf(res) == (1.0, 0.5, 0.833333)


def test_wrong_edit():
    # "see -> saw" is not a gold edit: c = 0, e = 1, g = 2 -> P = R = F = 0.
    res = run(SEE_DOGS, ["She saw a dogs ."])
    assert (res.correct, res.proposed, res.gold) == (0, 1, 2)
    assert prf(res) == (0.0, 0.0, 0.0)
    # One wrong and one right: c = 1, e = 2, g = 2 -> P = R = F = 0.5.
    res = run(SEE_DOGS, ["She saw a dog ."])
    assert (res.correct, res.proposed, res.gold) == (1, 2, 2)
    assert prf(res) == (0.5, 0.5, 0.5)


def test_case_sensitive_by_default_and_ignore_whitespace_casing():
    # "Sees" != "sees": the edit see -> Sees is wrong (c = 0, e = 1).
    res = run(SEE_DOGS, ["She Sees a dogs ."])
    assert (res.correct, res.proposed) == (0, 1)
    # Official --ignore_whitespace_casing drops edits that only change case: she -> She is not proposed.
    text = "S she went home .\nA 0 1|||Case|||She|||REQUIRED|||-NONE-|||0\n"
    assert run(text, ["She went home ."]).proposed == 1
    res = run(text, ["She went home ."], ignore_whitespace_casing=True)
    assert (res.correct, res.proposed, res.gold) == (0, 0, 1)


def test_insertion():
    # Gold: insert "to" before token 2 (span 2 2). The system inserts exactly that: 1 / 1 / 1.
    text = "S He went school .\nA 2 2|||Prep|||to|||REQUIRED|||-NONE-|||0\n"
    res = run(text, ["He went to school ."])
    assert res.sentences[0].system_edits == [(2, 2, "", "to")]
    assert prf(res) == (1.0, 1.0, 1.0)
    # Inserting "at" instead: c = 0, e = 1, g = 1 -> all 0.
    assert prf(run(text, ["He went at school ."])) == (0.0, 0.0, 0.0)
    # Alternatives "to||into": either is correct.
    alt = "S He went school .\nA 2 2|||Prep|||to||into|||REQUIRED|||-NONE-|||0\n"
    assert prf(run(alt, ["He went into school ."])) == (1.0, 1.0, 1.0)


def test_deletion_picks_the_gold_alignment():
    # "He is is here ." -> "He is here .": deleting token 1 or token 2 are equally short alignments;
    # the scorer takes the one that matches the gold deletion, whichever it is: 1 / 1 / 1 both times.
    for span in ("1 2", "2 3"):
        text = f"S He is is here .\nA {span}|||Rep|||-NONE-|||REQUIRED|||-NONE-|||0\n"
        res = run(text, ["He is here ."])
        start, end = map(int, span.split())
        assert res.sentences[0].system_edits == [(start, end, "is", "")]
        assert prf(res) == (1.0, 1.0, 1.0)


def test_multi_token_replacement():
    # Gold "has went -> had gone" is one edit over tokens 1-3.  The lattice has the two substitutions
    # has->had, went->gone and the transitive arc that joins them; the arc matches the gold edit,
    # so the system proposes ONE edit: c = e = g = 1.
    text = "S He has went home .\nA 1 3|||Verb|||had gone|||REQUIRED|||-NONE-|||0\n"
    res = run(text, ["He had gone home ."])
    assert res.sentences[0].system_edits == [(1, 3, "has went", "had gone")]
    assert prf(res) == (1.0, 1.0, 1.0)


def test_transitive_arcs_respect_max_unchanged_words():
    # Gold "a b c d -> x b c y" spans two unchanged words (b c).  With the default
    # max_unchanged_words = 2 the arc exists and matches: 1 / 1 / 1.  With 1 it does not, and the
    # system proposes two edits, c = 0, e = 2, g = 1 -> all 0.  Which two is an official quirk: the
    # substitution a->x lies in both Levenshtein lattices (sub cost 1 and 2), so its edge is listed
    # twice and gets +0.001 twice (weight 1.002); the arc "a b -> x b" (2 steps, listed once) costs
    # 2.001 < 1.002 + 1 (a->x then the noop b).  So the edits are "a b -> x b" and "c d -> c y"
    # (checked against the official code).
    text = "S a b c d e\nA 0 4|||X|||x b c y|||REQUIRED|||-NONE-|||0\n"
    assert prf(run(text, ["x b c y e"])) == (1.0, 1.0, 1.0)
    res = run(text, ["x b c y e"], max_unchanged_words=1)
    assert res.sentences[0].system_edits == [(0, 2, "a b", "x b"), (2, 4, "c d", "c y")]
    assert (res.correct, res.proposed, res.gold) == (0, 2, 1)
    assert prf(res) == (0.0, 0.0, 0.0)


def test_two_annotators_second_fits_better():
    # Annotator 0 wants see -> saw, annotator 1 see -> sees; both want dogs -> dog.
    # Output "She sees a dog .": vs 0: c=1, e=2, g=2 (F = 0.5); vs 1: c=2, e=2, g=2 (F = 1) -> 1 chosen.
    text = """S She see a dogs .
A 1 2|||Verb|||saw|||REQUIRED|||-NONE-|||0
A 3 4|||Noun|||dog|||REQUIRED|||-NONE-|||0
A 1 2|||SVA|||sees|||REQUIRED|||-NONE-|||1
A 3 4|||Noun|||dog|||REQUIRED|||-NONE-|||1
"""
    res = run(text, ["She sees a dog ."])
    assert res.sentences[0].annotator == 1
    assert prf(res) == (1.0, 1.0, 1.0)
    # Same output against annotator 0 alone: P = R = F = 0.5.
    only0 = "\n".join(text.splitlines()[:3]) + "\n"
    assert prf(run(only0, ["She sees a dog ."])) == (0.5, 0.5, 0.5)


def test_annotator_choice_uses_running_totals():
    # Sentence 1: output unchanged, 2 gold edits -> totals c=0, e=0, g=2.
    # Sentence 2, output "I had gone home early .":
    #   annotator 0 (one edit "has went -> had gone"):  c=1, e=1, g=1; local F = 1.0;
    #       with the totals: c=1, e=1, g=3 -> 1.25*1/(0.25*3+1)   = 0.714286
    #   annotator 1 (has->had, went->gone, early->earlier): c=2, e=2, g=3; local F = 2.5/2.75 = 0.909;
    #       with the totals: c=2, e=2, g=5 -> 1.25*2/(0.25*5+2)   = 0.769231  <- chosen (official rule)
    # Corpus: c=2, e=2, g=5 -> P = 1, R = 0.4, F = 1.25*0.4/(0.25+0.4) = 0.769231.
    # (Choosing by local F would have picked annotator 0 and given F = 0.714286.)
    text = SEE_DOGS + """
S I has went home early .
A 1 3|||Verb|||had gone|||REQUIRED|||-NONE-|||0
A 1 2|||Verb|||had|||REQUIRED|||-NONE-|||1
A 2 3|||Verb|||gone|||REQUIRED|||-NONE-|||1
A 4 5|||Adv|||earlier|||REQUIRED|||-NONE-|||1
"""
    res = run(text, ["She see a dogs .", "I had gone home early ."])
    assert [s.annotator for s in res.sentences] == [0, 1]
    assert res.sentences[1].system_edits == [(1, 2, "has", "had"), (2, 3, "went", "gone")]
    assert (res.correct, res.proposed, res.gold) == (2, 2, 5)
    assert prf(res) == (1.0, 0.4, 0.769231)


def test_noop_annotator():
    # Annotator 0 has two edits, annotator 1 says the sentence is fine (noop line).
    text = SEE_DOGS + "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||1\n"
    sents = m2.parse_m2(text)
    assert sents[0].annotators[1] == []
    # Output unchanged: vs 0: c=0, e=0, g=2 -> F = 0; vs 1: c=e=g=0 -> F = 1 (official 0/0 rule)
    # -> annotator 1, corpus P = R = F = 1.
    res = run(text, ["She see a dogs ."])
    assert res.sentences[0].annotator == 1
    assert prf(res) == (1.0, 1.0, 1.0)
    # Output corrected as annotator 0 wants: vs 0 F = 1, vs 1: c=0, e=2, g=0 -> F = 0 -> annotator 0.
    res = run(text, ["She sees a dog ."])
    assert res.sentences[0].annotator == 0
    assert prf(res) == (1.0, 1.0, 1.0)


def test_tie_rule_prefers_smaller_proposed_plus_beta2_gold():
    # Wrong edit see -> saw.  vs 0: c=0, e=1, g=1 -> F = 0; vs 1 (noop): c=0, e=1, g=0 -> F = 0.
    # Same F, same c -> the smaller e + 0.25 g wins: 1.0 (annotator 1) < 1.25 (annotator 0).
    # Corpus: c=0, e=1, g=0 -> P = 0, R = 1.0 (no gold), F = 0.
    text = ("S She see it .\nA 1 2|||SVA|||sees|||REQUIRED|||-NONE-|||0\n"
            "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||1\n")
    res = run(text, ["She saw it ."])
    assert res.sentences[0].annotator == 1
    assert prf(res) == (0.0, 1.0, 0.0)
    # Identical annotators: the first one seen is kept.
    same = SEE_DOGS + SEE_DOGS.splitlines()[1].replace("|||0", "|||1") + "\n" + \
        SEE_DOGS.splitlines()[2].replace("|||0", "|||1") + "\n"
    assert run(same, ["She sees a dogs ."]).sentences[0].annotator == 0


def test_official_readme_example():
    # The example of the m2scorer README (expected P = R = F0.5 = 0.8):
    # 1: "The -> A" (a transitive arc "The cat sat -> A cat sat", 2 unchanged words) is wrong,
    #    "at -> on" and "+the" are right: c=2, e=3, g=2.
    # 2: unchanged; annotator 1 is a noop -> c=e=g=0.
    # 3: "is -> are", "an -> (deleted)" right, "predator -> predators" missed (annotator 0): c=2, e=2, g=3.
    # Corpus c=4, e=5, g=5 -> P = R = F = 0.8.
    text = """S The cat sat at mat .
A 3 4|||Prep|||on|||REQUIRED|||-NONE-|||0
A 4 4|||ArtOrDet|||the||a|||REQUIRED|||-NONE-|||0

S The dog .
A 1 2|||NN|||dogs|||REQUIRED|||-NONE-|||0
A -1 -1|||noop|||-NONE-|||-NONE-|||-NONE-|||1

S Giant otters is an apex predator .
A 2 3|||SVA|||are|||REQUIRED|||-NONE-|||0
A 3 4|||ArtOrDet|||-NONE-|||REQUIRED|||-NONE-|||0
A 5 6|||NN|||predators|||REQUIRED|||-NONE-|||0
A 1 2|||NN|||otter|||REQUIRED|||-NONE-|||1
"""
    hyps = ["A cat sat on the mat .", "The dog .", "Giant otters are apex predator ."]
    res = run(text, hyps)
    assert (res.correct, res.proposed, res.gold) == (4, 5, 5)
    assert prf(res) == (0.8, 0.8, 0.8)
    assert res.sentences[0].system_edits[0] == (0, 3, "The cat sat", "A cat sat")
    assert [s.annotator for s in res.sentences] == [0, 1, 0]


def test_max_transitive_arcs_guard():
    # An output unrelated to its 30-token source: the exact lattice has ~10^5 transitive arcs.  The
    # exact scorer merges everything into one wrong edit (c = 0, e = 1, g = 1).  With the guard the
    # sentence is scored on the sub-cost-1 lattice (the diagonal of substitutions, whose arcs again
    # merge into one edit), flagged approximate, with the same counts here.
    src = " ".join(f"s{i}" for i in range(30))
    hyp = " ".join(f"h{i % 7}" for i in range(30))
    sents = m2.parse_m2(f"S {src}\nA 0 1|||X|||x|||REQUIRED|||-NONE-|||0\n")
    exact = m2.score([hyp], sents)
    guarded = m2.score([hyp], sents, max_transitive_arcs=5000)
    assert (exact.correct, exact.proposed, exact.gold, exact.approximate_sentences) == (0, 1, 1, 0)
    assert (guarded.correct, guarded.proposed, guarded.gold, guarded.approximate_sentences) == (0, 1, 1, 1)
    assert guarded.sentences[0].system_edits == exact.sentences[0].system_edits
    # A normal sentence never reaches the guard.
    assert m2.score(["She sees a dog ."], m2.parse_m2(SEE_DOGS), max_transitive_arcs=50).approximate_sentences == 0


def test_extract_edits_roundtrip_scores_one():
    # M2 built with extract_edits (the official edit_creator procedure) from (source, target): scoring
    # the target against it gives exactly P = R = F = 1, scoring the source gives R = 0.
    rng = random.Random(7)
    vocab = list("abcde")
    blocks, srcs, tgts = [], [], []
    for _ in range(60):
        src = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        tgt = list(src)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.4 and tgt:
                tgt[rng.randrange(len(tgt))] = rng.choice(vocab + ["X"])
            elif op < 0.7 and tgt:
                del tgt[rng.randrange(len(tgt))]
            else:
                tgt.insert(rng.randint(0, len(tgt)), rng.choice(vocab + ["Y"]))
        blocks.append(m2.format_m2_block(src, [m2.extract_edits(src, tgt)]))
        srcs.append(" ".join(src))
        tgts.append(" ".join(tgt))
    sents = m2.parse_m2("\n\n".join(blocks) + "\n")
    assert len(sents) == 60
    res = m2.score(tgts, sents)
    assert res.gold > 0 and (res.precision, res.recall, res.f) == (1.0, 1.0, 1.0)
    res = m2.score(srcs, sents)
    assert (res.correct, res.proposed, res.recall, res.f) == (0, 0, 0.0, 0.0)


def test_format_m2_block():
    block = m2.format_m2_block(["a", "b"], [[(0, 1, "a", ""), (2, 2, "", "c")], []])
    assert block.splitlines() == [
        "S a b",
        "A 0 1|||UNK|||-NONE-|||REQUIRED|||-NONE-|||0",
        "A 2 2|||UNK|||c|||REQUIRED|||-NONE-|||0",
        "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||1",
    ]
    (sent,) = m2.parse_m2(block)
    assert sent.annotators == {0: [GoldEdit(0, 1, "a", ("",), "UNK"), GoldEdit(2, 2, "", ("c",), "UNK")], 1: []}


# ------------------------------------------------------------------------------------ validation


def test_mismatched_hypothesis_count_names_both_files(tmp_path):
    gold = tmp_path / "gold.m2"
    gold.write_text(SEE_DOGS + "\n" + SEE_DOGS, encoding="utf-8")
    hyp = tmp_path / "system.txt"
    hyp.write_text("She sees a dog .\n", encoding="utf-8")
    with pytest.raises(M2FormatError) as err:
        m2.score(m2.read_hypotheses(hyp), m2.read_m2(gold), names=(f"hypothesis file {hyp}", f"M2 file {gold}"))
    msg = str(err.value)
    assert str(hyp) in msg and str(gold) in msg and "1 lines" in msg and "2 sentences" in msg


@pytest.mark.parametrize(
    "text, needle",
    [
        ("A 1 2|||X|||y|||REQUIRED|||-NONE-|||0\n", "must start with an 'S' line"),
        ("S a b\nA 1 2|||X|||y\n", "6 '|||'-separated fields"),
        ("S a b\nA 1 x|||X|||y|||REQUIRED|||-NONE-|||0\n", "bad span"),
        ("S a b\nA 1 3|||X|||y|||REQUIRED|||-NONE-|||0\n", "outside the sentence"),
        ("S a b\nS c d\n", "more than one 'S' line"),
        ("S a b\nB whatever\n", "expected an 'A' line"),
    ],
)
def test_malformed_m2(text, needle):
    with pytest.raises(M2FormatError, match=needle) as err:
        m2.parse_m2(text, name="bad.m2")
    assert "bad.m2:" in str(err.value)


def test_empty_source_sentence_and_no_annotation_lines():
    # An S line without A lines gets annotator 0 with no edits (official behaviour); an empty output
    # for an empty source proposes nothing.
    sents = m2.parse_m2("S a b\n\nS \n")
    assert [s.annotators for s in sents] == [{}, {}]
    res = m2.score(["a b", ""], sents)
    assert (res.correct, res.proposed, res.gold) == (0, 0, 0)
    assert prf(res) == (1.0, 1.0, 1.0)


def test_cli(tmp_path):
    gold = tmp_path / "gold.m2"
    gold.write_text(SEE_DOGS, encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("She sees a dogs .\n", encoding="utf-8")
    out = tmp_path / "score.json"
    cmd = [sys.executable, "-m", "fastdec", "m2score", str(hyp), str(gold), "--json", str(out),
           "--per-sentence"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Precision   : 1.0000", "Recall      : 0.5000", "F_0.5       : 0.8333"]
    import json

    d = json.loads(out.read_text())
    assert (d["tp"], d["fp"], d["fn"]) == (1, 0, 1)
    assert d["per_sentence"][0]["system_edits"] == [[1, 2, "see", "sees"]]
    hyp.write_text("She se@@ es a do@@ gs .\n", encoding="utf-8")  # BPE'd output, as the GEC benchmark writes it
    r = subprocess.run(cmd + ["--remove-bpe"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[2] == "F_0.5       : 0.8333", r.stderr
    hyp.write_text("a\nb\n", encoding="utf-8")
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2
    assert str(hyp) in r.stderr and str(gold) in r.stderr
