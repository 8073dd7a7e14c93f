"""GAD's NAT block drafter plugin: model ``nat_block_drafter``, task ``block_drafting``, criterion
``glat_block_loss`` (fastdec_fairseq) and the drafter-only decoder."""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
PLUGIN = REPO / "fastdec_fairseq"

import fastdec_fairseq  # noqa: E402,F401  (registers the plugin)
from fairseq import options, tasks  # noqa: E402
from fairseq.dataclass.utils import convert_namespace_to_omegaconf  # noqa: E402
from fairseq.models.transformer.transformer_decoder import TransformerDecoderBase  # noqa: E402

from fastdec_fairseq.criterions.glat_block_loss import (  # noqa: E402
    build_block_inputs, glance_ratio, glance_reveal, sample_prefix_lengths,
)
from fastdec_fairseq.models.nat_block_drafter import (  # noqa: E402
    MASK_SYMBOL, NATBlockDecoder, NATBlockDrafterModel, check_block_size,
)

PAD, EOS, MASK = 1, 2, 99


def _setup(databin, *extra, arch="nat_block_drafter_tiny", k=4):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        str(databin), "--user-dir", str(PLUGIN), "--task", "block_drafting", "--block-size", str(k),
        "--arch", arch, "--criterion", "glat_block_loss", "--cpu", "--dropout", "0.0", *extra,
    ])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    return cfg, task


@pytest.fixture(scope="module")
def built(tiny_databin):
    torch.manual_seed(0)
    cfg, task = _setup(tiny_databin, "--share-all-embeddings")
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("valid")
    ds = task.datasets["valid"]
    sample = ds.collater([ds[i] for i in range(8)])
    return cfg, task, model, criterion, sample


# ---------------------------------------------------------------------- model


def test_model_builds_with_mask_symbol(built):
    cfg, task, model, criterion, _ = built
    assert isinstance(model, NATBlockDrafterModel)
    assert isinstance(model.decoder, NATBlockDecoder)
    d = task.target_dictionary
    assert MASK_SYMBOL in d.indices and task.source_dictionary.index(MASK_SYMBOL) == d.index(MASK_SYMBOL)
    assert model.mask_idx == task.mask_idx == d.index(MASK_SYMBOL)
    assert model.decoder.embed_tokens.weight.shape[0] == len(d)
    assert task.block_size == 4 and criterion.block_size == 4


@pytest.mark.parametrize("arch,dims", [
    ("nat_block_drafter_base", (6, 6, 512, 2048, 8, 8)),  # Transformer-base (GAD Section 5.1)
    ("nat_block_drafter", (6, 6, 512, 2048, 8, 8)),
    ("nat_block_drafter_big", (6, 6, 1024, 4096, 16, 16)),
    ("nat_block_drafter_demo", (3, 3, 256, 1024, 4, 4)),
    ("nat_block_drafter_tiny", (2, 2, 64, 128, 2, 2)),
])
def test_arch_sizes(tiny_databin, arch, dims):
    cfg, task = _setup(tiny_databin, arch=arch)
    m = cfg.model
    assert (m.encoder_layers, m.decoder_layers, m.encoder_embed_dim, m.encoder_ffn_embed_dim,
            m.encoder_attention_heads, m.decoder_attention_heads) == dims


def test_decoder_self_attention_is_bidirectional(built):
    _, task, model, _, sample = built
    model.eval()
    src = sample["net_input"]["src_tokens"][:1]
    enc = model.encode(src)
    t = sample["target"][0]
    m = model.mask_idx
    a = torch.tensor([[EOS, int(t[0]), int(t[1]), m, m, m]])
    b = a.clone()
    b[0, -1] = int(t[4])  # change only the LAST (mask) position input
    with torch.no_grad():
        fa, _ = model.decoder.extract_features(a, encoder_out=enc)
        fb, _ = model.decoder.extract_features(b, encoder_out=enc)
        # every earlier position (prefix and earlier masks) sees the change
        diff = (fa[0, :-1] - fb[0, :-1]).abs().amax(-1)
        assert bool((diff > 1e-4).all()), diff
        # control: with the causal mask of a standard AT decoder the earlier outputs would not change
        ca, _ = TransformerDecoderBase.extract_features_scriptable(model.decoder, a, enc)
        cb, _ = TransformerDecoderBase.extract_features_scriptable(model.decoder, b, enc)
        assert torch.allclose(ca[0, :-1], cb[0, :-1], atol=1e-5)


