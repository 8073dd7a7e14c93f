"""Criterion ``glat_block_loss``: GAD's NAT drafter loss with glancing (GLAT, Qian et al. 2021).

Per sentence (target ``y_1 .. y_m``, ``y_m`` = EOS):
  1. sample a prefix length ``p`` uniformly in ``0 .. m-1`` (capped so that BOS + p + k fits the decoder);
  2. decoder input ``[pad.., EOS(BOS), y_1..y_p, <mask> * k]`` (left-padded); block targets
     ``y_{p+1} .. y_{p+k}`` -- EOS is a normal target inside the block, positions past ``m`` get no loss;
  3. glancing (training only): a no-grad pass predicts the block, ``N`` = wrong predictions on valid positions,
     ``ceil(ratio * N)`` randomly chosen valid masked positions are revealed (mask -> gold token), with
     ``ratio`` annealed linearly from ``--glance-start`` to ``--glance-end`` over ``--glance-anneal-updates``;
  4. label-smoothed cross-entropy on the positions that are still masked (and valid).

A drafter trained with ``--first-from-prefix`` reads ``y_{p+1}`` at the last prefix column and ``y_{p+2} ..
y_{p+k}`` at ``k - 1`` masks, each mask standing for the token before the one it predicts (as in an AR decoder):
its input is ``[.., y_p, <mask> * (k-1)]`` and glancing reveals ``y_{p+j}`` in mask ``j``, so the prediction of
``y_{p+j}`` (which may attend to that mask) gets no loss; ``y_{p+k}`` has no mask of its own and is never revealed.
"""

import math
from dataclasses import dataclass, field
from typing import Optional, Tuple

import torch
from torch import Tensor

from fairseq import utils
from fairseq.logging import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.dataclass import FairseqDataclass
from omegaconf import II

from fastdec_fairseq.models.nat_block_drafter import check_block_size


@dataclass
class GlatBlockLossConfig(FairseqDataclass):
    label_smoothing: float = field(default=0.1, metadata={"help": "label smoothing epsilon (paper: 0.1)"})
    glance_start: float = field(default=0.5, metadata={"help": "glancing ratio at update 0 (GLAT: 0.5)"})
    glance_end: float = field(default=0.3, metadata={"help": "glancing ratio after annealing (GLAT: 0.3)"})
    glance_anneal_updates: int = field(
        default=300000,
        metadata={"help": "updates over which the glancing ratio goes linearly from start to end"},
    )
    sentence_avg: bool = II("optimization.sentence_avg")


# ---------------------------------------------------------------------- pure helpers (unit-tested)


def sample_prefix_lengths(target: Tensor, pad: int, max_prefix: Optional[int] = None,
                          generator: Optional[torch.Generator] = None) -> Tensor:
    """p_i ~ U{0 .. m_i - 1} (m_i = target length incl. EOS), capped at ``max_prefix``; LongTensor[B]."""
    m = target.ne(pad).sum(1)
    if bool((m < 1).any()):
        raise ValueError("empty target sentence (needs at least EOS)")
    hi = m - 1
    if max_prefix is not None:
        hi = hi.clamp(max=max_prefix)
    u = torch.rand(target.size(0), generator=generator,
                   device="cpu" if generator is not None else target.device).to(target.device)
    p = torch.floor(u * (hi + 1).to(u.dtype)).long()
    return torch.minimum(p, hi)


