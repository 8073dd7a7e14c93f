"""The compressed files of a GPU pack, and unpacking it (the whole install step on the GPU machine).

Trained float32 weights barely compress as bytes; split into four byte planes (every float's sign-and-exponent byte
together, and so on) they shrink by about a sixth with zlib, in a second. A model fine-tuned from the verifier (the
drafters, the student) keeps each of its tensors as the bitwise XOR with the verifier's tensor of the same name
(frozen ones are then all zeros), and the Blockwise proposal heads are stored in bfloat16 (they only propose: the
base model's own prediction decides every token, so outputs stay exact): what lets six demo models, their
dictionaries and fairseq travel under a 50 MiB transfer with the repository. Unpacking needs numpy and, for those
checkpoints, torch; nothing of the pack needs to be on the path.

    python -m fastdec.bench.pack_files PACK DEST    # DEST/site (the packages), DEST/models/*.pt, the rest linked
"""
from __future__ import annotations

import json
import shutil
import struct
import sys
import tarfile
import zlib
from pathlib import Path
from typing import Optional

__all__ = ["compress_file", "decompress_file", "encode_state", "decode_checkpoint", "unpack", "SUFFIX", "PACK_KEY"]

SUFFIX = ".planes.z"
_MAGIC = b"FDPZ1"
PACK_KEY = "fastdec_pack"   # a checkpoint's entry: {"xor_base": path in the pack, "xor": [names], "bfloat16": [names]}


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


def encode_state(state: dict, base: Optional[dict], base_path: str, bfloat16=lambda name: False) -> dict:
    """``state`` (a fairseq checkpoint) with each float32 tensor that ``base`` (the base checkpoint's ``model``) has
    with the same name and shape replaced by the XOR of their bits, and each tensor ``bfloat16(name)`` names rounded
    to bfloat16; which ones is recorded under :data:`PACK_KEY`. Tensors shared in ``state`` stay shared."""
    import torch

    done: dict = {}
    model, xor, half = {}, [], []
    for name, t in state["model"].items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key in done:                       # tied weights (shared embeddings): one copy, restored as one
            model[name] = model[done[key]]
            continue
        done[key] = name
        b = None if base is None else base.get(name)
        if t.dtype == torch.float32 and bfloat16(name):
            model[name] = t.to(torch.bfloat16)
            half.append(name)
        elif t.dtype == torch.float32 and b is not None and b.shape == t.shape and b.dtype == t.dtype:
            model[name] = t.contiguous().view(torch.int32) ^ b.contiguous().view(torch.int32)
            xor.append(name)
        else:
            model[name] = t
    return {**state, "model": model, PACK_KEY: {"xor_base": base_path, "xor": xor, "bfloat16": half}}


def decode_checkpoint(path: Path, root: Path) -> None:
    """Undo :func:`encode_state` in place (the XOR base is ``root / xor_base``, already decoded)."""
    import torch

    state = torch.load(path, map_location="cpu", weights_only=False)
    info = state.pop(PACK_KEY, None) if isinstance(state, dict) else None
    if not info:
        return
    base = torch.load(root / info["xor_base"], map_location="cpu", weights_only=False)["model"] if info["xor"] else {}
    model, restored = state["model"], {}
    for name, t in model.items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))  # tied weights come back tied
        if key in restored:
            model[name] = restored[key]
            continue
        if name in info["xor"]:
            new = (t ^ base[name].contiguous().view(torch.int32)).view(torch.float32)
        elif name in info["bfloat16"]:
            new = t.float()
        else:
            new = t
        restored[key] = model[name] = new
    torch.save(state, path)


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
    bases = {json.loads((pack_dir / "manifest.json").read_text()).get("xor_base")}
    for path in sorted((out / "models").glob("*.pt")) if (out / "models").is_dir() else []:
        if str(path.relative_to(out)) not in bases:
            decode_checkpoint(path, out)
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