def test_propose_block_is_padding_invariant(built):
    _, task, model, _, sample = built
    model.eval()
    src = sample["net_input"]["src_tokens"][:3]
    tgt = sample["target"][:3]
    enc = model.encode(src)
    lens = [1, 3, 5]  # prefix lengths (excluding BOS)
    # right-padded batch of prefixes with BOS
    pref = torch.full((3, 1 + max(lens)), PAD, dtype=torch.long)
    for i, n in enumerate(lens):
        pref[i, 0] = EOS
        pref[i, 1:1 + n] = tgt[i, :n]
    toks, lprobs = model.propose_block(enc, pref, 4, return_logprobs=True)
    assert toks.shape == (3, 4) and toks.dtype == torch.long and lprobs.shape[:2] == (3, 4)
    for i, n in enumerate(lens):
        enc_i = model.reorder_encoder_out(enc, torch.tensor([i]))
        single = model.propose_block(enc_i, pref[i:i + 1, :1 + n], 4, return_logprobs=True)[1]
        assert torch.allclose(lprobs[i], single[0], atol=1e-4)
    # prefix None == BOS only
    assert torch.equal(model.propose_block(enc, None, 4),
                       model.propose_block(enc, torch.full((3, 1), EOS), 4))


def test_block_size_errors(built, tiny_databin):
    _, task, model, _, _ = built
    with pytest.raises(ValueError, match=">= 1"):
        check_block_size(0, 100)
    with pytest.raises(ValueError, match="max_target_positions"):
        check_block_size(100, 100)
    assert check_block_size(99, 100) == 99
    enc = model.encode(torch.tensor([[5, 6, EOS]]))
    with pytest.raises(ValueError, match=">= 1"):
        model.propose_block(enc, None, 0)
    with pytest.raises(ValueError, match="max_target_positions"):
        model.propose_block(enc, None, model.max_decoder_positions())
    with pytest.raises(ValueError, match=">= 1"):
        _setup(tiny_databin, k=0)
    with pytest.raises(ValueError, match="max_target_positions"):
        _setup(tiny_databin, "--max-target-positions", "8", k=8)
    cfg, task2 = _setup(tiny_databin, "--decoder-learned-pos", "--max-target-positions", "6", k=4)
    m2 = task2.build_model(cfg.model)  # BOS + 4 masks fit in 6 positions
    with pytest.raises(ValueError, match="exceeds"):
        m2.propose_block(m2.encode(torch.tensor([[5, EOS]])), torch.tensor([[EOS, 5, 6]]), 4)


# ---------------------------------------------------------------------- masking / prefix sampling / glancing


def test_build_block_inputs_masks_prefix_and_eos():
    # targets (right padded, ending with EOS): m = 5 and m = 3
    tgt = torch.tensor([[10, 11, 12, 13, EOS], [20, 21, EOS, PAD, PAD]])
    p = torch.tensor([1, 2])
    dec, blk = build_block_inputs(tgt, p, 4, PAD, EOS, MASK)
    assert dec.tolist() == [[PAD, EOS, 10, MASK, MASK, MASK, MASK],
                            [EOS, 20, 21, MASK, MASK, MASK, MASK]]
    # EOS is a normal target inside the block; positions past the end are PAD (= no loss)
    assert blk.tolist() == [[11, 12, 13, EOS], [EOS, PAD, PAD, PAD]]
    # p = 0: BOS + k masks; p = m - 1: only EOS left to predict
    dec, blk = build_block_inputs(tgt, torch.tensor([0, 0]), 2, PAD, EOS, MASK)
    assert dec.tolist() == [[EOS, MASK, MASK], [EOS, MASK, MASK]]
    assert blk.tolist() == [[10, 11], [20, 21]]
    dec, blk = build_block_inputs(tgt, torch.tensor([4, 0]), 3, PAD, EOS, MASK)
    assert dec.tolist() == [[EOS, 10, 11, 12, 13, MASK, MASK, MASK],
                            [PAD, PAD, PAD, PAD, EOS, MASK, MASK, MASK]]
    assert blk.tolist() == [[EOS, PAD, PAD], [20, 21, EOS]]


