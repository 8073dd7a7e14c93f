"""``fastdec gpu-suite PACK OUT``: every GPU figure from a pack (:mod:`fastdec.workflow.gpu_pack`) inside a time limit.

Made for a GPU machine lent for a few minutes with nothing installed but Python and CUDA torch
(``scripts/gpu_suite.sh PACK OUT`` puts the pack's packages on the path and calls this). Sections, most valuable
first, each written to OUT as soon as it is done, so a run cut off at its limit still leaves all it finished:

1. ``selfcheck``    random models, every exact method at batch 1 and batched (three also with the cost-aware
                    policy), float64, float32 and bfloat16;
2. ``gec``          Ge et al. Table 1 rows: fairseq beam 5, fairseq greedy, engine greedy, IAD;
3. ``gad``          Xia et al. Table 1 rows: fairseq beam 5, greedy, GAD k=10 with each drafter, GAD++ (3,1), (5,3)
                    (k: the drafter's block size);
4. ``pass_cost``    one verifier pass of k = 1..64 tokens against a one-token pass: the demo models and
                    Transformer-base and -big shapes with random weights (float32 and bfloat16);
5. ``blockwise``    Stern et al.: greedy and Blockwise k = 2..8 (its number of heads) on the Blockwise model;
6. ``student``      an efficient student (Hsu et al.): fairseq beam 5 / greedy and the engine's greedy;
7. ``batch``        greedy, IAD, GAD and Blockwise k = 8 at batch 1, 4, 16, 64 (Ge et al. Figures 6 and 7), each
                    fixed and cost-aware, on up to 256 sentences (four batches of 64); IAD also with a cost-aware
                    decode's choices replayed (``policy=replay``: what deciding costs, its effect on later passes
                    included; so does section 5 at batch 1);
8. ``bfloat16``     sections 2, 3 and 5 again in bfloat16.

Batch-1 rows are CUDA-synchronised (every module timing and every generator call; ``--no-sync-timing``: only around
each sentence and generator call). Each bench section gets a share
of the time left (``--budget-s``) and decodes as many sentences as fit (at most the pack's ``sentences``): the rows
of a section always cover the same sentences. Files in OUT (at most 6, none large): ``summary.csv`` (one row per
section, precision and method: the columns of docs/RESULTS.md plus ``section``, ``dtype``, ``device``),
``selfcheck.csv``, ``pass_cost.csv``, ``meta.json`` (device, versions, command, each section's status and time),
``runs.tgz`` (every section's run folder: hypotheses, per-sentence records; and the pass costs the cost-aware
policies measured, ``runs/pass_cost_cache/``); the wrapper adds ``log.txt``.
Exit status 1 when an exact float32 row is not 100 % identical to greedy or the float64 selfcheck differs.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, List, Optional

__all__ = ["SECTIONS", "Suite", "section_methods", "batch_methods"]

# (section, weight of the time left): what each is worth of the budget once the sections before it are done
SECTIONS = [("selfcheck", 8), ("gec", 14), ("gad", 20), ("pass_cost", 3), ("blockwise", 9), ("student", 6),
            ("batch", 16), ("bfloat16", 14)]
BATCH_SIZES = [1, 4, 16, 64]
# of a batch-curve run's time, for its batch-1 rows: on a CPU its batched rows took 1.6x their time, on a GPU far less
BATCH1_SHARE = 0.4
BATCH_SENTENCES = 4 * max(BATCH_SIZES)  # four batches at the largest size: a cost-aware policy learns past its first
PASS_KS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
# random-weight shapes of the pass-cost curve: (layers, embed dim, ffn dim, heads), vocabulary 32k
SHAPES = {"transformer-base": (6, 512, 2048, 8), "transformer-big": (6, 1024, 4096, 16)}


def section_methods(section: str, entry: dict) -> List[str]:
    """The method specs a bench section decodes (drafter checkpoints as the manifest names them)."""
    d, k = entry.get("drafters") or [], entry.get("k")
    if section == "gec":
        return ["fairseq:beam=5", "fairseq:beam=1", "greedy", "iad", "iad:policy=cost"]
    if section == "gad":  # k: the drafter's block size (10 in the demo)
        out = ["fairseq:beam=5", "fairseq:beam=1", "greedy", f"gad:k={k}:checkpoint={d[0]}",
               f"gad:k={k}:beta=3:tau=1:checkpoint={d[0]}", f"gad:k={k}:beta=5:tau=3:checkpoint={d[0]}"]
        if len(d) > 1:
            out.insert(4, f"gad:k={k}:label=gad-k{k}-cheap:checkpoint={d[1]}")
            out.append(f"gad:k={k}:policy=cost:label=gad-k{k}-cheap-cost:checkpoint={d[1]}")
        return out + [f"gad:k={k}:policy=cost:checkpoint={d[0]}",
                      f"gad:k={k}:beta=5:tau=3:policy=cost:checkpoint={d[0]}"]
    if section == "blockwise":  # k: the model's number of heads (8 in the demo)
        return (["fairseq:beam=1", "greedy"] + [f"blockwise:k={j}:precision=float" for j in range(2, k + 1)]
                + [f"blockwise:k={k}:precision=float:policy={p}" for p in ("cost", "replay")])
    if section == "student":
        return ["fairseq:beam=5", "fairseq:beam=1", "greedy"]
    raise ValueError(f"unknown bench section {section!r}")


def batch_methods(section: str, entry: dict) -> List[str]:
    from .batch_curves import at_batch_sizes

    d, k = entry.get("drafters") or [], entry.get("k")
    if section == "gec":
        specs = ["greedy", "iad", "iad:policy=cost", "iad:policy=replay"]
    elif section == "gad":
        specs = ["greedy", f"gad:k={k}:checkpoint={d[0]}", f"gad:k={k}:policy=cost:checkpoint={d[0]}"]
    else:
        specs = ["greedy", f"blockwise:k={k}:precision=float", f"blockwise:k={k}:precision=float:policy=cost"]
    beam = [f"fairseq:beam=5:batch={max(BATCH_SIZES)}"] if section != "blockwise" else []
    return at_batch_sizes(specs, BATCH_SIZES) + beam


class Suite:
    """One suite run: the pack, the output folder, the clock, and what has been written so far."""

    def __init__(self, pack: str, out: str, *, device: str, budget_s: float, sentences: Optional[int] = None,
                 sync_timing: bool = True, batch_sentences: int = BATCH_SENTENCES, repeats: int = 1,
                 log: Callable[[str], None] = print):
        self.pack, self.out, self.device, self.log = Path(pack), Path(out), device, log
        self.repeats = repeats
        self.sync_timing, self.batch_sentences = sync_timing, batch_sentences
        with open(self.pack / "manifest.json", encoding="utf-8") as f:
            self.manifest = json.load(f)
        self.sentences = sentences or self.manifest.get("sentences", 300)
        self.t0 = time.perf_counter()
        self.end = self.t0 + budget_s
        self.runs = Path(tempfile.mkdtemp(prefix="gpu-suite-runs-"))  # packed into runs.tgz: OUT stays small
        self.summary: List = []
        self.failed_exact: List[str] = []
        self.meta = {"command": "bash scripts/gpu_suite.sh PACK OUT " + " ".join(sys.argv[4:]), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                     "budget_s": budget_s, "pack": self.manifest.get("experiment"), "sections": {}}

    def path(self, rel: str) -> str:
        return str(self.pack / rel)

    def deadline(self, name: str, todo: List[str]) -> float:
        """The end of section ``name``'s share of the time left (``todo``: it and the sections after it)."""
        left = self.end - time.perf_counter()
        weight = dict(SECTIONS)
        return time.perf_counter() + left * weight[name] / sum(weight[n] for n in todo)

    def write_meta(self) -> None:
        self.meta["elapsed_s"] = round(time.perf_counter() - self.t0, 1)
        with open(self.out / "meta.json", "w", encoding="utf-8") as f:
            json.dump(self.meta, f, indent=2, default=str)

    # --- bench sections -------------------------------------------------------------------------------------
    def bench(self, name: str, section: str, methods: List[str], dtype: str, deadline: float,
              limit: Optional[int] = None) -> None:
        """Decode one section's methods on its model in ``dtype``; rows appended to summary.csv."""
        import pandas as pd

        from fastdec.engine.load import load_model, make_verifier
        from fastdec.text import read_lines

        from .methods import parse_methods
        from .results import write_run
        from .runner import Context, run_benchmark

        entry = self.manifest["sections"][section]
        specs = [s.replace("checkpoint=", f"checkpoint={self.pack}/") for s in methods]
        parsed = parse_methods(",".join(specs))
        loaded = load_model(self.path(entry["checkpoint"]), self.path(entry["data_bin"]), device=self.device,
                            dtype=dtype)
        verifier = make_verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
        lines = read_lines(self.path(entry["src"]))[: limit or self.sentences]
        refs = read_lines(self.path(entry["ref"])) if entry.get("ref") else None
        sources = [loaded.encode(line) for line in lines]
        ctx = Context(loaded, verifier, entry["max_len_a"], entry["max_len_b"], sync_timing=self.sync_timing)
        records = run_benchmark(parsed, ctx, sources, warmup=min(2, len(sources)), repeats=self.repeats,
                                deadline=deadline)
        n = len(records[parsed[0].label])
        run_dir = self.runs / name
        df = write_run(str(run_dir), parsed, records, loaded.decode, refs=refs[:n] if refs else None,
                       lang=entry.get("lang"), meta={"section": section, "dtype": dtype, "device": self.device,
                                                     "sentences": n})
        df.insert(0, "device", self.meta["device"])
        df.insert(0, "dtype", dtype)
        df.insert(0, "section", name)
        self.summary.append(df)
        pd.concat(self.summary, ignore_index=True).to_csv(self.out / "summary.csv", index=False)
        for _, r in df.iterrows():
            if dtype == "float32" and bool(r["exact"]) and r["identical_to_greedy_pct"] < 100:
                self.failed_exact.append(f"{name}/{r['label']}: {r['identical_to_greedy_pct']:.1f} %")
        cols = [c for c in ("label", "n_sentences", "ms_per_sentence", "speedup_vs_beam", "speedup_vs_greedy",
                            "speedup_vs_greedy_same_batch", "tokens_per_iteration", "identical_to_greedy_pct", "bleu")
                if c in df.columns]
        self.log(df[cols].to_string(index=False))
        with tarfile.open(self.out / "runs.tgz", "w:gz") as tar:
            tar.add(self.runs, arcname="runs")

    def parts(self, name: str, deadline: float, parts: List[tuple], limit: Optional[int] = None,
              batch1_share: float = 1.0) -> None:
        """Several bench runs sharing one section's time equally; one that fails does not stop the others (the
        section fails if any did). ``batch1_share``: the part of a run's time its batch-1 rows may take (the deadline
        stops only them, and a run's batched rows decode the same sentences after them)."""
        errors = []
        for j, (run_name, section, methods, dtype) in enumerate(parts):
            now = time.perf_counter()
            part = now + batch1_share * (deadline - now) / (len(parts) - j)
            try:
                self.bench(run_name, section, methods, dtype, part, limit=limit)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{run_name}: {type(e).__name__}: {e}")
                self.log(f"== {run_name} failed:\n{traceback.format_exc()}")
        if errors:
            raise RuntimeError("; ".join(errors))

    # --- the sections ---------------------------------------------------------------------------------------
    def selfcheck(self) -> None:
        import pandas as pd

        from fastdec.engine.selfcheck import run_selfcheck

        rows = []
        dtypes = ["float64", "float32"] + (["bfloat16"] if self.device.startswith("cuda") else [])
        for dtype in dtypes:
            t = time.perf_counter()
            # bfloat16 flips ties on random models, whose outputs then run to the length limit: fewer sentences
            got = run_selfcheck(self.device, dtype, sentences=6 if dtype == "bfloat16" else 16, batch=8)
            rows += [{"dtype": dtype, **r} for r in got]
            same, total = sum(r["identical"] for r in got), sum(r["total"] for r in got)
            self.log(f"selfcheck {dtype}: {same} of {total} outputs identical to greedy "
                     f"({time.perf_counter() - t:.1f} s)")
            if dtype == "float64" and same != total:
                self.failed_exact.append(f"selfcheck float64: {total - same} of {total} differ")
            pd.DataFrame(rows).to_csv(self.out / "selfcheck.csv", index=False)

    def pass_cost(self, deadline: float) -> None:
        import pandas as pd
        import torch

        from fastdec.engine.load import load_model, make_verifier
        from fastdec.engine.profile import build_random_transformer, verify_cost
        from fastdec.engine.verifier import Verifier

        rows = []

        def add(model_name, verifier, src, dtype):
            for r in verify_cost(verifier, src, PASS_KS, repeats=20, warmup=3):
                rows.append({"model": model_name, "dtype": dtype, **r})
            pd.DataFrame(rows).to_csv(self.out / "pass_cost.csv", index=False)
            k64 = rows[-1]
            self.log(f"pass cost {model_name} {dtype}: k=1 {rows[-len(PASS_KS)]['ms_per_pass']:.3f} ms, "
                     f"k=64 {k64['ms_per_pass']:.3f} ms ({k64['cost_vs_k1']:.2f}x)")

        for section in ("gad", "gec"):
            entry = self.manifest["sections"].get(section)
            if entry:
                loaded = load_model(self.path(entry["checkpoint"]), self.path(entry["data_bin"]),
                                    device=self.device, dtype="float32")
                add(f"demo-{section}", make_verifier(loaded.model, device=loaded.device, dtype=loaded.dtype),
                    loaded.encode(open(self.path(entry["src"]), encoding="utf-8").readline().strip()), "float32")
        dtypes = ["float32", "bfloat16"] if self.device.startswith("cuda") else ["float32"]
        src = torch.arange(4, 34)
        for shape, (layers, dim, ffn, heads) in SHAPES.items():
            if time.perf_counter() > deadline:
                self.log(f"pass cost {shape}: skipped (the section's time is spent)")
                continue
            model, d, _ = build_random_transformer(n_symbols=32000, layers=layers, embed_dim=dim, ffn_dim=ffn,
                                                   heads=heads, max_positions=256, dtype=torch.float32)
            for dtype in dtypes:
                add(shape, Verifier(model, device=self.device, dtype=getattr(torch, dtype)), src, dtype)
            del model

    def run(self, only: Optional[List[str]] = None) -> int:
        import torch

        self.out.mkdir(parents=True, exist_ok=True)
        self.meta.update({"device": torch.cuda.get_device_name() if self.device.startswith("cuda") else "cpu",
                          "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version()})
        self.write_meta()
        have = self.manifest["sections"]
        todo = [n for n, _ in SECTIONS if not only or n in only]
        for i, name in enumerate(todo):
            deadline = self.deadline(name, todo[i:])
            if deadline - time.perf_counter() < 3:
                self.meta["sections"][name] = {"status": "skipped: the budget is spent"}
                self.log(f"== {name}: skipped (the budget is spent)")
                continue
            t = time.perf_counter()
            self.log(f"== {name} (until +{deadline - self.t0:.0f} s of the {self.end - self.t0:.0f} s budget)")
            try:
                if name == "selfcheck":
                    self.selfcheck()
                elif name == "pass_cost":
                    self.pass_cost(deadline)
                elif name == "batch":
                    self.parts(name, deadline, [(f"batch-{s}", s, batch_methods(s, have[s]), "float32")
                                                for s in ("gec", "gad", "blockwise") if s in have],
                                   limit=self.batch_sentences, batch1_share=BATCH1_SHARE)
                elif name == "bfloat16":
                    if not self.device.startswith("cuda"):
                        self.meta["sections"][name] = {"status": "skipped: bfloat16 decoding needs a GPU"}
                        self.log(f"== {name}: skipped (bfloat16 decoding needs a GPU)")
                        continue
                    self.parts(name, deadline, [(f"{s}-bf16", s, section_methods(s, have[s]), "bfloat16")
                                                for s in ("gec", "gad", "blockwise") if s in have])
                elif name in have:
                    self.bench(name, name, section_methods(name, have[name]), "float32", deadline)
                else:
                    raise RuntimeError(f"the pack has no {name} section")
                self.meta["sections"][name] = {"status": "ok", "seconds": round(time.perf_counter() - t, 1)}
            except Exception as e:  # noqa: BLE001  (a section that fails must not cost the ones after it)
                self.meta["sections"][name] = {"status": f"error: {type(e).__name__}: {e}",
                                               "seconds": round(time.perf_counter() - t, 1)}
                self.log(f"== {name} failed:\n{traceback.format_exc()}")
            self.write_meta()
        self.meta["failed_exact"] = self.failed_exact
        self.write_meta()
        ok = [n for n, s in self.meta["sections"].items() if s["status"] == "ok"]
        self.log(f"gpu-suite: {len(ok)} of {len(self.meta['sections'])} sections done ({', '.join(ok)}) in "
                 f"{time.perf_counter() - self.t0:.0f} s; not identical to greedy: {self.failed_exact or 'none'}")
        return 1 if self.failed_exact else 0


def add_arguments(p) -> None:
    p.add_argument("pack", help="the folder `fastdec gpu-pack` wrote")
    p.add_argument("out", help="the output folder (made if missing)")
    p.add_argument("--device", default="auto", help="auto (cuda when torch sees a GPU), cuda or cpu")
    p.add_argument("--budget-s", type=float, default=400, help="seconds for all sections (default 400)")
    p.add_argument("--sentences", type=int, help="sentences of each Table 1 section (default: the pack's)")
    p.add_argument("--batch-sentences", type=int, default=BATCH_SENTENCES,
                   help=f"sentences of each batch curve (default {BATCH_SENTENCES})")
    p.add_argument("--repeats", type=int, default=1,
                   help="decode each sentence (and each batch) N times, every method in turn, and keep the fastest: "
                        "a stall of the machine then hits no row (default 1)")
    p.add_argument("--only", help="comma-separated sections (default all: " + ", ".join(n for n, _ in SECTIONS) + ")")
    p.add_argument("--no-sync-timing", action="store_true",
                   help="CUDA: no synchronisation around each module's timing (whole-sentence times stay exact)")
    p.add_argument("--no-cudnn-attention", action="store_true",
                   help="CUDA: keep PyTorch's attention off cuDNN's kernels (docs/GPU.md: bfloat16 with cuDNN's "
                        "attention and synchronised timings ran 10x slower on an H200)")


def main(a) -> int:
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda, but torch sees no GPU; use --device cpu")
    if not os.path.isfile(os.path.join(a.pack, "manifest.json")):
        raise ValueError(f"{a.pack}: no manifest.json; make the pack with `fastdec gpu-pack RESULTS --out {a.pack}`")
    if a.budget_s <= 0 or (a.sentences is not None and a.sentences < 1) or a.batch_sentences < 1 or a.repeats < 1:
        raise ValueError("--budget-s must be > 0, --sentences, --batch-sentences and --repeats >= 1")
    only = [s.strip() for s in a.only.split(",")] if a.only else None
    unknown = sorted(set(only or []) - {n for n, _ in SECTIONS})
    if unknown:
        raise ValueError(f"--only: unknown sections {unknown}; choose from {', '.join(n for n, _ in SECTIONS)}")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    if a.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)
    suite = Suite(a.pack, a.out, device=device, budget_s=a.budget_s, sentences=a.sentences,
                  sync_timing=not a.no_sync_timing, batch_sentences=a.batch_sentences, repeats=a.repeats, log=log)
    # the cost-aware policies' pass costs: measured afresh on this machine, kept in runs.tgz
    os.environ["FASTDEC_PASS_COST_CACHE"] = str(suite.runs / "pass_cost_cache")
    suite.meta.update(sync_timing=not a.no_sync_timing, cudnn_attention=not a.no_cudnn_attention, repeats=a.repeats)
    return suite.run(only)
