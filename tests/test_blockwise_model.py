"""Blockwise parallel decoding model (Stern et al. 2018): the fairseq plugin model + criterion.

In-process tests build tiny models on the ``tiny_databin`` fixture; the ``fairseq-train`` tests train a tiny
AT base (60 updates) and then the blockwise model on top of it (frozen and fine-tuned, 60 updates each).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fairseq")

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

import fastdec_fairseq  # noqa: E402,F401  (registers the plugin once, under its package name)
from fairseq import checkpoint_utils, options, tasks  # noqa: E402
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss  # noqa: E402

from fastdec_fairseq.criterions.blockwise_loss import BlockwiseCrossEntropyCriterion, shift_target  # noqa: E402
from fastdec_fairseq.models.blockwise_transformer import (  # noqa: E402
    BlockwiseHead,
    BlockwiseTransformerModel,
)

TRAIN_COMMON = [
    "--task", "translation", "--source-lang", "src", "--target-lang", "tgt",
    "--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10",
    "--max-tokens", "512", "--max-update", "60", "--label-smoothing", "0.1", "--seed", "1",
    "--no-epoch-checkpoints", "--save-interval", "1000", "--validate-interval", "1000",
    "--log-format", "simple", "--log-interval", "20", "--num-workers", "0", "--no-progress-bar",
]


def _build(databin, *extra, arch="blockwise_transformer_tiny"):
    """(args, task, model) built in-process exactly as fairseq-train would."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(databin), "--arch", arch, "--source-lang", "src",
                                                "--target-lang", "tgt", "--share-all-embeddings", *extra])
    task = tasks.setup_task(args)
    return args, task, task.build_model(args)


