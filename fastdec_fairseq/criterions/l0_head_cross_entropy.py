"""L0 head-pruning loss of Voita et al. (2019) as used by Hsu et al. (2020), Eq. 3-4: ``L_xent + lambda * L_c``.

``L_c = sum_i (1 - P(g_i = 0 | phi_i))`` over the Hard Concrete gate of every head of an ``efficient_student``
built with ``--head-gates`` (encoder self-attention, encoder-decoder attention, standard decoder self-attention).
fairseq's label-smoothed loss is a *sum* over the batch's tokens that the trainer divides by ``sample_size``, so the
penalty is added as ``lambda * L_c * sample_size``: lambda then weighs L_c against the per-token cross-entropy, as in
the paper. Logged: ``l0`` (L_c, the expected number of open heads) and ``open_heads`` (heads whose deterministic
gate is > 0, i.e. that pruning would keep).
"""

from dataclasses import dataclass, field

import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (LabelSmoothedCrossEntropyCriterion,
                                                             LabelSmoothedCrossEntropyCriterionConfig)
from fairseq.logging import metrics


@dataclass
class L0HeadCrossEntropyConfig(LabelSmoothedCrossEntropyCriterionConfig):
    l0_lambda: float = field(default=0.01, metadata={"help": "lambda of Eq. 4: weight of the L0 penalty L_c (>= 0)"})


@register_criterion("l0_head_cross_entropy", dataclass=L0HeadCrossEntropyConfig)
class L0HeadCrossEntropyCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 l0_lambda=0.01):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        if not l0_lambda >= 0:
            raise ValueError(f"--l0-lambda must be >= 0 (the weight of the L0 penalty), got {l0_lambda}")
        self.l0_lambda = float(l0_lambda)

    def forward(self, model, sample, reduce=True):
        loss, sample_size, logging_output = super().forward(model, sample, reduce)
        gates = model.head_gates() if hasattr(model, "head_gates") else []
        if not gates:
            raise ValueError("criterion l0_head_cross_entropy needs a model with head gates: "
                             "--arch efficient_student* --head-gates")
        l0 = torch.stack([g.expected_open() for g in gates]).sum()
        loss = loss + self.l0_lambda * l0 * sample_size
        with torch.no_grad():
            was = [g.training for g in gates]
            for g in gates:
                g.eval()
            open_heads = sum(int((g() > 0).sum()) for g in gates)
            for g, w in zip(gates, was):
                g.train(w)
        logging_output.update(l0=float(l0.detach()), open_heads=open_heads, l0_batches=1)
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        n = sum(log.get("l0_batches", 0) for log in logging_outputs)
        if n:
            metrics.log_scalar("l0", sum(log.get("l0", 0) for log in logging_outputs) / n, n, round=2)
            metrics.log_scalar("open_heads", sum(log.get("open_heads", 0) for log in logging_outputs) / n, n,
                               round=1)