def test_build_block_inputs_first_from_prefix():
    """k - 1 masks: the first block token is read at the last prefix column (y_p, or BOS when p = 0)."""
    tgt = torch.tensor([[10, 11, 12, 13, EOS], [20, 21, EOS, PAD, PAD]])
    dec, blk = build_block_inputs(tgt, torch.tensor([1, 2]), 4, PAD, EOS, MASK, num_masks=3)
    assert dec.tolist() == [[PAD, EOS, 10, MASK, MASK, MASK], [EOS, 20, 21, MASK, MASK, MASK]]
    assert blk.tolist() == [[11, 12, 13, EOS], [EOS, PAD, PAD, PAD]]
    dec, blk = build_block_inputs(tgt, torch.tensor([0, 0]), 1, PAD, EOS, MASK, num_masks=0)
    assert dec.tolist() == [[EOS], [EOS]] and blk.tolist() == [[10], [20]]


def test_sample_prefix_lengths_uniform_in_range():
    tgt = torch.tensor([[10, 11, 12, 13, EOS], [20, EOS, PAD, PAD, PAD], [30, 31, 32, 33, EOS]])
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([sample_prefix_lengths(tgt, PAD, generator=g) for _ in range(2000)])
    assert set(draws[:, 0].tolist()) == {0, 1, 2, 3, 4}  # 0 .. m-1, m = 5 incl. EOS
    assert set(draws[:, 1].tolist()) == {0, 1}
    counts = torch.bincount(draws[:, 0], minlength=5).float()
    assert float(counts.min()) > 0.8 * 400 and float(counts.max()) < 1.2 * 400
    capped = torch.stack([sample_prefix_lengths(tgt, PAD, max_prefix=2, generator=g) for _ in range(300)])
    assert int(capped.max()) == 2 and int(capped[:, 1].max()) == 1


