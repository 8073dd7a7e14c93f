"""MaxMatch (M2) scorer for grammatical error correction (Dahlmeier & Ng, 2012).

An independent implementation of what the CoNLL-2014 scorer (nusnlp/m2scorer,
``scripts/levenshtein.py::batch_multi_pre_rec_f1``) computes, written to give the same numbers:

1. Tokens are ``str.split()`` of the M2 ``S`` line and of the (stripped) hypothesis line.
2. Two Levenshtein matrices are filled (ins/del/sub costs 1/1/1 and 1/1/2); every optimal
   backpointer of each is kept, the two lattices of optimal alignments are merged.  The edge list
   keeps the official multiplicity: an edge present in both lattices is listed twice (this matters
   for the weights, see 4.).
3. Transitive arcs: vertices are visited in sorted order as the middle vertex k of a
   Floyd-Warshall-like pass; an arc i->j is added (or its edit replaced) when the path i->k->j is
   shorter (in lattice steps) than the current i->j and the merged edit contains at most
   ``max_unchanged_words`` unchanged tokens.  Afterwards transitive noop arcs are removed, with the
   official scorer's remove-while-iterating behaviour (the element after a removed one is skipped,
   so some multi-step noop arcs survive; they never change which edits are output, but they count
   in ``len(E)``, the magnitude of the gold-edge weight).
4. Per annotator, edges whose edit equals a gold edit (same token span, same original text,
   correction among the gold alternatives) get weight ``-len(E)``; other non-noop edges get
   ``+0.001`` (once per listing in the edge list).  Insertions at one source position are matched
   with the official two-pointer sweep (left end, right end, alternating), so one gold insertion
   marks at most one parallel edge.
5. Bellman-Ford from (0, 0) in the official edge order; the first strict improvement wins ties.
   (A pass without any change ends the loop early; later passes could not change anything.)
6. The path's non-noop edits are the system edits; they are matched left to right against the
   annotator's gold edits in file order (a gold edit is consumed by a match; as in the official code
   one system edit can match several identical gold edits).
7. Per sentence, the annotator whose counts maximise F_beta of the *running corpus totals plus
   this sentence* is chosen; ties go to more correct edits, then to the smaller
   ``proposed + beta^2 * gold``, then to the annotator seen first.  Counts are summed over the corpus;
   P = c/e (1.0 if e = 0), R = c/g (1.0 if g = 0), F = (1+b^2)PR/(b^2 P + R) (0.0 if undefined).

Differences from the official script (input handling only; scores are meant to be identical):
* M2 blocks with more than one ``S`` line are rejected (the official scorer accepts them but does
  not shift edit offsets, which is never what one wants).
* Edit offsets outside the sentence are an error (the official scorer silently drops such edits).
* Where the official code would crash (a duplicated transitive noop arc whose edit was already
  deleted: ``KeyError``), the dangling edge is dropped instead.
* Annotators are tried in order of first appearance in the block (Python 3 dict order, the order of
  the current official code; the Python 2 release iterated small integer ids in ascending order,
  which is the same thing for files that list annotator 0 first).
* Blank-looking lines (whitespace only) also separate blocks; files are read as UTF-8 text.
* Optional guard ``max_transitive_arcs`` (off by default) for outputs unrelated to their source,
  see :func:`score`.

Checked (during development, not in the test suite) against a transcription of the official Python
code: ~17,000 random sentences, each under 6 settings (random sources, hypotheses and gold sets with
alternatives, overlapping and noop annotators; max_unchanged_words 0/1/2; ignore_whitespace_casing
on/off), and the UA-GEC test set (source, both references, a noisy system output): identical P/R/F,
counts, chosen annotators and system edit sequences.  Performance: the official scorer's O(V^3) dict
loops are replaced by adjacency lists over integer vertex ids, visited in the same order (about 10x
faster on UA-GEC test).

Case-sensitive by default; ``ignore_whitespace_casing`` drops system edits that only change case or
spacing, as the official ``--ignore_whitespace_casing`` does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

__all__ = [
    "GoldEdit",
    "M2Sentence",
    "SentenceStats",
    "M2Score",
    "M2FormatError",
    "parse_m2",
    "read_m2",
    "read_hypotheses",
    "system_edits",
    "extract_edits",
    "format_m2_block",
    "score",
    "f_beta",
]

INS, DEL, SUB, NOOP = "ins", "del", "sub", "noop"
EPSILON = 0.001
INF = float("inf")

# A lattice edit: (kind, start, end, original, correction, n_unchanged_words); start/end are
# source token offsets.
Edit = tuple
# A system edit as output: (start, end, original, correction).
SysEdit = tuple


class M2FormatError(ValueError):
    """Malformed M2 input or hypothesis/M2 mismatch."""


@dataclass(frozen=True)
class GoldEdit:
    start: int
    end: int
    original: str  # the source tokens start:end joined by one space (recomputed, as the official scorer does)
    corrections: tuple[str, ...]  # alternatives ("a||b"); "-NONE-" is the empty correction
    etype: str = ""


@dataclass
class M2Sentence:
    source: str
    annotators: dict[int, list[GoldEdit]]  # in order of first appearance; a noop-only annotator maps to []
    line: int = 0  # 1-based line number of the S line

    @property
    def tokens(self) -> list[str]:
        return self.source.split()


@dataclass
class SentenceStats:
    index: int
    annotator: int  # the chosen annotator
    correct: int
    proposed: int
    gold: int
    system_edits: list[SysEdit] = field(default_factory=list)  # left to right, for the chosen annotator
    correct_edits: list[SysEdit] = field(default_factory=list)
    approximate: bool = False  # the lattice hit max_transitive_arcs (see score())


@dataclass
class M2Score:
    precision: float
    recall: float
    f: float
    beta: float
    correct: int
    proposed: int
    gold: int
    sentences: list[SentenceStats] = field(default_factory=list)

    @property
    def approximate_sentences(self) -> int:
        return sum(s.approximate for s in self.sentences)

    @property
    def tp(self) -> int:
        return self.correct

    @property
    def fp(self) -> int:
        return self.proposed - self.correct

    @property
    def fn(self) -> int:
        return self.gold - self.correct

    def as_dict(self, per_sentence: bool = False) -> dict:
        d = {
            "precision": self.precision,
            "recall": self.recall,
            f"f{self.beta:g}": self.f,
            "beta": self.beta,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "proposed": self.proposed,
            "gold": self.gold,
            "sentences": len(self.sentences),
            "approximate_sentences": self.approximate_sentences,
        }
        if per_sentence:
            d["per_sentence"] = [
                {
                    "index": s.index,
                    "annotator": s.annotator,
                    "correct": s.correct,
                    "proposed": s.proposed,
                    "gold": s.gold,
                    "approximate": s.approximate,
                    "system_edits": [list(e) for e in s.system_edits],
                }
                for s in self.sentences
            ]
        return d


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def parse_m2(text: str, name: str = "<m2>") -> list[M2Sentence]:
    """Parse M2 text: blocks separated by blank lines, one ``S`` line then ``A`` lines."""
    sentences: list[M2Sentence] = []
    block: list[tuple[int, str]] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines + [""], start=1):
        if line.strip() == "":
            if block:
                sentences.append(_parse_block(block, name))
                block = []
        else:
            block.append((lineno, line))
    return sentences


def _parse_block(block: list[tuple[int, str]], name: str) -> M2Sentence:
    lineno, first = block[0]
    if not (first.startswith("S ") or first == "S"):
        raise M2FormatError(f"{name}:{lineno}: an M2 block must start with an 'S' line, got {first[:40]!r}")
    source = first[2:].strip()
    ntok = len(source.split())
    tokens = source.split()
    annotators: dict[int, list[GoldEdit]] = {}
    for lineno, line in block[1:]:
        if line.startswith("S ") or line == "S":
            raise M2FormatError(f"{name}:{lineno}: more than one 'S' line in an M2 block is not supported")
        if line.startswith("I "):  # ignored, as by the official scorer
            continue
        if not line.startswith("A "):
            raise M2FormatError(f"{name}:{lineno}: expected an 'A' line, got {line[:40]!r}")
        fields = line[2:].split("|||")
        if len(fields) < 6:
            raise M2FormatError(
                f"{name}:{lineno}: an 'A' line needs 6 '|||'-separated fields "
                "(span|||type|||correction|||REQUIRED|||comment|||annotator), got " + str(len(fields))
            )
        try:
            start_s, end_s = fields[0].split()
            start, end = int(start_s), int(end_s)
            annotator = int(fields[5])
        except ValueError:
            raise M2FormatError(f"{name}:{lineno}: bad span or annotator id in {line[:60]!r}") from None
        etype = fields[1]
        annotators.setdefault(annotator, [])
        if etype == "noop" or (start == -1 and end == -1):
            continue
        if not (0 <= start <= end <= ntok):
            raise M2FormatError(
                f"{name}:{lineno}: edit span {start} {end} is outside the sentence ({ntok} tokens)"
            )
        corrections = tuple("" if c == "-NONE-" else c.strip() for c in fields[2].split("||"))
        annotators[annotator].append(
            GoldEdit(start, end, " ".join(tokens[start:end]), corrections, etype)
        )
    return M2Sentence(source=source, annotators=annotators, line=block[0][0])


def read_m2(path: str | Path) -> list[M2Sentence]:
    path = Path(path)
    with open(path, encoding="utf-8") as f:
        return parse_m2(f.read(), name=str(path))


def read_hypotheses(path: str | Path) -> list[str]:
    """One hypothesis per line (stripped, as the official scorer does); a trailing newline ends the last line."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f.readlines()]


