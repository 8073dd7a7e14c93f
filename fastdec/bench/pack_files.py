"""The compressed files of a GPU pack, and unpacking it (the whole install step on the GPU machine).

Trained float32 weights barely compress as bytes; split into four byte planes (every float's sign-and-exponent byte
together, and so on) they shrink by about a sixth with zlib, in a second: what lets six demo models, their
dictionaries and fairseq travel under a 64 MiB transfer limit with room to spare. Only numpy and the standard
library are needed, so unpacking runs before anything of the pack is on the path.

    python -m fastdec.bench.pack_files PACK DEST    # DEST/site (the packages), DEST/models/*.pt, the rest linked
"""
from __future__ import annotations

import shutil
import struct
import sys
import tarfile
import zlib
from pathlib import Path

__all__ = ["compress_file", "decompress_file", "unpack", "SUFFIX"]

SUFFIX = ".planes.z"
_MAGIC = b"FDPZ1"


def compress_file(src: str, dst: str) -> None:
    """``dst`` <- zlib of ``src``'s bytes laid out as 4 byte planes (a float32 array's bytes 0, 1, 2, 3)."""
    import numpy as np

    data = Path(src).read_bytes()
    padded = data + b"\0" * (-len(data) % 4)
    planes = np.frombuffer(padded, dtype=np.uint8).reshape(-1, 4).T.tobytes()
    with open(dst, "wb") as f:
        f.write(_MAGIC + struct.pack("<Q", len(data)) + zlib.compress(planes, 6))


def decompress_file(src: str, dst: str) -> None:
    """The inverse of :func:`compress_file`."""
    import numpy as np

    raw = Path(src).read_bytes()
    if not raw.startswith(_MAGIC):
        raise ValueError(f"{src} is not a compressed pack file (made by fastdec gpu-pack)")
    (n,) = struct.unpack("<Q", raw[len(_MAGIC): len(_MAGIC) + 8])
    planes = np.frombuffer(zlib.decompress(raw[len(_MAGIC) + 8:]), dtype=np.uint8)
    Path(dst).write_bytes(planes.reshape(4, -1).T.tobytes()[:n])


def unpack(pack: str, dest: str) -> str:
    """``dest`` <- a pack ready to run: ``site/`` extracted, every ``*.planes.z`` decompressed, the other files
    copied. Idempotent (a second call redoes it)."""
    pack_dir, out = Path(pack), Path(dest)
    if not (pack_dir / "manifest.json").is_file():
        raise ValueError(f"{pack}: no manifest.json; make the pack with `fastdec gpu-pack RESULTS --out {pack}`")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for path in sorted(pack_dir.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(pack_dir)
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.name == "site.tgz":
            with tarfile.open(path) as tar:
                tar.extractall(out, filter="data")
        elif path.name.endswith(SUFFIX):
            decompress_file(str(path), str(target)[: -len(SUFFIX)])
        else:
            shutil.copy2(path, target)
    return str(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    try:
        print(f"unpacked {unpack(sys.argv[1], sys.argv[2])}", flush=True)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
