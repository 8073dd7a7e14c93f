"""SARI (fastdec.eval.sari) against scores worked out by hand from Xu et al.'s definition, and multi-reference BLEU.

Notation in the comments: for each n-gram order, source and output counts are multiplied by the number of
references R, reference counts are summed over the references; keep F1 = F1(P_keep, R_keep), delete = P_del,
add = F1(P_add, R_add); SARI = (mean_n keep + mean_n delete + mean_n add) / 3."""
import pytest

from fastdec.eval.sari import corpus_sari, multi_bleu, sari_sentence


def test_copy_of_a_two_word_source():
    # source "a b", output "a b", one reference "a b".
    # n=1: kept {a, b}, all in the reference: P_keep = R_keep = 1 -> keep 1; nothing deleted or added -> 0, 0.
    # n=2: "a b" kept -> keep 1, delete 0, add 0.
    # n=3, n=4: no n-grams at all -> 0, 0, 0 (the reference code scores an empty order 0).
    # keep mean (1 + 1 + 0 + 0) / 4 = 0.5; SARI = (0.5 + 0 + 0) / 3 = 1/6.
    assert sari_sentence("a b", "a b", ["a b"]) == pytest.approx(1 / 6)


def test_good_deletion_with_two_references():
    # source "x y z", output "x z", references "x z" and "x y z" (R = 2).
    # n=1: source x2 = {x:2, y:2, z:2}, output x2 = {x:2, z:2}, references {x:2, y:1, z:2}.
    #   keep = {x:2, z:2}, all in the references: P_keep = (2/2 + 2/2) / 2 = 1;
    #   kept by the references = {x:2, y:1, z:2}: R_keep = (2/2 + 0/1 + 2/2) / 3 = 2/3; F1 = 0.8.
    #   deleted {y:2}, minus the references' {y:1} -> {y:1}: P_del = (1/2) / 1 = 0.5. Added nothing: 0.
    # n=2: source {xy:2, yz:2}, output {xz:2}, references {xz:1, xy:1, yz:1}.
    #   nothing kept: keep 0. Deleted {xy:2, yz:2} -> not in the references {xy:1, yz:1}: P_del = (1/2+1/2)/2 = 0.5.
    #   added {xz}, in the references; the references add {xz} only: P_add = R_add = 1 -> add 1.
    # n=3: source {xyz:2}, output none, references {xyz:1}: keep 0 (R_keep 0), P_del = 1/2, add 0.
    # n=4: nothing: 0, 0, 0.
    # keep mean 0.8/4 = 0.2, delete mean 1.5/4 = 0.375, add mean 1/4 = 0.25 -> SARI = 0.825 / 3 = 0.275.
    assert sari_sentence("x y z", "x z", ["x z", "x y z"]) == pytest.approx(0.275)


def test_wrong_substitution():
    # source "a b", output "a c", reference "a b".
    # n=1: kept {a} (in the reference): P_keep = 1; the reference keeps {a, b}: R_keep = (1 + 0) / 2 = 0.5;
    #   F1 = 2/3. Deleted {b}, which the reference keeps: P_del = 0. Added {c}, not in the reference: 0.
    # n=2: source {ab}, output {ac}: nothing kept (R_keep 0), "a b" deleted wrongly (0), "a c" added wrongly (0).
    # SARI = ((2/3) / 4) / 3 = 1/18.
    assert sari_sentence("a b", "a c", ["a b"]) == pytest.approx(1 / 18)


def test_corpus_sari_is_the_mean_of_sentences_times_100_and_lowercases():
    # (1/6 + 1/18) / 2 * 100 = 100/9; the reference code lowercases every side before scoring
    assert corpus_sari(["a b", "A B"], ["a b", "a C"], [["a b"], ["a b"]]) == pytest.approx(100 / 9)


def test_corpus_sari_rejects_unparallel_input():
    with pytest.raises(ValueError, match="parallel"):
        corpus_sari(["a"], ["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="reference"):
        sari_sentence("a", "a", [])


def test_multi_reference_bleu():
    refs = [["the cat sat on the mat .", "a cat sat on a mat ."], ["it rains today .", "today it rains ."]]
    # each output equals one of its references, so with both references BLEU is 100 ...
    both = multi_bleu(["a cat sat on a mat .", "it rains today ."], refs)
    assert both["bleu"] == 100.0 and "nrefs:2" in both["signature"] and "tok:none" in both["signature"]
    # ... and with the first references alone it is not
    first = multi_bleu(["a cat sat on a mat .", "it rains today ."], [[r[0]] for r in refs])
    assert first["bleu"] < 100.0
    with pytest.raises(ValueError, match="numbers of references"):
        multi_bleu(["x", "y"], [["x"], ["y", "z"]])