# --------------------------------------------------------------------------------------------
# The edit lattice
# --------------------------------------------------------------------------------------------


class _LatticeTooLarge(Exception):
    pass


class _Lattice:
    """Merged lattice of optimal alignments plus transitive arcs, in the official edge order.

    Vertices (source_pos, hyp_pos) are numbered in sorted order (0 = (0, 0), nv-1 = (n, m)); an edge
    u->v is the integer key ``u * nv + v``, so sorting keys sorts edges as the official code does.
    """

    __slots__ = ("nv", "edges", "dist", "edits", "approximate", "_spans", "_ab")

    def __init__(self, source: Sequence[str], hyp: Sequence[str], max_unchanged_words: int,
                 max_transitive_arcs: int | None = None):
        g1 = _optimal_alignment_graph(source, hyp, 1)
        g2 = _optimal_alignment_graph(source, hyp, 2)
        self.approximate = False
        self._spans = None
        self._ab = None
        try:
            self._build((g1, g2), max_unchanged_words, max_transitive_arcs)
        except _LatticeTooLarge:
            # Guard against pathological lattices (output unrelated to the source): fall back to the
            # narrower sub-cost-1 lattice, and to no transitive arcs if even that is too large.
            self.approximate = True
            try:
                self._build((g1,), max_unchanged_words, max_transitive_arcs)
            except _LatticeTooLarge:
                self._build((g1,), -1, None)

    def _build(self, graphs, max_unchanged: int, arc_limit: int | None) -> None:
        vertices: set = set()
        for g_vertices, _ in graphs:
            vertices |= g_vertices
        order = sorted(vertices)
        nv = len(order)
        vid = {v: i for i, v in enumerate(order)}
        edges: list = []
        edits: dict = {}
        for _, g_edits in graphs:
            for (u, v), e in g_edits.items():
                key = vid[u] * nv + vid[v]
                edges.append(key)  # an edge in both lattices is listed twice, as officially
                edits[key] = e
        edges.sort()
        dist = dict.fromkeys(edits, 1)

        succ = [set() for _ in range(nv)]
        pred = [set() for _ in range(nv)]
        for key in edits:
            a, b = divmod(key, nv)
            succ[a].add(b)
            pred[b].add(a)
        replaced: set = set()  # arcs appended more than once (their edit was improved)
        created = 0
        for k in range(nv):  # sorted vertex order: a topological order of the DAG
            pk, sk = pred[k], succ[k]
            if not pk or not sk:
                continue
            kb = k * nv
            outs = [(j, dist[kb + j], edits[kb + j]) for j in sorted(sk)]
            for i in sorted(pk):
                ib = i * nv
                e_ik = edits[ib + k]
                d_ik = dist[ib + k]
                for j, d_kj, e_kj in outs:
                    d = d_ik + d_kj
                    key = ib + j
                    old = dist.get(key, INF)
                    if d < old:
                        e_ij = _merge_edits(e_ik, e_kj)
                        if e_ij[5] <= max_unchanged:
                            if old != INF:
                                replaced.add(key)
                            edges.append(key)
                            dist[key] = d
                            edits[key] = e_ij
                            succ[i].add(j)
                            pred[j].add(i)
                            created += 1
                            if arc_limit is not None and created > arc_limit:
                                raise _LatticeTooLarge
        # Remove multi-step noop arcs, reproducing the official "list.remove while iterating" walk:
        # after a removal the next element is skipped (so some such arcs stay; harmless).
        idx = 0
        removed_replaced = False
        while idx < len(edges):
            key = edges[idx]
            e = edits.get(key)
            if e is not None and e[0] == NOOP and dist[key] > 1:
                edges.remove(key)  # first occurrence, as list.remove does
                dist[key] = INF
                del edits[key]
                removed_replaced = removed_replaced or key in replaced
            idx += 1
        if removed_replaced:  # a copy without an edit is left: the official scorer raises KeyError
            edges = [key for key in edges if key in edits]
        self.nv, self.edges, self.dist, self.edits = nv, edges, dist, edits

    def spans(self) -> dict:
        """(start, end) source span -> sorted edge keys with that edit span (with multiplicity)."""
        if self._spans is None:
            by_span: dict = {}
            edits = self.edits
            for key in self.edges:
                e = edits[key]
                by_span.setdefault((e[1], e[2]), []).append(key)
            for lst in by_span.values():
                lst.sort()
            self._spans = by_span
        return self._spans

    def endpoints(self):
        if self._ab is None:
            nv = self.nv
            self._ab = ([k // nv for k in self.edges], [k % nv for k in self.edges])
        return self._ab


def _optimal_alignment_graph(source: Sequence[str], hyp: Sequence[str], sub_cost: int):
    """Vertices and edges (edge -> edit) on the optimal Levenshtein alignments of source and hyp."""
    n, m = len(source), len(hyp)
    # cost[i][j]: distance between source[:i] and hyp[:j]
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        cost[i][0] = i
    for j in range(1, m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        row, prev = cost[i], cost[i - 1]
        s_tok = source[i - 1]
        for j in range(1, m + 1):
            diag = prev[j - 1] + (0 if s_tok == hyp[j - 1] else sub_cost)
            up = prev[j] + 1
            left = row[j - 1] + 1
            row[j] = min(diag, up, left)

    def back(v):
        """Optimal predecessors of v with the edit on the edge."""
        i, j = v
        c = cost[i][j]
        out = []
        if i > 0 and j > 0:
            same = source[i - 1] == hyp[j - 1]
            if cost[i - 1][j - 1] + (0 if same else sub_cost) == c:
                if same:
                    out.append(((i - 1, j - 1), (NOOP, i - 1, i, source[i - 1], hyp[j - 1], 1)))
                else:
                    out.append(((i - 1, j - 1), (SUB, i - 1, i, source[i - 1], hyp[j - 1], 0)))
        if i > 0 and cost[i - 1][j] + 1 == c:
            out.append(((i - 1, j), (DEL, i - 1, i, source[i - 1], "", 0)))
        if j > 0 and cost[i][j - 1] + 1 == c:
            out.append(((i, j - 1), (INS, i, i, "", hyp[j - 1], 0)))
        return out

    start = (n, m)
    vertices = {start}
    edits: dict = {}
    stack = [start]
    while stack:
        v = stack.pop()
        for u, e in back(v):
            edits[(u, v)] = e
            if u not in vertices:
                vertices.add(u)
                stack.append(u)
    return vertices, edits


def _merge_edits(e1: Edit, e2: Edit) -> Edit:
    """Concatenate two adjacent lattice edits (the official merge table, written as a rule)."""
    k1, k2 = e1[0], e2[0]
    if k1 == k2 and k1 in (NOOP, INS, DEL):
        kind = k1
    else:
        kind = SUB
    orig = e1[3] + " " + e2[3] if e1[3] and e2[3] else (e1[3] or e2[3])
    corr = e1[4] + " " + e2[4] if e1[4] and e2[4] else (e1[4] or e2[4])
    return (kind, e1[1], e2[2], orig, corr, e1[5] + e2[5])


def _edit_matches(e: Edit, g: GoldEdit) -> bool:
    return e[1] == g.start and e[2] == g.end and e[3] == g.original and e[4] in g.corrections


def _weights(lat: _Lattice, gold: Sequence[GoldEdit]) -> dict:
    """Edge weights for one annotator: gold edges -len(E), other non-noop edges +EPSILON."""
    edits, nv = lat.edits, lat.nv
    w = dict(lat.dist)
    big = -len(lat.edges)
    gold_by_span: dict = {}
    for g in gold:
        gold_by_span.setdefault((g.start, g.end), []).append(g)
    by_span = lat.spans()
    for span in sorted(by_span):
        cands = by_span[span]
        golds = gold_by_span.get(span, ())
        if span[0] != span[1] or not golds:
            # substitutions/deletions: any matching gold marks the edge (and insertions without gold:
            # the sweep below then adds EPSILON to every edge once per listing, the same thing)
            for key in cands:
                e = edits[key]
                if golds and any(_edit_matches(e, g) for g in golds):
                    w[key] = big
                elif e[0] != NOOP:
                    w[key] += EPSILON
            continue
        # Insertions at one source position: the official two-pointer sweep.
        lo, hi = 0, len(cands) - 1
        cur = lo
        glo, ghi = 0, len(golds) - 1
        while lo <= hi:
            key = cands[cur]
            e = edits[key]
            from_left = cur == lo
            order = range(glo, ghi + 1) if from_left else range(ghi, glo - 1, -1)
            hit = next((gi for gi in order if _edit_matches(e, golds[gi])), None)
            if hit is None:
                if e[0] != NOOP:
                    w[key] += EPSILON
                if from_left:
                    lo += 1
                    cur = hi
                else:
                    hi -= 1
                    cur = lo
                continue
            w[key] = big
            if from_left:
                glo = hit + 1
                lo += 1
                while lo < len(cands) and cands[lo] // nv != cands[cur] % nv:
                    w[cands[lo]] += EPSILON
                    lo += 1
                cur = lo
            else:
                ghi = hit - 1
                hi -= 1
                while hi >= 0 and cands[hi] % nv != cands[cur] // nv:
                    w[cands[hi]] += EPSILON
                    hi -= 1
                cur = hi
    return w


def _best_path_edits(lat: _Lattice, w: dict) -> list[SysEdit]:
    """Bellman-Ford in the official edge order; returns the path's non-noop edits left to right."""
    nv = lat.nv
    src, dst = lat.endpoints()
    weights = [w[k] for k in lat.edges]
    best = [INF] * nv
    best[0] = 0
    back = [-1] * nv
    for _ in range(nv - 1):
        changed = False
        for a, b, wt in zip(src, dst, weights):
            d = best[a] + wt
            if d < best[b]:
                best[b] = d
                back[b] = a
                changed = True
        if not changed:
            break
    v = nv - 1
    out: list[SysEdit] = []
    while back[v] >= 0:
        u = back[v]
        e = lat.edits[u * nv + v]
        if e[0] != NOOP:
            out.append((e[1], e[2], e[3], e[4]))
        v = u
    out.reverse()
    return out


def _same_ignoring_whitespace_casing(a: str, b: str) -> bool:
    return a.replace(" ", "").lower() == b.replace(" ", "").lower()


def _match(seq: Sequence[SysEdit], gold: Sequence[GoldEdit]) -> list[SysEdit]:
    """Official matchSeq: left to right, each gold edit consumed once, gold file order kept."""
    matched = []
    nxt = 0
    for e in seq:
        for gi in range(nxt, len(gold)):
            g = gold[gi]
            if e[0] == g.start and e[1] == g.end and e[2] == g.original and e[3] in g.corrections:
                matched.append(e)
                nxt = gi + 1  # (no break: the official loop goes on over the remaining gold edits)
    return matched


def system_edits(
    source: str | Sequence[str],
    hypothesis: str | Sequence[str],
    gold: Sequence[GoldEdit] = (),
    max_unchanged_words: int = 2,
    max_transitive_arcs: int | None = None,
) -> list[SysEdit]:
    """The system edit sequence the scorer extracts for one gold edit set (left to right)."""
    src = source.split() if isinstance(source, str) else list(source)
    hyp = hypothesis.split() if isinstance(hypothesis, str) else list(hypothesis)
    lat = _Lattice(src, hyp, max_unchanged_words, max_transitive_arcs)
    return _best_path_edits(lat, _weights(lat, gold))


def extract_edits(
    source: str | Sequence[str], target: str | Sequence[str], max_unchanged_words: int = 0
) -> list[SysEdit]:
    """Token edits turning source into target, as the official ``edit_creator.py`` builds them.

    Shortest path with no gold edits (fewest lattice steps, then fewest edits), adjacent changed
    tokens merged into one edit (``max_unchanged_words=0``), identity edits dropped.  Scoring the
    target itself against an M2 file made from these edits gives P = R = 1.
    """
    return [e for e in system_edits(source, target, (), max_unchanged_words) if e[2] != e[3]]


def format_m2_block(
    source_tokens: Sequence[str],
    annotator_edits: Sequence[Sequence[SysEdit]],
    etype: str = "UNK",
) -> str:
    """One M2 block (no trailing blank line): ``S`` line, then each annotator's edits or a noop line."""
    lines = ["S " + " ".join(source_tokens)]
    for ann, edits in enumerate(annotator_edits):
        if not edits:
            lines.append(f"A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||{ann}")
        for start, end, _orig, corr in edits:
            lines.append(f"A {start} {end}|||{etype}|||{corr if corr else '-NONE-'}|||REQUIRED|||-NONE-|||{ann}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def f_beta(correct: float, proposed: float, gold: float, beta: float) -> float:
    """The official per-sentence-choice F: (1+b^2)c/(b^2 g + e); 1.0 if undefined and c = 0."""
    try:
        return (1.0 + beta * beta) * correct / (beta * beta * gold + proposed)
    except ZeroDivisionError:
        return 1.0 if correct == 0 else 0.0


def score(
    hypotheses: Sequence[str],
    sentences: Sequence[M2Sentence],
    beta: float = 0.5,
    max_unchanged_words: int = 2,
    ignore_whitespace_casing: bool = False,
    names: tuple[str, str] = ("hypotheses", "M2 file"),
    max_transitive_arcs: int | None = None,
) -> M2Score:
    """Corpus-level M2 score of ``hypotheses`` (one string per sentence) against ``sentences``.

    ``max_transitive_arcs`` (default None: exact, like the official scorer) guards against outputs
    unrelated to their source, whose lattices grow like (length)^4 and take minutes per sentence
    (the official scorer effectively hangs on them): when a sentence's lattice would get more
    transitive arcs than this, it is scored on the sub-cost-1 lattice only (and without transitive
    arcs if that is still too large), and the sentence is flagged ``approximate``.
    """
    if len(hypotheses) != len(sentences):
        raise M2FormatError(
            f"{names[0]} has {len(hypotheses)} lines but {names[1]} has {len(sentences)} sentences"
        )
    sqbeta = beta * beta
    tot_c = tot_e = tot_g = 0
    stats: list[SentenceStats] = []
    for idx, (hyp, sent) in enumerate(zip(hypotheses, sentences)):
        lat = _Lattice(sent.source.split(), hyp.split(), max_unchanged_words, max_transitive_arcs)
        golds = sent.annotators or {0: []}
        chosen = None
        f_max = -1.0
        max_c = -1
        min_e = min_g = INF
        for ann, gold in golds.items():
            seq = _best_path_edits(lat, _weights(lat, gold))
            if ignore_whitespace_casing:
                seq = [e for e in seq if not _same_ignoring_whitespace_casing(e[2], e[3])]
            matched = _match(seq, gold)
            c, e, g = tot_c + len(matched), tot_e + len(seq), tot_g + len(gold)
            f = f_beta(c, e, g, beta)
            if (
                f_max < f
                or (f_max == f and max_c < c)
                or (f_max == f and max_c == c and min_e + sqbeta * min_g > e + sqbeta * g)
            ):
                f_max, max_c, min_e, min_g = f, c, e, g
                chosen = SentenceStats(idx, ann, len(matched), len(seq), len(gold), seq, matched,
                                       lat.approximate)
        assert chosen is not None
        stats.append(chosen)
        tot_c += chosen.correct
        tot_e += chosen.proposed
        tot_g += chosen.gold
    p = tot_c / tot_e if tot_e else 1.0
    r = tot_c / tot_g if tot_g else 1.0
    f = (1.0 + sqbeta) * p * r / (sqbeta * p + r) if (sqbeta * p + r) else 0.0
    return M2Score(p, r, f, beta, tot_c, tot_e, tot_g, stats)

