"""``blockwise_cross_entropy``: training loss of Stern et al.'s combined scoring and proposal model.

Sub-loss i (i = 1..k) is the label-smoothed cross entropy of head p_i against the target shifted left by
i - 1: at decoder position t, p_i predicts target[t + i - 1]; positions whose shifted target falls past the
end of the sentence (or on padding) are ignored.  Training: per mini-batch ONE sub-loss is picked uniformly
at random (the paper's memory trick, Sec. 6: an unbiased estimate of the mean of the k sub-losses), so only
one [B, T, V] logit tensor is materialised.  Heads whose loss cannot change (p_1 when the base is frozen and
p_1 is on the identity path) are left out of the draw: the estimate then equals the mean over the trainable
sub-losses, which is the full objective up to a constant factor.  ``--fixed-head I`` trains one head only,
``--all-heads`` uses the mean of all (trainable) sub-losses each batch.  Validation always scores all k heads.

Logged: ``loss``/``nll_loss`` (per target token of the heads used), ``head`` (mean index of the drawn head
over the log interval), and per head ``nll_h{i}`` and ``acc_h{i}`` (top-1 accuracy of p_i, in %) whenever
head i was used.  Works with the standard ``translation`` task and a ``blockwise_transformer`` model.
"""
import math
from dataclasses import dataclass, field
from typing import List

import torch
from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)
from fairseq.logging import metrics


def shift_target(target: torch.Tensor, offset: int, pad: int) -> torch.Tensor:
    """Target of head i = offset + 1: ``out[:, t] = target[:, t + offset]``; pad past the end and at pad positions."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    if offset == 0:
        return target
    out = target.new_full(target.shape, pad)
    length = target.size(1)
    if offset < length:
        out[:, : length - offset] = target[:, offset:]
    return out.masked_fill(target.eq(pad), pad)


@dataclass
class BlockwiseCrossEntropyCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    fixed_head: int = field(
        default=0,
        metadata={"help": "train only head I (1..k); 0 = draw one head uniformly at random per mini-batch"},
    )
    all_heads: bool = field(
        default=False,
        metadata={"help": "train on the mean of all k sub-losses each mini-batch (k x the output memory)"},
    )


@register_criterion("blockwise_cross_entropy", dataclass=BlockwiseCrossEntropyCriterionConfig)
class BlockwiseCrossEntropyCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 fixed_head=0, all_heads=False):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size=ignore_prefix_size,
                         report_accuracy=report_accuracy)
        if fixed_head < 0:
            raise ValueError(f"--fixed-head must be >= 0, got {fixed_head}")
        if fixed_head and all_heads:
            raise ValueError("--fixed-head and --all-heads are mutually exclusive")
        self.fixed_head = fixed_head
        self.all_heads = all_heads

    def _heads_for_batch(self, model) -> List[int]:
        k = model.block_size
        if not model.training:
            return list(range(1, k + 1))
        trainable = model.trainable_heads()
        if self.fixed_head:
            if self.fixed_head > k:
                raise ValueError(f"--fixed-head {self.fixed_head} but the model has --block-size {k}")
            if self.fixed_head not in trainable:
                raise ValueError(f"--fixed-head {self.fixed_head}: that head has no trainable parameters "
                                 f"(frozen base, p_1 on the identity path)")
            return [self.fixed_head]
        if self.all_heads:
            return trainable
        return [trainable[int(torch.randint(len(trainable), (1,)).item())]]

    def forward(self, model, sample, reduce=True):
        for attr in ("block_size", "head_logits", "trainable_heads"):
            if not hasattr(model, attr):
                raise TypeError("blockwise_cross_entropy needs a blockwise_transformer model "
                                f"(model {type(model).__name__} has no {attr!r})")
        k = model.block_size
        heads = self._heads_for_batch(model)
        if not reduce and len(heads) > 1:
            raise NotImplementedError("reduce=False is supported for a single head only")
        features, extra = model(**sample["net_input"], features_only=True)
        target = model.get_targets(sample, (features, extra))
        nsentences = target.size(0)

        logging_output = {"ntokens": sample["ntokens"], "nsentences": nsentences}
        total_loss, total_nll, total_tok, total_correct = 0.0, 0.0, 0, 0
        for i in range(1, k + 1):
            logging_output[f"nll_h{i}"] = 0.0
            logging_output[f"ntok_h{i}"] = 0
            logging_output[f"correct_h{i}"] = 0
        for i in heads:
            logits = model.head_logits(features, i)
            lprobs = model.get_normalized_probs((logits, extra), log_probs=True)
            tgt = shift_target(target, i - 1, self.padding_idx)
            if self.ignore_prefix_size > 0:
                lprobs = lprobs[:, self.ignore_prefix_size:, :]
                tgt = tgt[:, self.ignore_prefix_size:]
            lprobs = lprobs.reshape(-1, lprobs.size(-1))
            tgt = tgt.reshape(-1)
            loss, nll_loss = label_smoothed_nll_loss(lprobs, tgt, self.eps, ignore_index=self.padding_idx,
                                                     reduce=reduce)
            mask = tgt.ne(self.padding_idx)
            ntok = int(mask.sum().item())
            correct = int(lprobs.argmax(-1).eq(tgt).masked_select(mask).sum().item())
            total_loss = total_loss + loss
            total_nll = total_nll + nll_loss
            total_tok += ntok
            total_correct += correct
            logging_output[f"nll_h{i}"] = utils.item(nll_loss.sum().data) if reduce else 0.0
            logging_output[f"ntok_h{i}"] = ntok
            logging_output[f"correct_h{i}"] = correct

        sample_size = nsentences * len(heads) if self.sentence_avg else total_tok
        logging_output.update({
            "loss": total_loss.data,
            "nll_loss": total_nll.data,
            "ntokens_heads": total_tok,
            "sample_size": sample_size,
            "head_sum": heads[0] if (model.training and len(heads) == 1) else 0,
            "head_n": 1 if (model.training and len(heads) == 1) else 0,
        })
        if self.report_accuracy:
            logging_output["n_correct"] = total_correct
            logging_output["total"] = total_tok
        return total_loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        loss_sum, nll_sum = total("loss"), total("nll_loss")
        sample_size, ntok = total("sample_size"), total("ntokens_heads")
        metrics.log_scalar("loss", loss_sum / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", nll_sum / max(ntok, 1) / math.log(2), ntok, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))

        head_n = utils.item(total("head_n"))
        if head_n > 0:
            metrics.log_scalar("head", utils.item(total("head_sum")) / head_n, head_n, round=2)
        heads = sorted({int(key[len("ntok_h"):]) for log in logging_outputs for key in log
                        if key.startswith("ntok_h")})
        for i in heads:
            n = utils.item(total(f"ntok_h{i}"))
            if n > 0:
                metrics.log_scalar(f"nll_h{i}", utils.item(total(f"nll_h{i}")) / n / math.log(2), n, round=3)
                metrics.log_scalar(f"acc_h{i}", 100.0 * utils.item(total(f"correct_h{i}")) / n, n, round=2)

        n_total = utils.item(total("total"))
        if n_total > 0:
            metrics.log_scalar("total", n_total)
            metrics.log_scalar("n_correct", utils.item(total("n_correct")))
            metrics.log_derived(
                "accuracy",
                lambda meters: round(meters["n_correct"].sum * 100.0 / meters["total"].sum, 3)
                if meters["total"].sum > 0 else float("nan"),
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
