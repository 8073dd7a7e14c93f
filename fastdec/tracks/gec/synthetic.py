"""Synthetic GEC pretraining pairs from clean monolingual text, after Grundkiewicz et al. (2019), as Ge et al. (2022,
Sec. 4.1.1) pretrain their English model: the clean sentence is the target, a noised copy the source.

Word-level noise: per sentence a word error rate is drawn from N(error_rate, error_rate_std) (clipped to [0, 1]); that
share of the words (stochastically rounded) is changed, each by one operation drawn with the configured
probabilities -- substitute a word from its confusion set, delete it, insert a random vocabulary word after it, or
swap it with its right neighbour. Character-level noise: each word then gets, with probability ``char_rate``, one
character substituted, deleted, inserted or swapped with the next.

Confusion sets: Grundkiewicz et al. take a spellchecker's (Aspell's) suggestions. Here they are built offline from
the vocabulary of the clean text itself: the ``vocab_size`` most frequent words, two words being confusable when
deleting at most one character from each makes them equal (symmetric-delete distance 1: one insertion, deletion or
substitution, or an adjacent swap) -- orthographic neighbours that are real words, ranked by frequency, without
Aspell's phonetic ("sounds-like") suggestions.

Everything is deterministic for a (seed, shard) pair; shards are noised independently.

Ge et al. also cite Zhang et al. (2019) for their synthetic data (sequence-to-sequence augmentation for sentence
rewriting); that part is not implemented: the pairs here come from Grundkiewicz et al.'s noise only.
"""
from __future__ import annotations

import json
import math
import random
import string
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple

OPERATIONS = ("substitute", "delete", "insert", "swap")
LETTERS = string.ascii_lowercase


@dataclass(frozen=True)
class NoiseParams:
    error_rate: float = 0.15
    error_rate_std: float = 0.2
    substitute: float = 0.7
    delete: float = 0.1
    insert: float = 0.1
    swap: float = 0.1
    char_rate: float = 0.1
    seed: int = 1

    def __post_init__(self):
        for name in ("error_rate", "substitute", "delete", "insert", "swap", "char_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"gec.pretrain.noise.{name}: {value} is not a rate in [0, 1]")
        if self.error_rate_std < 0:
            raise ValueError(f"gec.pretrain.noise.error_rate_std: {self.error_rate_std} must be >= 0")
        total = sum(getattr(self, op) for op in OPERATIONS)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"gec.pretrain.noise: the operation probabilities substitute + delete + insert + swap "
                             f"sum to {total:g}; they must sum to 1")

    @classmethod
    def from_config(cls, noise: dict) -> "NoiseParams":
        return cls(**noise)

    def expected_word_rate(self) -> float:
        """Mean share of words chosen for an operation: the mean of N(error_rate, std) clipped to [0, 1]."""
        m, s = self.error_rate, self.error_rate_std
        if s == 0:
            return m
        phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))
        a, b = (0 - m) / s, (1 - m) / s
        # E[clip(X, 0, 1)] = E[X; 0<X<1] + P(X >= 1)
        return m * (cdf(b) - cdf(a)) + s * (phi(a) - phi(b)) + (1 - cdf(b))


# ---------------------------------------------------------------------------------------------- confusion sets
def deletes(word: str) -> set:
    return {word} | {word[:i] + word[i + 1:] for i in range(len(word))}


def build_confusion_sets(counts: Counter, vocab_size: int, max_candidates: int,
                         min_length: int = 2) -> Dict[str, List[str]]:
    """lower-cased word -> up to ``max_candidates`` other frequent words at symmetric-delete distance 1, most
    frequent first. Only alphabetic words of at least ``min_length`` characters take part (numbers and punctuation
    have none); case is folded (the noise keeps a capitalised word capitalised)."""
    folded = Counter()
    for w, c in counts.items():
        folded[w.lower()] += c
    vocab = [w for w, _ in sorted(folded.items(), key=lambda wc: (-wc[1], wc[0]))
             if w.isalpha() and len(w) >= min_length][:vocab_size]
    rank = {w: i for i, w in enumerate(vocab)}
    by_key: Dict[str, List[str]] = {}
    for w in vocab:
        for key in deletes(w):
            by_key.setdefault(key, []).append(w)
    sets = {}
    for w in vocab:
        near = {v for key in deletes(w) for v in by_key[key] if v != w}
        if near:
            sets[w] = sorted(near, key=rank.__getitem__)[:max_candidates]
    return sets


