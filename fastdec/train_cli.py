"""``fastdec train``: train one fairseq model from a JSON training spec (a config section); resumable after a kill."""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--spec", required=True, help="JSON of the model's config section")
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--save-dir", required=True)
    ap.add_argument("--model-out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"],
                    help="float16/bfloat16: fairseq mixed-precision training (--fp16/--bf16), CUDA only")
    ap.add_argument("--task", default="translation")
    ap.add_argument("--criterion", default="label_smoothed_cross_entropy")
    ap.add_argument("--user-dir")
    ap.add_argument("--threads", type=int, default=1)


def main(a: argparse.Namespace) -> int:
    from fastdec.train import fairseq_train_command, run_training

    spec = json.loads(a.spec)
    cmd = fairseq_train_command(spec, a.data_bin, a.save_dir, device=a.device, dtype=a.dtype, user_dir=a.user_dir,
                                task=a.task, criterion=a.criterion)
    run_training(cmd, a.save_dir, a.model_out, a.summary, threads=a.threads)