def build_block_inputs(target: Tensor, prefix_len: Tensor, k: int, pad: int, eos: int,
                       mask: int, num_masks: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """Left-padded decoder input [B, 1 + max(p) + num_masks] and block targets [B, k] (pad = no loss).

    ``target`` is fairseq's right-padded target (``y_1 .. y_m`` with ``y_m`` = EOS); ``num_masks`` defaults to
    ``k`` (``k - 1`` for a ``--first-from-prefix`` drafter).
    """
    bsz, tlen = target.shape
    m = target.ne(pad).sum(1)
    P = int(prefix_len.max()) if bsz > 0 else 0
    ar = torch.arange(P + 1, device=target.device).unsqueeze(0)  # columns of the BOS+prefix region
    j = ar - (P - prefix_len).unsqueeze(1)  # 0 -> BOS, >=1 -> y_j, <0 -> pad
    gathered = target.gather(1, (j - 1).clamp(min=0, max=tlen - 1))
    prefix = torch.where(j >= 1, gathered, torch.full_like(gathered, pad))
    prefix = torch.where(j == 0, torch.full_like(prefix, eos), prefix)
    masks = target.new_full((bsz, k if num_masks is None else num_masks), mask)
    decoder_input = torch.cat([prefix, masks], dim=1)

    pos = prefix_len.unsqueeze(1) + torch.arange(k, device=target.device).unsqueeze(0)  # 0-based index of y
    block_target = target.gather(1, pos.clamp(max=tlen - 1))
    block_target = block_target.masked_fill(pos >= m.unsqueeze(1), pad)
    return decoder_input, block_target


def glance_ratio(num_updates: int, start: float, end: float, anneal_updates: int) -> float:
    if anneal_updates <= 0:
        return end
    frac = min(max(num_updates, 0) / anneal_updates, 1.0)
    return start + (end - start) * frac


def glance_reveal(pred: Tensor, block_target: Tensor, pad: int, ratio: float,
                  generator: Optional[torch.Generator] = None,
                  revealable: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """GLAT glancing over a block: returns ``(reveal BoolTensor[B, k], n_wrong LongTensor[B])``.

    ``n_wrong`` counts wrong predictions on valid (non-pad target) positions; ``ceil(ratio * n_wrong)``
    valid positions, chosen uniformly at random, are revealed (only among ``revealable`` [k] ones, if given).
    """
    valid = block_target.ne(pad)
    n_wrong = (pred.ne(block_target) & valid).sum(1)
    if revealable is not None:
        valid = valid & revealable.to(valid.device).unsqueeze(0)
    # tiny epsilon so that e.g. 0.3 * 10 = 3.0000000000000004 does not ceil to 4
    n_reveal = torch.ceil(n_wrong.double() * ratio - 1e-6).clamp(min=0).long()
    scores = torch.rand(block_target.shape, generator=generator,
                        device="cpu" if generator is not None else block_target.device).to(block_target.device)
    scores = scores.masked_fill(~valid, 2.0)  # invalid positions sort last
    rank = scores.argsort(dim=1).argsort(dim=1)
    reveal = (rank < n_reveal.unsqueeze(1)) & valid
    return reveal, n_wrong


# ---------------------------------------------------------------------- criterion


@register_criterion("glat_block_loss", dataclass=GlatBlockLossConfig)
class GlatBlockLoss(FairseqCriterion):
    def __init__(self, task, label_smoothing=0.1, glance_start=0.5, glance_end=0.3,
                 glance_anneal_updates=300000, sentence_avg=False):
        super().__init__(task)
        if not hasattr(task, "mask_idx") or not hasattr(task, "block_size"):
            raise ValueError("criterion glat_block_loss needs --task block_drafting (mask symbol, --block-size)")
        for name, r in (("--glance-start", glance_start), ("--glance-end", glance_end)):
            if not 0.0 <= r <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {r}")
        self.block_size = check_block_size(task.block_size, None)
        self.mask_idx = task.mask_idx
        self.eos_idx = task.target_dictionary.eos()
        self.eps = label_smoothing
        self.glance_start, self.glance_end = glance_start, glance_end
        self.glance_anneal_updates = glance_anneal_updates
        self.sentence_avg = sentence_avg

    def current_ratio(self, model) -> float:
        return glance_ratio(int(getattr(model, "num_updates", 0) or 0), self.glance_start, self.glance_end,
                            self.glance_anneal_updates)

    def forward(self, model, sample, reduce=True):
        k = self.block_size
        pad = self.padding_idx
        target = sample["target"]
        max_pos = model.max_decoder_positions()
        check_block_size(k, max_pos)
        gen = None
        if not model.training:  # deterministic prefixes for validation, so valid loss is comparable
            gen = torch.Generator().manual_seed(int(sample["id"].sum().item()) % (2 ** 31))
        prefix_len = sample_prefix_lengths(target, pad, max_prefix=max_pos - 1 - k, generator=gen)
        n_masks = model.num_masks(k) if hasattr(model, "num_masks") else k
        decoder_input, block_target = build_block_inputs(target, prefix_len, k, pad, self.eos_idx, self.mask_idx,
                                                         num_masks=n_masks)
        valid = block_target.ne(pad)
        # the block position whose gold token glancing may show: the one in its own mask (none for y_{p+k} when the
        # first token is read at the prefix: mask j then stands for y_{p+j}, the token before the one it predicts)
        revealable = torch.arange(k, device=target.device) < n_masks

        ratio = self.current_ratio(model) if model.training else 0.0
        state = {}

        def glance_fn(dec_in: Tensor, first_logits: Tensor) -> Tensor:
            pred = first_logits.argmax(-1)
            reveal, n_wrong = glance_reveal(pred, block_target, pad, ratio, revealable=revealable)
            state.update(reveal=reveal, n_wrong=n_wrong, pred=pred)
            out = dec_in.clone()
            if n_masks > 0:
                out[:, -n_masks:] = torch.where(reveal[:, :n_masks], block_target[:, :n_masks], dec_in[:, -n_masks:])
            return out

        net_input = sample["net_input"]
        logits, _ = model(net_input["src_tokens"], net_input["src_lengths"], decoder_input,
                          block_size=k, glance_fn=glance_fn if ratio > 0 else None)

        reveal = state.get("reveal", torch.zeros_like(valid))
        loss_mask = valid & ~reveal
        lprobs = utils.log_softmax(logits, dim=-1, onnx_trace=False)
        loss_target = block_target.masked_fill(~loss_mask, pad)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), loss_target.view(-1), self.eps, ignore_index=pad, reduce=reduce
        )
        n_loss = int(loss_mask.sum())
        with torch.no_grad():
            pred = state["pred"] if "pred" in state else logits.argmax(-1)
            n_correct = int((pred.eq(block_target) & valid).sum())
        sample_size = target.size(0) if self.sentence_avg else n_loss
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": target.size(0),
            "sample_size": sample_size,
            "n_loss_tokens": n_loss,
            "n_block_tokens": int(valid.sum()),
            "n_correct": n_correct,
            "n_revealed": int(reveal.sum()),
            "glance_ratio": ratio * target.size(0),  # summable; averaged over sentences in reduce_metrics
        }
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        loss_sum, nll_sum = total("loss"), total("nll_loss")
        sample_size, n_loss = total("sample_size"), total("n_loss_tokens")
        n_block, n_correct, n_rev = total("n_block_tokens"), total("n_correct"), total("n_revealed")
        metrics.log_scalar("loss", loss_sum / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", nll_sum / max(n_loss, 1) / math.log(2), n_loss, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))
        metrics.log_scalar("block_acc", n_correct / max(n_block, 1), n_block, round=4)
        metrics.log_scalar("reveal_frac", n_rev / max(n_block, 1), n_block, round=4)
        metrics.log_scalar("glance_ratio", total("glance_ratio") / max(total("nsentences"), 1), weight=0,
                           round=4)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