def save_confusion(path: str, confusion: Dict[str, List[str]], vocab: List[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"vocab": vocab, "confusion": confusion}, fh, ensure_ascii=False)


def load_confusion(path: str) -> Tuple[Dict[str, List[str]], List[str]]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not data.get("vocab"):
        raise ValueError(f"{path}: the confusion sets have no vocabulary (was the clean text empty?)")
    return data["confusion"], data["vocab"]


# ---------------------------------------------------------------------------------------------- noise
def _stochastic_round(x: float, rng: random.Random) -> int:
    n = math.floor(x)
    return n + (rng.random() < x - n)


def noise_chars(word: str, rng: random.Random) -> str:
    """One character operation: substitute, delete, insert or swap with the next (a 1-letter word is only
    substituted or extended)."""
    op = rng.randrange(4)
    i = rng.randrange(len(word))
    if len(word) == 1 and op in (1, 3):
        op = 2
    if op == 0:
        return word[:i] + rng.choice(LETTERS) + word[i + 1:]
    if op == 1:
        return word[:i] + word[i + 1:]
    if op == 2:
        return word[:i] + rng.choice(LETTERS) + word[i:]
    i = min(i, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


class Noiser:
    """Noises token lists; ``stats`` counts words seen and operations applied (each reported in the job's JSON)."""

    def __init__(self, params: NoiseParams, confusion: Dict[str, List[str]], vocab: Sequence[str], shard: int = 0):
        self.p = params
        self.confusion = confusion
        self.vocab = list(vocab)
        self.rng = random.Random(f"{params.seed}:{shard}")   # str seeds hash deterministically (sha512)
        self.weights = [params.substitute, params.delete, params.insert, params.swap]
        self.stats = Counter()

    def __call__(self, tokens: List[str]) -> List[str]:
        rng, n = self.rng, len(tokens)
        self.stats["sentences"] += 1
        self.stats["words"] += n
        if n == 0:
            return []
        rate = min(1.0, max(0.0, rng.gauss(self.p.error_rate, self.p.error_rate_std)))
        k = min(n, _stochastic_round(rate * n, rng))
        chosen = set(rng.sample(range(n), k))
        self.stats["chosen"] += k
        out: List[str] = []
        i = 0
        while i < n:
            word = tokens[i]
            if i not in chosen:
                out.append(word)
                i += 1
                continue
            op = rng.choices(OPERATIONS, self.weights)[0]
            if op == "substitute":
                candidates = self.confusion.get(word.lower())
                if candidates:
                    new = rng.choice(candidates)
                    out.append(new.capitalize() if word[:1].isupper() else new)
                    self.stats["substitute"] += 1
                else:
                    out.append(word)
                    self.stats["substitute_no_candidates"] += 1
            elif op == "delete":
                self.stats["delete"] += 1
            elif op == "insert":
                out += [word, rng.choice(self.vocab)]
                self.stats["insert"] += 1
            elif i + 1 < n:  # swap with the right neighbour, which is then consumed
                out += [tokens[i + 1], word]
                self.stats["swap"] += 1
                i += 1
            else:  # the last word swaps with its left neighbour
                if out:
                    out[-1], word = word, out[-1]
                out.append(word)
                self.stats["swap"] += 1
            i += 1
        if not out:  # a sentence never noises to nothing: fairseq would drop the pair
            out = [tokens[0]]
            self.stats["kept_nonempty"] += 1
        for j, word in enumerate(out):
            if rng.random() < self.p.char_rate:
                out[j] = noise_chars(word, rng)
                self.stats["char"] += 1
        return out


def noise_lines(lines: Iterable[str], noiser: Noiser, tokenize=None, max_words: int | None = None):
    """(noised source, clean target) of every line; blank lines and lines over ``max_words`` are skipped and
    counted in ``noiser.stats``."""
    for line in lines:
        text = tokenize(line) if tokenize else line
        tokens = text.split()
        if not tokens:
            noiser.stats["skipped_empty"] += 1
            continue
        if max_words and len(tokens) > max_words:
            noiser.stats["skipped_long"] += 1
            continue
        yield " ".join(noiser(tokens)), " ".join(tokens)
