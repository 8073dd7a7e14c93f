"""Character-level Chinese GEC: tokenisation and the word-level gold M2 of NLPCC-18 rewritten at character level, then
scored with the project's M2 scorer (answers worked out by hand in the comments)."""
import pytest

from fastdec.eval import m2
from fastdec.tracks.gec.chars import m2_block_to_chars, to_chars

# word-segmented gold (as NLPCC-18's gold.01): "我 喜欢 苹果 。" with the word 喜欢 -> 爱 (words 1-2),
# and a second sentence where the word 他们 (words 0-1) becomes 她们, a second annotator adding 都 after 去.
GOLD = """S 我 喜欢 苹果 。
A 1 2|||S|||爱|||REQUIRED|||-NONE-|||0

S 他们 去 了
A 0 1|||S|||她们|||REQUIRED|||-NONE-|||0
A 1 1|||M|||都|||REQUIRED|||-NONE-|||1
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||2
"""


def chars_m2():
    return "\n\n".join(m2_block_to_chars(b) for b in GOLD.strip().split("\n\n")) + "\n"


def test_to_chars_drops_spaces_and_splits_every_character():
    assert to_chars("我 喜欢苹果 。") == "我 喜 欢 苹 果 。"
    assert to_chars("  ") == ""


def test_word_spans_become_character_spans():
    blocks = chars_m2().strip().split("\n\n")
    # 我|喜欢|苹果|。: word 1 starts at character 1, word 2 at character 3 -> span 1 3
    assert blocks[0].split("\n") == ["S 我 喜 欢 苹 果 。", "A 1 3|||S|||爱|||REQUIRED|||-NONE-|||0"]
    # 他们|去|了: word span 0 1 -> characters 0 2, correction split into characters; insertion 1 1 -> 2 2; noop kept
    assert blocks[1].split("\n")[1:] == ["A 0 2|||S|||她 们|||REQUIRED|||-NONE-|||0",
                                         "A 2 2|||M|||都|||REQUIRED|||-NONE-|||1",
                                         "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||2"]


def test_character_level_m2_scores():
    gold = m2.parse_m2(chars_m2())
    # Perfect output: sentence 1 has one gold edit (喜 欢 -> 爱, matched by merging the character substitution and
    # deletion); sentence 2's best annotator is 0 (她 们, matched by merging 他->她 with the unchanged 们) or the noop
    # annotator 2; the scorer picks, per sentence, the annotator with the highest F then fewest errors:
    # annotator 0 gives c=1 e=1 g=1. Total c=2, e=2, g=2 -> P = R = F0.5 = 1.
    res = m2.score(["我 爱 苹 果 。", "她 们 去 了"], gold)
    assert (res.correct, res.proposed, res.gold) == (2, 2, 2) and res.f == pytest.approx(1.0)
    # Copy of the input: nothing proposed (e=0, P=1 by the official convention); sentence 1 misses its edit (g=1);
    # sentence 2 picks the noop annotator (g=0) -> c=0, e=0, g=1: P=1, R=0, F0.5=0.
    res = m2.score(["我 喜 欢 苹 果 。", "他 们 去 了"], gold)
    assert (res.correct, res.proposed, res.gold) == (0, 0, 1) and res.f == 0.0
    # One wrong character edit in sentence 1 (欢 -> 吃, not the gold 喜欢 -> 爱), sentence 2 copied:
    # c=0, e=1, g=1 -> P = R = F = 0.
    res = m2.score(["我 喜 吃 苹 果 。", "他 们 去 了"], gold)
    assert (res.correct, res.proposed, res.gold) == (0, 1, 1) and res.f == 0.0


def test_bad_spans_are_errors_naming_the_file():
    with pytest.raises(ValueError, match="gold.01.*outside the sentence"):
        m2_block_to_chars("S 我 爱\nA 1 5|||S|||x|||REQUIRED|||-NONE-|||0", name="gold.01")


def test_bpe_on_character_level_text_is_the_identity(tmp_path):
    # subword-nmt cannot merge symbols of one-character tokens (and fails on the empty statistics): the learnt table
    # has no merges and applying it leaves the text as it is
    from fastdec.data.bpe import apply_bpe, learn_joint_bpe

    text = tmp_path / "train.src"
    text.write_text("我 喜 欢 苹 果\n他 们 去 了\n", encoding="utf-8")
    learn_joint_bpe([str(text)], str(tmp_path / "codes"), merges=100)
    apply_bpe(str(tmp_path / "codes"), str(text), str(tmp_path / "out"))
    assert (tmp_path / "out").read_text(encoding="utf-8") == text.read_text(encoding="utf-8")