def _batch(task, n=8, split="valid"):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def _fairseq_train(databin, save_dir, *extra):
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(
        [str(BIN / "fairseq-train"), str(databin), "--user-dir", "fastdec_fairseq", "--cpu",
         "--save-dir", str(save_dir), *TRAIN_COMMON, *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (Path(save_dir) / "checkpoint_last.pt").exists()
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def base_ckpt(tiny_databin, tmp_path_factory):
    """A tiny AT transformer trained for 60 updates with the standard criterion."""
    save = tmp_path_factory.mktemp("bw_base")
    _fairseq_train(tiny_databin, save, "--arch", "transformer_tiny", "--share-all-embeddings",
                   "--criterion", "label_smoothed_cross_entropy")
    return save / "checkpoint_last.pt"


# ----------------------------------------------------------------------------------------------- model

@pytest.mark.parametrize("k", [0, -2])
def test_block_size_must_be_positive(tiny_databin, k):
    with pytest.raises(ValueError, match="block-size"):
        _build(tiny_databin, "--block-size", str(k))
    with pytest.raises(ValueError, match="block-size"):
        BlockwiseHead(d_model=8, d_hidden=16, block_size=k)


def test_frozen_k1_identity_has_nothing_to_train(tiny_databin):
    with pytest.raises(ValueError, match="nothing to train"):
        _build(tiny_databin, "--block-size", "1", "--freeze-base")


def test_shapes_and_residual_structure(tiny_databin):
    torch.manual_seed(0)
    _, task, model = _build(tiny_databin, "--block-size", "3")
    model.eval()
    assert isinstance(model, BlockwiseTransformerModel) and model.block_size == 3
    head = model.decoder.blockwise_head
    d, dh, V = 64, 64, len(task.target_dictionary)
    # the paper's layer: hidden k*d_hidden; outputs for p_2..p_k (p_1 takes the identity path)
    assert head.fc1.weight.shape == (3 * dh, d) and head.fc2.weight.shape == (2 * d, 3 * dh)

    feats = torch.randn(2, 5, d)
    proj = model.decoder.output_projection
    with torch.no_grad():
        # zero-initialised output weights: every head starts as the base next-token distribution
        H0 = model.heads_from_features(feats)
        assert H0.shape == (2, 5, 3, V)
        for i in range(3):
            assert torch.allclose(H0[:, :, i], proj(feats), atol=1e-5)
        for p in head.parameters():
            p.normal_(0, 0.3)
        H = model.heads_from_features(feats)
        S = model.score_logits(feats)
        P = model.proposal_logits(feats)
        hid = torch.relu(feats @ head.fc1.weight.T + head.fc1.bias)
        out = (hid @ head.fc2.weight.T + head.fc2.bias).view(2, 5, 2, d)
        for i in range(1, 3):  # residual from the layer input to each output, then the ORIGINAL projection
            assert torch.allclose(H[:, :, i], proj(feats + out[:, :, i - 1]), atol=1e-4)
            assert torch.allclose(model.head_logits(feats, i + 1), H[:, :, i], atol=1e-4)
        assert torch.equal(H[:, :, 0], S) and torch.equal(S, proj(feats))
        assert torch.equal(S, model.decoder.output_layer(feats))
        assert P.shape == (2, 5, 2, V) and torch.allclose(P, H[:, :, 1:], atol=1e-5)
        # the standard forward is the base transformer's, i.e. p_1
        b = _batch(task, 4)
        logits, _ = model(**b["net_input"])
        f, _ = model(**b["net_input"], features_only=True)
        assert torch.equal(logits, model.score_logits(f))
        assert torch.equal(model.heads_from_features(f)[:, :, 0], logits)
    with pytest.raises(ValueError):
        model.head_logits(feats, 4)


def test_p1_through_layer_is_used_everywhere(tiny_databin):
    torch.manual_seed(0)
    _, task, model = _build(tiny_databin, "--block-size", "2", "--p1-through-layer")
    model.eval()
    head = model.decoder.blockwise_head
    assert head.fc2.weight.shape == (2 * 64, 2 * 64)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, 0.3)
        b = _batch(task, 4)
        logits, _ = model(**b["net_input"])
        f, _ = model(**b["net_input"], features_only=True)
        H = model.heads_from_features(f)
        assert torch.equal(H[:, :, 0], model.score_logits(f))
        assert torch.equal(logits, model.score_logits(f))  # forward / generate / Verifier all score with this p_1
        assert not torch.allclose(logits, model.decoder.output_projection(f))
        hid = torch.relu(f @ head.fc1.weight.T + head.fc1.bias)
        s1 = f + (hid @ head.fc2.weight.T + head.fc2.bias)[..., :64]
        assert torch.allclose(H[:, :, 0], model.decoder.output_projection(s1), atol=1e-4)


# ------------------------------------------------------------------------------------------- criterion

def test_shift_target():
    pad = 1
    t = torch.tensor([[10, 11, 12, 2], [20, 21, 2, pad]])
    assert torch.equal(shift_target(t, 0, pad), t)
    assert torch.equal(shift_target(t, 1, pad), torch.tensor([[11, 12, 2, pad], [21, 2, pad, pad]]))
    assert torch.equal(shift_target(t, 2, pad), torch.tensor([[12, 2, pad, pad], [2, pad, pad, pad]]))
    assert torch.equal(shift_target(t, 5, pad), torch.full_like(t, pad))
    left = torch.tensor([[pad, 30, 31, 2]])  # left-padded: a pad position never gets a real target
    assert torch.equal(shift_target(left, 1, pad), torch.tensor([[pad, 31, 2, pad]]))


@pytest.mark.parametrize("i", [1, 2, 3])
def test_subloss_is_label_smoothed_ce_of_shifted_target(tiny_databin, i):
    torch.manual_seed(0)
    _, task, model = _build(tiny_databin, "--block-size", "3", "--dropout", "0")  # train mode == eval mode
    for p in model.decoder.blockwise_head.parameters():
        torch.nn.init.normal_(p, 0, 0.2)
    b = _batch(task)
    crit = BlockwiseCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1, fixed_head=i)
    model.train()
    loss, sample_size, log = crit(model, b)
    assert log["head_sum"] == i and log["head_n"] == 1
    with torch.no_grad():
        f, _ = model(**b["net_input"], features_only=True)
        lp = torch.log_softmax(model.heads_from_features(f)[:, :, i - 1].float(), -1)
    pad = task.target_dictionary.pad()
    tgt = b["target"]
    manual = torch.full_like(tgt, pad)
    manual[:, : tgt.size(1) - (i - 1)] = tgt[:, i - 1:]
    exp, _ = label_smoothed_nll_loss(lp.view(-1, lp.size(-1)), manual.view(-1), 0.1, ignore_index=pad)
    assert sample_size == int(manual.ne(pad).sum()) == log[f"ntok_h{i}"]
    assert sample_size == int(b["ntokens"]) - (i - 1) * b["target"].size(0)
    assert torch.allclose(loss, exp, rtol=1e-4)
    # validation scores every head
    model.eval()
    _, _, vlog = crit(model, b)
    assert all(vlog[f"ntok_h{j}"] > 0 for j in (1, 2, 3)) and vlog["head_n"] == 0


def test_random_head_is_uniform_and_skips_constant_head(tiny_databin, base_ckpt):
    _, task, model = _build(tiny_databin, "--block-size", "3")
    crit = BlockwiseCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    model.train()
    torch.manual_seed(0)
    draws = [crit._heads_for_batch(model)[0] for _ in range(600)]
    counts = [draws.count(h) for h in (1, 2, 3)]
    assert all(150 < c < 250 for c in counts), counts
    _, _, frozen = _build(tiny_databin, "--block-size", "3", "--load-base", str(base_ckpt), "--freeze-base")
    frozen.train()
    draws = {crit._heads_for_batch(frozen)[0] for _ in range(100)}
    assert draws == {2, 3}  # p_1 is the frozen base model: its loss is a constant
    with pytest.raises(ValueError, match="fixed-head"):
        BlockwiseCrossEntropyCriterion(task, False, 0.1, fixed_head=1)._heads_for_batch(frozen)