def test_glance_reveal_counts():
    g = torch.Generator().manual_seed(0)
    blk = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
                        [5, 6, 7, EOS, PAD, PAD, PAD, PAD, PAD, PAD],
                        [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    pred = blk.clone()
    pred[0] = 0  # 10 wrong
    pred[1, :4] = torch.tensor([5, 0, 0, 0])  # 3 wrong among the 4 valid; wrong "predictions" past the end
    pred[1, 4:] = 3  # ... do not count
    # row 2: all correct
    for ratio, expect in [(0.5, [5, 2, 0]), (0.3, [3, 1, 0]), (0.0, [0, 0, 0]), (1.0, [10, 3, 0])]:
        for _ in range(20):
            reveal, n_wrong = glance_reveal(pred, blk, PAD, ratio, generator=g)
            assert n_wrong.tolist() == [10, 3, 0]
            assert reveal.sum(1).tolist() == expect
            assert not bool((reveal & blk.eq(PAD)).any())  # only real (in-sentence) positions revealed
    # revealed positions are random among the valid ones
    seen = torch.zeros(10)
    for _ in range(200):
        seen += glance_reveal(pred, blk, PAD, 0.3, generator=g)[0][0].float()
    assert bool((seen > 0).all())


def test_glance_reveal_only_revealable_positions():
    g = torch.Generator().manual_seed(1)
    blk = torch.tensor([[5, 6, 7, 8], [5, 6, EOS, PAD]])
    pred = torch.zeros_like(blk)  # every valid position wrong
    revealable = torch.tensor([True, True, True, False])  # the last block token has no mask of its own
    for _ in range(50):
        reveal, n_wrong = glance_reveal(pred, blk, PAD, 1.0, generator=g, revealable=revealable)
        assert n_wrong.tolist() == [4, 3]  # the count is over all valid positions
        assert reveal.tolist() == [[True, True, True, False], [True, True, True, False]]


def test_glance_ratio_anneals_linearly():
    assert glance_ratio(0, 0.5, 0.3, 100) == 0.5
    assert math.isclose(glance_ratio(50, 0.5, 0.3, 100), 0.4)
    assert math.isclose(glance_ratio(100, 0.5, 0.3, 100), 0.3)
    assert math.isclose(glance_ratio(10_000, 0.5, 0.3, 100), 0.3)


def test_criterion_glancing_and_loss_positions(built):
    _, task, model, criterion, sample = built
    torch.manual_seed(1)
    model.train()
    model.set_num_updates(0)
    loss, sample_size, log = criterion(model, sample)
    assert torch.isfinite(loss) and log["glance_ratio"] == pytest.approx(0.5 * log["nsentences"])
    assert log["n_loss_tokens"] + log["n_revealed"] == log["n_block_tokens"] == sample_size + log["n_revealed"]
    assert log["n_revealed"] > 0  # untrained model: many wrong -> some revealed
    loss.backward()
    assert model.decoder.layers[0].self_attn.q_proj.weight.grad is not None
    model.zero_grad()
    model.set_num_updates(10 ** 9)
    log = criterion(model, sample)[2]
    assert log["glance_ratio"] == pytest.approx(0.3 * log["nsentences"])
    # validation: no glancing, deterministic prefixes
    model.eval()
    with torch.no_grad():
        l1, _, log1 = criterion(model, sample)
        l2, _, _ = criterion(model, sample)
    assert log1["n_revealed"] == 0 and log1["n_loss_tokens"] == log1["n_block_tokens"]
    assert torch.equal(l1, l2)


def test_init_encoder_from_at_checkpoint(tiny_databin, tmp_path):
    # an AT verifier checkpoint with the same dictionary (no <mask>) and encoder shape
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(tiny_databin), "--task", "translation", "--arch",
                                                "transformer", "--encoder-embed-dim", "64",
                                                "--encoder-ffn-embed-dim", "128", "--encoder-layers", "2",
                                                "--encoder-attention-heads", "2", "--decoder-layers", "1",
                                                "--decoder-attention-heads", "2", "--cpu"])
    at_cfg = convert_namespace_to_omegaconf(args)
    at_task = tasks.setup_task(at_cfg.task)
    at = at_task.build_model(at_cfg.model)
    ckpt = tmp_path / "at.pt"
    torch.save({"model": at.state_dict(), "cfg": {"task": {"data": str(tiny_databin), "target_lang": "tgt"}},
                "optimizer_history": [{"criterion_name": "x", "optimizer_name": "adam",
                                       "lr_scheduler_state": {}, "num_updates": 0}],
                "extra_state": {"train_iterator": None}}, ckpt)
    cfg, task = _setup(tiny_databin, "--init-encoder-from", str(ckpt))
    drafter = task.build_model(cfg.model)
    at_sd, d_sd = at.state_dict(), drafter.state_dict()
    for key in ("encoder.layers.1.fc1.weight", "encoder.layers.0.self_attn.k_proj.weight"):
        assert torch.equal(d_sd[key], at_sd[key])
    n = at_sd["encoder.embed_tokens.weight"].shape[0]
    assert d_sd["encoder.embed_tokens.weight"].shape[0] == n + 1  # + <mask>
    assert torch.equal(d_sd["encoder.embed_tokens.weight"][:n], at_sd["encoder.embed_tokens.weight"])
    assert torch.equal(d_sd["decoder.embed_tokens.weight"][:n], at_sd["decoder.embed_tokens.weight"])
    # not applied when a trained drafter is loaded (from_checkpoint=True)
    again = task.build_model(cfg.model, from_checkpoint=True)
    assert not torch.equal(again.state_dict()["encoder.layers.1.fc1.weight"], at_sd["encoder.layers.1.fc1.weight"])
    # encoder shape mismatch -> clear error
    cfg_big, task_big = _setup(tiny_databin, "--init-encoder-from", str(ckpt), "--encoder-ffn-embed-dim", "96")
    with pytest.raises(ValueError, match="shape mismatch"):
        task_big.build_model(cfg_big.model)


# ---------------------------------------------------------------------- real fairseq-train run


def _losses(text, tag):
    return [float(x) for x in re.findall(rf"\| {tag} \|.*?\bloss[= ]([0-9.]+)", text)]


