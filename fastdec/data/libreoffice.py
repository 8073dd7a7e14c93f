"""English->German parallel corpus from the LibreOffice help (pure functions).

The LibreOffice help is shipped pre-rendered as HTML, one tree per language
(``/usr/share/libreoffice/help/<lang>/text/**/*.html`` in the Debian packages
``libreoffice-help-<lang>``).  Every translatable paragraph of the XHP sources
keeps its identifier in the rendered HTML (``<p id="par_id3146957" ...>``,
``<h2 id="hd_id3154243" ...>``) and the same identifier is used at the same
relative path in every language, so ``(relative path, id)`` is a sentence-
aligned key across languages -- no statistical alignment is needed.

Pipeline (each step is a pure function, :func:`build_corpus` chains them)::

    extract_paragraphs(html)  -> {id: text}       per file and language
    pair_paragraphs(en, de)   -> [(key, en, de)]  join on (path, id)
    split_pairs(pairs)        -> sentence pairs   only when both sides split alike
    filter_pairs(pairs)       -> kept pairs       untranslated / length / ratio / dedup
    split_corpus(pairs)       -> train/valid/test deterministic seeded shuffle

Extraction decisions (documented because they shape the corpus):

* Only elements whose ``id`` starts with ``par_`` or ``hd_`` are translation
  units (``par_id...`` paragraphs, ``hd_id...`` headings; both appear on
  ``<p>``, ``<h1>``..``<h6>``).  Elements without an id (e.g. some note
  texts) cannot be keyed and are skipped.  Other ids (``bm_``, ``lang_``,
  ``MediaType_``, ``FilterName_``, ...) are bookmarks or data tables.
* Platform/module variants: a paragraph may contain a switch
  (``<span class="switchinline">`` or ``<span class="switch">``) whose
  children are ``<span hidden="true" class="MAC">`` / ``class="CALC"`` ...
  variants plus one variant without a class whose id starts with
  ``default``.  The help viewer (help2.js) reveals the variant matching the
  user's system/module and otherwise the ``default`` one, so we keep exactly
  the ``default`` variant (what a Linux user sees) -- keeping all variants
  would produce "LibreOffice - Preferences Tools - Options" style garbage.  If a
  switch has no ``default`` child (about a quarter of them in 7.4, typically a
  whole paragraph shown only in one module, e.g. a Calc-only menu path) we keep
  its first variant: that is what the page shows in that module and dropping it
  would empty the paragraph.  Both languages get the same choice, so pairs stay
  parallel.  Paragraphs that
  sit *inside* a non-default variant of a block-level switch (e.g. a
  Windows-only tip) are still complete, keyed translation units and are kept.
* Code paragraphs (``class="code"``, ``bascode``, ``pycode``, ``<pre>``) are
  program text, not prose, and are dropped.
* Text: tags stripped, entities unescaped (html.parser), block-level tags and
  ``<br>`` become spaces, soft hyphens / zero-width characters removed,
  whitespace (incl. no-break space) collapsed to single spaces.
"""
from __future__ import annotations

import random
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Iterable, Mapping

__all__ = [
    "Node", "parse_html", "extract_paragraphs", "pair_paragraphs", "split_sentences",
    "split_pairs", "normalise_for_compare", "filter_pairs", "split_corpus", "build_corpus",
    "FILTER_DEFAULTS",
]

UNIT_ID = re.compile(r"^(par|hd)_")
VOID_TAGS = frozenset(
    "area base br col embed hr img input link meta param source track wbr".split())
BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4 h5 h6 "
    "header hr li main nav ol p pre section table tbody td tfoot th thead tr ul".split())
SKIP_TAGS = frozenset("script style noscript pre code".split())
CODE_CLASSES = frozenset({"code", "bascode", "pycode"})
SWITCH_CLASSES = frozenset({"switch", "switchinline"})
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)

FILTER_DEFAULTS = {"min_words": 3, "max_words": 80, "min_ratio": 0.5, "max_ratio": 2.0}


# --------------------------------------------------------------------------- html -> tree

@dataclass
class Node:
    tag: str
    attrs: dict = field(default_factory=dict)
    children: list = field(default_factory=list)  # Node | str

    @property
    def classes(self) -> set:
        return set((self.attrs.get("class") or "").split())


