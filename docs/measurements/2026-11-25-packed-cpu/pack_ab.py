"""A/B of the batched verifier's packed linear layers (2026-11-25): batched greedy and IAD on the GEC model, the same
sentences, packed and padded passes alternated batch by batch in one process, 1 thread; outputs compared.

    PYTHONPATH=. TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 python docs/measurements/2026-11-25-packed-cpu/pack_ab.py \
        results/demo/gec/models/gec/model.pt results/demo/gec/data-bin results/demo/gec/bench/set.bpe 256
"""
import sys
import time

import torch

from fastdec.engine import InputCopyDrafter, accept_top1
from fastdec.engine.batched import decode_batched
from fastdec.engine.load import load_model, make_verifier

ckpt, data_bin, inp, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(1)
loaded = load_model(ckpt, data_bin)
ver = make_verifier(loaded.model)
lines = open(inp, encoding="utf-8").read().splitlines()[:limit]
srcs = [loaded.src_dict.encode_line(l, add_if_not_exist=False, append_eos=True).long() for l in lines]
kw = dict(max_len_a=1.2, max_len_b=10)
rows = [("greedy", None, None), ("iad", InputCopyDrafter(), None), ("iad-draft8", InputCopyDrafter(), 8)]
times, outs = {}, {}
with torch.inference_mode():
    for B in (8, 32):
        order = sorted(range(len(srcs)), key=lambda i: -srcs[i].numel())
        batches = [order[i:i + B] for i in range(0, len(order), B)]
        for name, drafter, cap in rows:
            for pack in (True, False):
                decode_batched(ver, [srcs[i] for i in batches[0]], drafter, accept_top1, batch_size=B, pack=pack,
                               max_draft_len=cap, **kw)  # warm-up
        for bi, ids in enumerate(batches):
            for name, drafter, cap in rows:
                for pack in ((True, False) if bi % 2 == 0 else (False, True)):
                    t0 = time.perf_counter()
                    res = decode_batched(ver, [srcs[i] for i in ids], drafter, accept_top1, batch_size=B, pack=pack,
                                         max_draft_len=cap, sort_by_length=False, **kw)
                    key = (name, B, pack)
                    times[key] = times.get(key, 0.0) + time.perf_counter() - t0
                    outs.setdefault(key, []).extend(r.tokens for r in res)
n = len(srcs)
greedy_ref = {B: outs[("greedy", B, False)] for B in (8, 32)}
print("method,batch,pack,ms_per_sentence,vs_greedy_same_batch_padded,identical_to_greedy")
for (name, B, pack), t in sorted(times.items()):
    same = sum(a == b for a, b in zip(outs[(name, B, pack)], greedy_ref[B]))
    print(f"{name},{B},{int(pack)},{1000 * t / n:.3f},{times[('greedy', B, False)] / t:.3f},{same}/{n}")
