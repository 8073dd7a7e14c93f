"""``fastdec gec-data``: GEC track data steps (logic in fastdec/tracks/gec/data.py).

  fastdec gec-data select --full DIR --out DIR [--subset-train N] [--subset-valid N] [--subset-test N] [--max-words N]
                     [--tokenisation word|char]
      full/ (prepared corpus) -> raw/: subsets, empty/over-long training pairs dropped and counted, valid.m2
      (or valid.refs/test.refs for a corpus with references); char: one token per character (Chinese).
  fastdec gec-data bea19 --sources JSON --archive NAME=PATH ... --local NAME=PATH ... --out DIR
      BEA-2019 restricted M2 corpora -> full/ (train pairs from every annotator, valid = CoNLL-2013,
      test = CoNLL-2014); a missing licence-restricted file stops with the config key to set.
  fastdec gec-data wikilarge|nlpcc18 --spec JSON --archive NAME=PATH ... --out DIR
      Ge et al. Table 4's corpora -> full/ (fastdec/tracks/gec/corpora.py); --spec is the config's gec.data.<source>.
  fastdec gec-data head --n N --pair IN OUT ... [--m2 IN OUT]
      first N lines / M2 blocks (the benchmark set).
"""
import argparse
import json


def _kv(items, what):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{what} expects NAME=PATH, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v or None
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--full", required=True)
    s.add_argument("--out", required=True)
    for split in ("train", "valid", "test"):
        s.add_argument(f"--subset-{split}", type=int, default=None)
    s.add_argument("--max-words", type=int, default=None)
    s.add_argument("--tokenisation", choices=["word", "char"], default="word")
    for name in ("wikilarge", "nlpcc18"):
        c = sub.add_parser(name)
        c.add_argument("--spec", required=True, help=f"JSON: the config's gec.data.{name}")
        c.add_argument("--archive", action="append", default=[], metavar="NAME=PATH")
        c.add_argument("--out", required=True)
    b = sub.add_parser("bea19")
    b.add_argument("--sources", required=True, help="JSON: {train: [spec...], valid: spec, test: spec}")
    b.add_argument("--archive", action="append", default=[], metavar="NAME=PATH")
    b.add_argument("--local", action="append", default=[], metavar="NAME=PATH")
    b.add_argument("--out", required=True)
    h = sub.add_parser("head")
    h.add_argument("--n", type=int, default=None, help="first N (0 or absent = all)")
    h.add_argument("--pair", nargs=2, action="append", default=[], metavar=("IN", "OUT"))
    h.add_argument("--m2", nargs=2, metavar=("IN", "OUT"))


def main(a: argparse.Namespace) -> int:
    from fastdec.tracks.gec import data

    if a.cmd == "select":
        subset = {"train": a.subset_train, "valid": a.subset_valid, "test": a.subset_test}
        rep = data.select_splits(a.full, a.out, subset=subset, max_words=a.max_words, tokenisation=a.tokenisation)
        print(json.dumps(rep), flush=True)
    elif a.cmd == "bea19":
        spec = json.loads(a.sources)
        archives, local = _kv(a.archive, "--archive"), _kv(a.local, "--local")

        def text(s, key):
            return key, data.read_m2_source(s, archives=archives, local=local, key=key)

        # read everything first, so a missing licence-restricted file fails before any output is written
        train = [text(s, f"gec.data.bea19.train[{i}]") for i, s in enumerate(spec["train"])]
        stats = data.prepare_m2_corpora(train, text(spec["valid"], "gec.data.bea19.valid"),
                                        text(spec["test"], "gec.data.bea19.test"), a.out)
        print(json.dumps(stats), flush=True)
    elif a.cmd in ("wikilarge", "nlpcc18"):
        from fastdec.tracks.gec import corpora

        prepare = corpora.prepare_wikilarge if a.cmd == "wikilarge" else corpora.prepare_nlpcc18
        print(json.dumps(prepare(json.loads(a.spec), _kv(a.archive, "--archive"), a.out), ensure_ascii=False),
              flush=True)
    else:
        n = data.head_files(a.n or None, [tuple(p) for p in a.pair], tuple(a.m2) if a.m2 else None)
        print(f"{n} sentences", flush=True)
    return 0