class _TreeBuilder(HTMLParser):
    """Minimal forgiving DOM builder: void tags never open, stray end tags are ignored,
    an end tag closes everything opened after its matching start tag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID_TAGS:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: (v or "") for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse_html(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


# --------------------------------------------------------------------------- tree -> text

def _is_default_variant(node: Node) -> bool:
    return isinstance(node, Node) and node.attrs.get("id", "").startswith("default")


def _switch_children(node: Node) -> list:
    """The children of a switch span that are rendered by default (see module docstring)."""
    variants = [c for c in node.children if isinstance(c, Node)]
    default = [c for c in variants if _is_default_variant(c)]
    if default:
        return default[:1]
    return variants[:1]


def _text(node, out: list) -> None:
    if isinstance(node, str):
        out.append(node)
        return
    if node.tag in SKIP_TAGS or node.classes & CODE_CLASSES:
        return
    block = node.tag in BLOCK_TAGS
    if block:
        out.append(" ")
    children = _switch_children(node) if node.classes & SWITCH_CLASSES else node.children
    for child in children:
        _text(child, out)
    if block:
        out.append(" ")


def clean_text(text: str) -> str:
    """Drop invisible characters, collapse all (unicode) whitespace to single spaces."""
    return " ".join(text.translate(_INVISIBLE).split())


def node_text(node: Node) -> str:
    out: list = []
    _text(node, out)
    return clean_text("".join(out))


def extract_paragraphs(html: str, stats: Counter | None = None) -> dict[str, str]:
    """``{unit id: text}`` for every keyed paragraph/heading of one help page, in document order.

    Ids are *not* unique per page: embedded sections from other XHP files bring their own ids,
    and some source files reuse ids (e.g. ``sbasic/shared/03/lib_ScriptForge.html`` embeds many
    service descriptions sharing ``hd_id731582733781114``).  The n-th (n >= 2) occurrence of an
    id is therefore keyed ``"<id>#<n>"``; both languages render the same document structure, so
    occurrences line up.  Repeats with identical text are removed later by de-duplication.
    Units nested inside another unit are extracted on their own as well (and are part of the
    outer unit's text).
    """
    stats = stats if stats is not None else Counter()
    units: dict[str, str] = {}
    seen: Counter = Counter()

    def walk(node: Node) -> None:
        for child in node.children:
            if not isinstance(child, Node) or child.tag in SKIP_TAGS:
                continue
            uid = child.attrs.get("id", "")
            if UNIT_ID.match(uid):
                if child.classes & CODE_CLASSES:
                    stats["units_code_skipped"] += 1
                else:
                    seen[uid] += 1
                    if seen[uid] > 1:
                        stats["units_repeated_id"] += 1
                        uid = f"{uid}#{seen[uid]}"
                    units[uid] = node_text(child)
            walk(child)

    walk(parse_html(html))
    return units


# --------------------------------------------------------------------------- pairing

def pair_paragraphs(src: Mapping[tuple, str], tgt: Mapping[tuple, str],
                    stats: Counter | None = None) -> list[tuple[tuple, str, str]]:
    """Join two ``{(path, id): text}`` maps on their keys (sorted, deterministic)."""
    stats = stats if stats is not None else Counter()
    for name in ("unpaired_src_only", "unpaired_tgt_only", "empty"):
        stats.setdefault(name, 0)
    pairs = []
    for key in sorted(src.keys() | tgt.keys()):
        s, t = src.get(key), tgt.get(key)
        if s is None:
            stats["unpaired_tgt_only"] += 1
        elif t is None:
            stats["unpaired_src_only"] += 1
        elif not s or not t:
            stats["empty"] += 1
        else:
            pairs.append((key, s, t))
    stats["paragraph_pairs"] += len(pairs)
    return pairs


# --------------------------------------------------------------------------- sentence splitting

# Tokens ending in "." that do not end a sentence (compared lower-cased, leading brackets stripped).
# Deliberately absent: words that are also ordinary English/German words at a sentence end in this
# corpus ("tab.", "no.", "min.", "max.", "sat.", ...); "etc." and "usw." mostly end sentences here.
# Single letters ("z. B.", initials) and numbers are handled by rule in _blocks_split.
ABBREVIATIONS = frozenset("""
e.g. i.e. vs. approx. appr. incl. excl. resp. cf. ca. fig. figs. mr. mrs. ms. dr. prof. jr. sr.
inc. ltd. corp. ver. vol. pp. esp. dept. jan. feb. aug. sept. oct. nov.
z.b. d.h. u.a. o.ä. u.u. z.t. u.ä. bzw. ggf. evtl. inkl. zzgl. bspw. vgl. nr. abb. kap. sog.
allg. einschl. hr. ff. gem. lt. mind. ggü. usf.
""".split())
_BOUNDARY = re.compile(r"([.!?…]+)([\"'”’)\]»«]*)\s+(?=[\"'„“‚‘(\[«»]?[A-ZÄÖÜ])")


def _blocks_split(text: str, punct_start: int, punct: str) -> bool:
    if punct != ".":
        return "." in punct or "…" in punct  # "..." / "…" (menu entries like "Options…")
    token = text[:punct_start + 1].rsplit(None, 1)[-1].lstrip("\"'„“‚‘([«»").lower()
    if token in ABBREVIATIONS:
        return True
    stem = token[:-1]
    if len(stem) == 1 and stem.isalpha():  # initials, "z. B.", list markers "a."
        return True
    if stem.isdigit():  # German ordinals "am 1. Januar", numbered steps
        return True
    if "." in stem and all(len(p) <= 2 for p in stem.split(".")):  # "z.B.", "u.a.", "1.2."
        return True
    return False


def split_sentences(text: str) -> list[str]:
    """Rule-based splitter: after . ! ? (plus closing quotes/brackets) followed by whitespace and
    an upper-case letter, unless the dot ends an abbreviation, an initial or a number."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if _blocks_split(text, m.start(1), m.group(1)):
            continue
        piece = text[start:m.end(2)].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def split_pairs(pairs: Iterable[tuple], stats: Counter | None = None) -> list[tuple[tuple, str, str]]:
    """Paragraph pairs -> sentence pairs.  A paragraph is split only when both sides yield the
    same number of sentences (then the i-th sentences are paired); otherwise it stays whole.
    Keys become ``(path, id, sentence index)``."""
    stats = stats if stats is not None else Counter()
    for name in ("paragraphs_split", "paragraphs_kept_whole", "paragraphs_count_mismatch"):
        stats.setdefault(name, 0)
    out = []
    for key, s, t in pairs:
        ss, ts = split_sentences(s), split_sentences(t)
        if len(ss) > 1 and len(ss) == len(ts):
            stats["paragraphs_split"] += 1
            out.extend(((*key, i), a, b) for i, (a, b) in enumerate(zip(ss, ts)))
        else:
            stats["paragraphs_kept_whole" if len(ss) == len(ts) else "paragraphs_count_mismatch"] += 1
            out.append(((*key, 0), s, t))
    stats["sentence_pairs"] += len(out)
    return out


# --------------------------------------------------------------------------- filters

def normalise_for_compare(text: str) -> str:
    """NFKC, case-folded, letters and digits only: used to detect untranslated pairs."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def filter_pairs(pairs: Iterable[tuple], stats: Counter | None = None, *, min_words: int = 3,
                 max_words: int = 80, min_ratio: float = 0.5,
                 max_ratio: float = 2.0) -> list[tuple[tuple, str, str]]:
    """Apply, in this order: untranslated (equal after :func:`normalise_for_compare`),
    too short (< min_words on either side), too long (> max_words on either side),
    length ratio (src words / tgt words outside [min_ratio, max_ratio]), duplicate source
    (first occurrence in key order is kept).  Each drop is counted in ``stats``."""
    stats = stats if stats is not None else Counter()
    for name in ("untranslated", "too_short", "too_long", "length_ratio", "duplicate_source"):
        stats.setdefault(f"dropped_{name}", 0)
    seen: set[str] = set()
    kept = []
    for key, s, t in pairs:
        ns, nt = len(s.split()), len(t.split())
        if normalise_for_compare(s) == normalise_for_compare(t):
            stats["dropped_untranslated"] += 1
        elif ns < min_words or nt < min_words:
            stats["dropped_too_short"] += 1
        elif ns > max_words or nt > max_words:
            stats["dropped_too_long"] += 1
        elif not (min_ratio <= ns / nt <= max_ratio):
            stats["dropped_length_ratio"] += 1
        elif s in seen:
            stats["dropped_duplicate_source"] += 1
        else:
            seen.add(s)
            kept.append((key, s, t))
    stats["kept"] += len(kept)
    return kept


# --------------------------------------------------------------------------- split

def split_corpus(pairs: list, *, valid: int = 1000, test: int = 1000,
                 seed: int = 1234) -> dict[str, list]:
    """Deterministic split: sort by key, shuffle with ``random.Random(seed)``, then the first
    ``valid`` items are valid, the next ``test`` are test and the rest is train."""
    if len(pairs) < valid + test:
        raise ValueError(f"only {len(pairs)} pairs, need more than valid+test={valid + test}")
    items = sorted(pairs, key=lambda p: p[0])
    random.Random(seed).shuffle(items)
    return {"valid": items[:valid], "test": items[valid:valid + test], "train": items[valid + test:]}


# --------------------------------------------------------------------------- all together

def build_corpus(src_pages: Mapping[str, str], tgt_pages: Mapping[str, str], *, valid: int = 1000,
                 test: int = 1000, seed: int = 1234, filters: Mapping | None = None
                 ) -> tuple[dict[str, list], dict[str, int]]:
    """``{relative path: html}`` per language -> (splits, counts).

    ``splits`` maps train/valid/test to lists of ``(key, src, tgt)``; ``counts`` holds what
    every stage produced or dropped (JSON-serialisable ints)."""
    stats: Counter = Counter()
    src_units, tgt_units = {}, {}
    for pages, units, lang in ((src_pages, src_units, "src"), (tgt_pages, tgt_units, "tgt")):
        lang_stats: Counter = Counter(units_code_skipped=0, units_repeated_id=0)
        for path in sorted(pages):
            for uid, text in extract_paragraphs(pages[path], lang_stats).items():
                units[(path, uid)] = text
        stats[f"pages_{lang}"] = len(pages)
        stats[f"units_{lang}"] = len(units)
        for k, v in lang_stats.items():
            stats[f"{k}_{lang}"] = v
    paragraph_pairs = pair_paragraphs(src_units, tgt_units, stats)
    sentence_pairs = split_pairs(paragraph_pairs, stats)
    kept = filter_pairs(sentence_pairs, stats, **{**FILTER_DEFAULTS, **(filters or {})})
    splits = split_corpus(kept, valid=valid, test=test, seed=seed)
    for name, items in splits.items():
        stats[f"split_{name}"] = len(items)
    return splits, {k: int(v) for k, v in sorted(stats.items())}