# ------------------------------------------------------------------------------------ load-base / freeze

def test_freeze_base_really_freezes(tiny_databin, base_ckpt):
    torch.manual_seed(0)
    _, task, model = _build(tiny_databin, "--block-size", "3", "--load-base", str(base_ckpt), "--freeze-base")
    base_state = checkpoint_utils.load_checkpoint_to_cpu(str(base_ckpt))["model"]
    names = {n for n, _ in model.named_parameters()}
    assert {n for n in names if "blockwise_head" in n} == {
        "decoder.blockwise_head.fc1.weight", "decoder.blockwise_head.fc1.bias",
        "decoder.blockwise_head.fc2.weight", "decoder.blockwise_head.fc2.bias"}
    for n, p in model.named_parameters():
        assert p.requires_grad == ("blockwise_head" in n), n
        if "blockwise_head" not in n:
            assert torch.equal(p, base_state[n]), n  # initialised from the base checkpoint
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable, lr=1e-2)
    crit = BlockwiseCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1, all_heads=True)
    model.train()
    for _ in range(2):
        opt.zero_grad()
        loss, _, _ = crit(model, _batch(task))
        loss.backward()
        opt.step()
    for n, p in model.named_parameters():
        if "blockwise_head" in n:
            assert p.grad is not None and not torch.equal(p, before[n]), n
        else:
            assert p.grad is None and torch.equal(p, before[n]), n
    # p_1 stays the base model, bit for bit
    base = checkpoint_utils.load_model_ensemble([str(base_ckpt)])[0][0].eval()
    model.eval()
    b = _batch(task, 4)
    with torch.no_grad():
        f, _ = model(**b["net_input"], features_only=True)
        assert torch.equal(model.heads_from_features(f)[:, :, 0], base(**b["net_input"])[0])


def test_load_base_architecture_mismatch_is_clear(tiny_databin, base_ckpt):
    with pytest.raises(ValueError, match="architecture differs.*encoder_layers"):
        _build(tiny_databin, "--block-size", "2", "--load-base", str(base_ckpt), "--encoder-layers", "1")
    args, _, model = _build(tiny_databin, "--block-size", "2", "--load-base", str(base_ckpt),
                            arch="blockwise_transformer_from_base")
    assert args.encoder_embed_dim == 64 and args.decoder_layers == 2 and model.block_size == 2


# ----------------------------------------------------------------------------------------- fairseq-train

@pytest.mark.parametrize("variant", ["frozen", "finetuned"])
def test_fairseq_train_blockwise_and_load(tiny_databin, base_ckpt, tmp_path, variant):
    base_copy = tmp_path / "base.pt"  # deleted before loading: restoring must not need --load-base
    shutil.copy(base_ckpt, base_copy)
    extra = ["--freeze-base"] if variant == "frozen" else []
    log = _fairseq_train(tiny_databin, tmp_path / "ckpt", "--arch", "blockwise_transformer_tiny",
                         "--share-all-embeddings", "--block-size", "3", "--load-base", str(base_copy),
                         "--criterion", "blockwise_cross_entropy", *extra)
    assert "head=" in log and "nll_h1" in log  # drawn head (train) and per-head valid scores are logged
    base_copy.unlink()

    models, cfg = checkpoint_utils.load_model_ensemble([str(tmp_path / "ckpt" / "checkpoint_last.pt")])
    model = models[0].eval()
    assert isinstance(model, BlockwiseTransformerModel) and model.block_size == 3
    base = checkpoint_utils.load_model_ensemble([str(base_ckpt)])[0][0].eval()
    base_sd, sd = base.state_dict(), model.state_dict()
    same = [torch.equal(sd[n], base_sd[n]) for n in base_sd]
    assert all(same) if variant == "frozen" else not all(same)
    assert sd["decoder.blockwise_head.fc2.weight"].abs().sum() > 0  # the new layer trained

    task = tasks.setup_task(cfg.task)
    b = _batch(task, 4, split="test")
    with torch.no_grad():
        f, _ = model(**b["net_input"], features_only=True)
        H = model.heads_from_features(f)
        logits, _ = model(**b["net_input"])
    B, T = b["target"].shape
    assert H.shape == (B, T, 3, len(task.target_dictionary))
    assert torch.equal(H[:, :, 0], model.score_logits(f)) and torch.equal(H[:, :, 0], logits)
    if variant == "frozen":
        assert torch.equal(logits, base(**b["net_input"])[0])
