"""fairseq-train command lines from the config, and resumable training runs.

A killed run resumes: fairseq-train restores ``<save_dir>/checkpoint_last.pt`` by default (one cut short by the kill is
replaced by the newest complete checkpoint), and Snakemake only deletes the declared output (``model.pt``, written at
the very end), never the checkpoint folder. Raising ``max_update`` or ``max_minutes`` continues the same run (fairseq
counts the training time of earlier runs); any other change of the training settings (architecture, data, learning
rate ...) moves the old checkpoints aside and starts afresh.

One job at a time trains a model: a job that finds another one training the same save dir (a cluster job orphaned by a
killed Snakemake, and the job its rerun submits) waits for it; a model this exact command already trained to the end is
published again, not trained again (fairseq would otherwise run one more update past max_update).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

TRAIN_DEFAULTS = {
    "update_freq": 1, "warmup_updates": 4000, "dropout": 0.1, "label_smoothing": 0.1, "weight_decay": 0.0,
    "clip_norm": 0.0, "adam_betas": "(0.9, 0.98)", "save_interval_updates": 0, "keep_last": 2, "seed": 1,
    "extra_args": {},
}


def flag_args(flags: dict) -> list[str]:
    """{"encoder-layers": 3, "share-all-embeddings": True, "x": False} -> ["--encoder-layers", "3", ...]."""
    out = []
    for name, value in flags.items():
        name = "--" + name.replace("_", "-").lstrip("-")
        if value is True:
            out.append(name)
        elif value is False or value is None:
            continue
        else:
            out += [name, str(value)]
    return out


def fairseq_train_command(spec: dict, data_bin: str, save_dir: str, *, device: str = "cpu", dtype: str = "float32",
                          user_dir: str | None = None, task: str = "translation",
                          criterion: str = "label_smoothed_cross_entropy") -> list[str]:
    s = {**TRAIN_DEFAULTS, **spec}
    exe = str(Path(sys.executable).with_name("fairseq-train"))
    cmd = [exe, data_bin, "--task", task, "--arch", s["arch"], "--save-dir", save_dir,
           "--optimizer", "adam", "--adam-betas", s["adam_betas"], "--lr", str(s["lr"]),
           "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(s["warmup_updates"]),
           "--warmup-init-lr", "1e-07", "--dropout", str(s["dropout"]), "--weight-decay", str(s["weight_decay"]),
           "--clip-norm", str(s["clip_norm"]), "--criterion", criterion,
           "--max-tokens", str(s["max_tokens"]), "--update-freq", str(s["update_freq"]),
           "--max-update", str(s["max_update"]), "--seed", str(s["seed"]),
           "--no-epoch-checkpoints", "--keep-interval-updates", str(s["keep_last"]),
           "--log-format", "simple", "--log-interval", "50", "--num-workers", "0"]
    if criterion == "label_smoothed_cross_entropy":
        cmd += ["--label-smoothing", str(s["label_smoothing"])]
    if s.get("max_minutes"):
        cmd += ["--stop-time-hours", f"{s['max_minutes'] / 60:.4f}"]
    if s["save_interval_updates"]:
        cmd += ["--save-interval-updates", str(s["save_interval_updates"])]
    if user_dir:
        cmd += ["--user-dir", user_dir]
    if device == "cpu":
        if dtype != "float32":
            raise ValueError(f"dtype {dtype} training needs device cuda (fairseq mixed precision); use float32 on CPU")
        cmd += ["--cpu"]
    elif dtype in ("float16", "bfloat16"):
        cmd += ["--fp16" if dtype == "float16" else "--bf16"]
    cmd += flag_args(s["extra_args"])
    return cmd


_UPD = re.compile(r"num_updates[ =|]+(\d+)")

# flags (with one value) that only say how long/where to train: changing them continues the same run
_CONTINUATION_FLAGS = {"--max-update", "--stop-time-hours", "--save-interval-updates", "--keep-interval-updates",
                       "--log-interval", "--num-workers"}


def run_fingerprint(cmd: list[str]) -> list[str]:
    """The training command without its continuation flags: two commands with equal fingerprints train the
    same model (same data, architecture, optimiser...), so the second may resume the first's checkpoints."""
    out, skip = [], False
    for i, tok in enumerate(cmd):
        if skip:
            skip = False
            continue
        if tok in _CONTINUATION_FLAGS:
            skip = True
            continue
        if i == 0:
            tok = Path(tok).name  # the interpreter's folder does not matter
        out.append(tok)
    return out


def _set_aside_stale_checkpoints(save: Path, cmd: list[str]) -> None:
    """Checkpoints of a different model (changed architecture, data or optimiser) cannot be resumed:
    fairseq would fail on mismatched tensor shapes or silently mix two setups. Move them aside, keep them."""
    record = save / "command.json"
    if (save / "checkpoint_last.pt").exists() and record.exists():
        before = json.loads(record.read_text()).get("fingerprint")
        if before is not None and before != run_fingerprint(cmd):
            stale = save.with_name(f"{save.name}.stale-{time.strftime('%Y%m%d-%H%M%S')}")
            save.rename(stale)
            print(f"the training settings changed since {save} was written: its checkpoints were moved to "
                  f"{stale} and training starts afresh (delete that folder when you no longer need it)",
                  flush=True)
    save.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"command": cmd, "fingerprint": run_fingerprint(cmd)}, indent=2))


