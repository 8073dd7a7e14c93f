"""ROUGE wiring on cases worked out by hand (rouge-score: F1 = 2PR/(P+R) over unigram / bigram / LCS matches)."""
import pytest

from fastdec.eval.rouge import corpus_rouge, split_sentences


def test_hand_checked_case():
    # ref "the cat sat on the mat" (6 unigrams, 5 bigrams), hyp "the cat sat" (3 unigrams, 2 bigrams):
    # ROUGE-1: P 3/3, R 3/6 -> F1 2/3; ROUGE-2: P 2/2, R 2/5 -> F1 4/7; LCS 3 -> ROUGE-L = ROUGE-1
    s = corpus_rouge(["the cat sat"], ["the cat sat on the mat"])
    assert s["rouge1"] == pytest.approx(100 * 2 / 3)
    assert s["rouge2"] == pytest.approx(100 * 4 / 7)
    assert s["rougeL"] == pytest.approx(100 * 2 / 3)


def test_corpus_mean_stemming_and_summary_level_lcs():
    # identical (after stemming: "cats" -> "cat") and disjoint pairs: mean of 100 and 0
    s = corpus_rouge(["Cats sat.", "dog"], ["cat sat.", "bird"])
    assert s["rouge1"] == pytest.approx(50.0) and s["rouge2"] == pytest.approx(50.0)
    # two reference sentences in swapped order: sentence-level LCS 2 of 4 tokens, summary-level (union LCS) 4 of 4
    s = corpus_rouge(["c d. a b."], ["a b. c d."])
    assert s["rougeLsum"] == pytest.approx(100.0) and s["rougeL"] < 100.0


def test_split_sentences_and_errors():
    assert split_sentences("One. Two! Three? four") == "One.\nTwo!\nThree?\nfour"
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        corpus_rouge(["a", "b"], ["a"])