@pytest.mark.slow  # runs fairseq-train / Snakemake itself
def test_fairseq_train_then_load_and_decode(tiny_databin, tmp_path):
    save = tmp_path / "ckpt"
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", OMP_NUM_THREADS="1")
    cmd = [str(BIN / "fairseq-train"), str(tiny_databin), "--user-dir", str(PLUGIN),
           "--task", "block_drafting", "--block-size", "4", "--arch", "nat_block_drafter_tiny",
           "--share-all-embeddings", "--criterion", "glat_block_loss", "--label-smoothing", "0.1",
           "--glance-start", "0.5", "--glance-end", "0.3", "--glance-anneal-updates", "100",
           "--optimizer", "adam", "--adam-betas", "(0.9,0.999)", "--lr", "5e-3", "--lr-scheduler",
           "inverse_sqrt", "--warmup-updates", "10", "--dropout", "0.0", "--max-tokens", "600",
           "--max-update", "100", "--cpu", "--seed", "1", "--save-dir", str(save), "--no-epoch-checkpoints",
           "--save-interval", "1000", "--validate-interval", "1000", "--log-format", "simple",
           "--log-interval", "10", "--num-workers", "0", "--no-progress-bar"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    inner = _losses(out, "train_inner")
    assert len(inner) >= 8, out[-3000:]
    assert sum(inner[-2:]) / 2 < sum(inner[:2]) / 2 - 0.5, inner
    assert "glance_ratio" in out and "block_acc" in out
    ckpt = save / "checkpoint_last.pt"
    assert ckpt.is_file()

    from fairseq import checkpoint_utils

    models, cfg = checkpoint_utils.load_model_ensemble([str(ckpt)])
    model = models[0]
    assert isinstance(model, NATBlockDrafterModel) and cfg.task.block_size == 4
    model.eval()
    _, task = _setup(tiny_databin)
    task.load_dataset("test")
    ds = task.datasets["test"]
    batch = ds.collater([ds[i] for i in range(6)])
    src = batch["net_input"]["src_tokens"]
    enc = model.encode(src, batch["net_input"]["src_lengths"])
    first = model.propose_block(enc, None, 4)
    assert first.shape == (6, 4)
    # the trained drafter alone, through the engine (fastdec.engine.nat_drafter)
    from fastdec.engine.nat_drafter import NATDrafter, drafter_alone_decode

    drafter = NATDrafter(model, k=4)
    for row, f in zip(src, first):
        r = drafter_alone_decode(drafter, row[row.ne(PAD)], 20)
        toks = r.tokens
        assert toks[-1] == EOS and EOS not in toks[:-1] and 1 <= len(toks) <= 21
        n = min(len(toks) - 1, 4)
        assert toks[:n] == f[:n].tolist()  # first block = one propose_block call
        assert r.stats.iterations == (len(toks) - 1) // 4 + 1 or len(toks) == 21
        assert r.stats.time_encoder > 0 and r.stats.time_modules["drafter_decoder"] > 0
    assert not model.training


def test_criterion_first_from_prefix_glances_into_masks_only(tiny_databin):
    """With --first-from-prefix the criterion feeds k - 1 masks, reveals gold tokens only in masks (never the last
    block token, which has none) and leaves the revealed positions out of the loss."""
    torch.manual_seed(0)
    cfg, task = _setup(tiny_databin, "--share-all-embeddings", "--drafter-attention", "prefix-causal",
                       "--first-from-prefix")
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    assert model.first_from_prefix and model.num_masks(4) == 3
    task.load_dataset("valid")
    ds = task.datasets["valid"]
    sample = ds.collater([ds[i] for i in range(8)])
    seen = {}
    real_forward = model.forward

    def spy(*args, **kwargs):
        logits, extra = real_forward(*args, **kwargs)
        seen["input"], seen["logits"] = extra["decoder_input"], logits
        return logits, extra

    model.forward = spy
    model.train()
    model.set_num_updates(0)
    loss, sample_size, log = criterion(model, sample)
    assert torch.isfinite(loss) and seen["logits"].shape[1] == 4
    dec = seen["input"]
    assert int(dec[:, -3:].eq(model.mask_idx).sum()) + log["n_revealed"] == 3 * dec.size(0)
    assert not bool(dec[:, :-3].eq(model.mask_idx).any())  # the column before the masks is a real token
    assert log["n_loss_tokens"] + log["n_revealed"] == log["n_block_tokens"] and log["n_revealed"] > 0
    loss.backward()


@pytest.mark.slow  # runs fairseq-train / Snakemake itself
@pytest.mark.parametrize("first_from_prefix", [False, True])
def test_fairseq_train_cheap_drafter_keeps_the_verifier_encoder(tiny_databin, tmp_path, first_from_prefix):
    """--drafter-attention prefix-causal --freeze-encoder, started from an AT model (--finetune-from-model via the
    workflow's init_drafter): fairseq-train learns, the encoder stays the AT model's (the <mask> row trains), and the
    engine then reads the AT verifier's encoder output and drafts exactly what fairseq's full forward drafts; also
    with the first drafted token read at the last prefix position (--first-from-prefix)."""
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", OMP_NUM_THREADS="1")
    common = ["--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-3", "--lr-scheduler", "inverse_sqrt",
              "--warmup-updates", "10", "--dropout", "0.0", "--max-tokens", "600", "--cpu", "--seed", "1",
              "--no-epoch-checkpoints", "--save-interval", "1000", "--validate-interval", "1000",
              "--log-format", "simple", "--log-interval", "10", "--num-workers", "0", "--no-progress-bar",
              "--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64",
              "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
              "--encoder-attention-heads", "2", "--decoder-attention-heads", "2"]
    at_dir = tmp_path / "at"
    res = subprocess.run([str(BIN / "fairseq-train"), str(tiny_databin), "--arch", "transformer", "--max-update",
                          "20", "--save-dir", str(at_dir), *common], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    init = tmp_path / "init.pt"
    res = subprocess.run([sys.executable, "-m", "fastdec", "gad-init-drafter", "--verifier",
                          str(at_dir / "checkpoint_last.pt"), "--dict", str(tiny_databin / "dict.tgt.txt"),
                          "--output", str(init)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    save = tmp_path / "nat"
    res = subprocess.run([str(BIN / "fairseq-train"), str(tiny_databin), "--user-dir", str(PLUGIN), "--task",
                          "block_drafting", "--block-size", "4", "--arch", "nat_block_drafter",
                          "--criterion", "glat_block_loss", "--drafter-attention", "prefix-causal",
                          "--freeze-encoder", "--finetune-from-model", str(init), "--max-update", "60",
                          *(["--first-from-prefix"] if first_from_prefix else []),
                          "--save-dir", str(save), *common], capture_output=True, text=True, env=env, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    inner = _losses(out, "train_inner")
    assert len(inner) >= 5 and inner[-1] < inner[0] - 0.3, inner

    from fairseq import checkpoint_utils

    from fastdec.engine import Verifier, accept_top1, draft_verify_accept, greedy_decode
    from fastdec.engine.nat_drafter import NATDrafter, encoders_match

    (at,), _ = checkpoint_utils.load_model_ensemble([str(at_dir / "checkpoint_last.pt")])
    (nat,), _ = checkpoint_utils.load_model_ensemble([str(save / "checkpoint_last.pt")])
    start = torch.load(init, map_location="cpu", weights_only=False)["model"]
    assert nat.decoder.prefix_causal and nat.first_from_prefix == first_from_prefix
    assert encoders_match(nat.encoder, at.encoder)
    mask_row = nat.mask_idx
    assert not torch.equal(nat.decoder.embed_tokens.weight[mask_row], start["decoder.embed_tokens.weight"][mask_row])
    assert not torch.equal(nat.decoder.layers[0].fc1.weight, start["decoder.layers.0.fc1.weight"])
    ver = Verifier(at.eval())
    drafter = NATDrafter(nat, k=4, verifier_vocab_size=ver.vocab_size)
    assert drafter.share_encoder_with(ver) and drafter.prefix_causal
    _, task = _setup(tiny_databin)
    task.load_dataset("test")
    full = NATDrafter(nat, k=4, fast=False)
    for i in range(5):
        src = task.datasets["test"][i]["source"]
        r = draft_verify_accept(ver, src, drafter, accept_top1, max_len_a=1.2, max_len_b=10)
        assert r.tokens == greedy_decode(ver, src, max_len_a=1.2, max_len_b=10).tokens
        enc = full.encode(src)
        prefix = [EOS] + r.tokens[:3]
        assert torch.equal(drafter.block(ver.encoder_out, prefix), full.block(enc, prefix))