def run_training(cmd: list[str], save_dir: str, model_out: str, summary_out: str, threads: int = 1) -> dict:
    """Run fairseq-train (resuming if a checkpoint exists), then publish the best checkpoint as ``model_out``.

    One job at a time per save dir (``train.lock``), and a model already trained by this exact command is published
    again instead of trained again: a cluster job left running by a killed Snakemake and the job its rerun submits
    do not train the same model twice."""
    save = Path(save_dir)
    save.mkdir(parents=True, exist_ok=True)
    with open(save / "train.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"another job is training this model ({save}); waiting for it to finish", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as e:  # a shared file system without locks (e.g. Lustre mounted without `flock`)
            print(f"warning: cannot lock {save / 'train.lock'} ({e}); not guarding against a second job training "
                  f"this model at the same time", flush=True)
        record = save / "published.json"
        if _trained_by(record, cmd, save):
            summary = {**json.loads(record.read_text()), "republished": True}
            print(f"{save} already holds this model, trained by this command ({summary['num_updates']} updates): "
                  f"publishing it again without training", flush=True)
            shutil.copyfile(save / summary["published"], model_out)
            Path(summary_out).write_text(json.dumps(summary, indent=2))
            return summary
        summary = _train_locked(cmd, save, model_out, summary_out, threads)
        record.write_text(json.dumps(summary, indent=2))
        return summary


def _trained_by(record: Path, cmd: list[str], save: Path) -> bool:
    """Whether the last training in ``save`` ran this exact command to its end, with no training since."""
    if not record.exists() or not (save / "checkpoint_last.pt").exists():
        return False
    done = json.loads(record.read_text())
    return (done.get("command") == cmd and (save / done.get("published", "")).is_file()
            and (save / "checkpoint_last.pt").stat().st_mtime <= record.stat().st_mtime)


def fresh_start(cmd: list[str], save: Path) -> list[str]:
    """``--finetune-from-model CKPT`` made a fresh start: fairseq resets the optimiser, schedule and meters but
    restores the training time recorded in CKPT, and ``--stop-time-hours`` counts it -- a verifier continuing a
    teacher trained for 12 minutes would stop after one update under a 4-minute cap. The weights are copied to
    ``<save_dir>/init_weights.pt`` without that record, and the command points there."""
    if "--finetune-from-model" not in cmd:
        return cmd
    i = cmd.index("--finetune-from-model") + 1
    import torch

    state = torch.load(cmd[i], map_location="cpu", weights_only=False)
    extra = dict(state.get("extra_state") or {})
    extra.pop("previous_training_time", None)
    state["extra_state"] = extra
    init = save / "init_weights.pt"
    torch.save(state, init)
    return cmd[:i] + [str(init)] + cmd[i + 1:]


def write_start_checkpoint(cfg, model_state: dict, out: str, optimizer_history: list) -> None:
    """Write ``out``: a checkpoint that ``--finetune-from-model`` starts a training phase from -- the weights, no
    optimizer state, a fresh data-loader position, no training-time record. fairseq reads the last
    ``optimizer_history`` entry whenever it loads a checkpoint, so it must hold one."""
    import torch

    start = {"args": None, "cfg": cfg, "model": model_state, "last_optimizer_state": None,
             "optimizer_history": optimizer_history,
             "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0, "version": 2}}}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = f"{out}.tmp"
    torch.save(start, tmp)
    os.replace(tmp, out)  # a killed job leaves no half-written checkpoint


def repair_last_checkpoint(save: Path) -> None:
    """A job killed while fairseq wrote ``checkpoint_last.pt`` (it writes one checkpoint in place, then copies it to
    the other names) leaves a truncated file that fairseq cannot resume from (a SLURM ``scancel`` did, in the cluster
    fault test). Such a file is moved aside, and the newest complete checkpoint of the folder, if any, becomes
    ``checkpoint_last.pt``; else training starts afresh. (A checkpoint is a zip archive: a truncated one has no
    central directory.)"""
    last = save / "checkpoint_last.pt"
    if not last.exists() or zipfile.is_zipfile(last):
        return
    bad = last.with_name(f"checkpoint_last.pt.truncated-{time.strftime('%Y%m%d-%H%M%S')}")
    last.rename(bad)
    complete = [p for p in save.glob("checkpoint*.pt") if zipfile.is_zipfile(p)]
    if not complete:
        print(f"{last} was cut short (moved to {bad.name}) and no other checkpoint is complete: training starts "
              f"afresh", flush=True)
        return
    newest = max(complete, key=lambda p: p.stat().st_mtime)
    tmp = save / "checkpoint_last.pt.tmp"
    shutil.copyfile(newest, tmp)
    os.replace(tmp, last)
    print(f"{last} was cut short (moved to {bad.name}): resuming from a copy of {newest.name}", flush=True)


def _train_locked(cmd: list[str], save: Path, model_out: str, summary_out: str, threads: int) -> dict:
    _set_aside_stale_checkpoints(save, cmd)
    repair_last_checkpoint(save)
    cmd = fresh_start(cmd, save)
    resumed = (save / "checkpoint_last.pt").exists()
    if resumed:
        print(f"resuming from {save / 'checkpoint_last.pt'}", flush=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last_valid, updates = None, 0
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if "| valid on" in line and " loss " in line:
            m = re.search(r"\| loss ([\d.]+)", line)
            last_valid = float(m.group(1)) if m else last_valid
        if m := _UPD.search(line):
            updates = int(m.group(1))
    if proc.wait() != 0:
        raise RuntimeError(f"fairseq-train failed with exit code {proc.returncode}; see the log above. "
                           f"Rerunning the workflow resumes from {save / 'checkpoint_last.pt'}.")
    best = save / "checkpoint_best.pt"
    src = best if best.exists() else save / "checkpoint_last.pt"
    shutil.copyfile(src, model_out)
    summary = {"seconds_this_run": round(time.time() - t0, 1), "resumed": resumed, "num_updates": updates,
               "last_valid_loss": last_valid, "published": str(src.name), "command": cmd}
    Path(summary_out).write_text(json.dumps(summary, indent=2))
    return summary
