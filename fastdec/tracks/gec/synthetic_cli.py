"""``fastdec gec-synthetic``: synthetic GEC pretraining data (gec.pretrain): split the clean text into shards, build
confusion sets, noise one shard. Steps in fastdec/tracks/gec/pretrain_data.py, the noise in
fastdec/tracks/gec/synthetic.py."""
import argparse
import json


def file_arg(value: str):
    """ARCHIVE or ARCHIVE::MEMBER (a file inside a tar archive)."""
    archive, _, member = value.partition("::")
    return archive, member or None


def add_arguments(ap: argparse.ArgumentParser) -> None:
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split", help="clean text -> valid.txt and train.<k>.txt")
    s.add_argument("--file", action="append", type=file_arg, required=True, help="ARCHIVE[::MEMBER], in order")
    s.add_argument("--out", required=True)
    s.add_argument("--sentences", type=int, default=0, help="training sentences (0 = every line)")
    s.add_argument("--valid-sentences", type=int, required=True)
    s.add_argument("--shards", type=int, required=True)
    c = sub.add_parser("confusion", help="confusion sets from the vocabulary of a clean shard")
    c.add_argument("--text", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--sample", type=int, default=0, help="first N lines (0 = all)")
    c.add_argument("--vocab-size", type=int, required=True)
    c.add_argument("--max-candidates", type=int, required=True)
    c.add_argument("--tokenize", action="store_true")
    n = sub.add_parser("corrupt", help="noise one clean shard into source/target files")
    n.add_argument("--text", required=True)
    n.add_argument("--confusion", required=True)
    n.add_argument("--src", required=True)
    n.add_argument("--tgt", required=True)
    n.add_argument("--noise", required=True, help="JSON of gec.pretrain.noise")
    n.add_argument("--shard", type=int, required=True, help="seeds the shard's random stream with noise.seed")
    n.add_argument("--max-words", type=int, default=0)
    n.add_argument("--tokenize", action="store_true")


def main(a: argparse.Namespace) -> int:
    from fastdec.tracks.gec import pretrain_data as pd

    if a.cmd == "split":
        stats = pd.split_clean(a.file, a.out, a.sentences or None, a.valid_sentences, a.shards)
    elif a.cmd == "confusion":
        stats = pd.build_confusion(a.text, a.out, a.sample or None, a.vocab_size, a.max_candidates, a.tokenize)
    else:
        stats = pd.corrupt(a.text, a.confusion, a.src, a.tgt, json.loads(a.noise), a.shard, a.max_words or None,
                           a.tokenize)
    print(json.dumps(stats, indent=1))
