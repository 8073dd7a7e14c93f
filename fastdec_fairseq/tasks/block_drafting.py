"""Task ``block_drafting``: train GAD's NAT block drafter on an ordinary translation data-bin.

Same data as ``translation`` (so the drafter trains on the Seq-KD data-bin of the AT verifier); the task adds a
``<mask>`` symbol to both dictionaries (kept equal, so ``--share-all-embeddings`` still works) and carries the
block size ``--block-size k`` used by the ``glat_block_loss`` criterion. When a model is built for training
(not when a trained checkpoint is loaded) and ``--init-encoder-from`` is set, the encoder and embeddings are
copied from that AT verifier checkpoint.
"""

import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fastdec_fairseq.models.nat_block_drafter import MASK_SYMBOL, check_block_size

logger = logging.getLogger(__name__)


@dataclass
class BlockDraftingConfig(TranslationConfig):
    block_size: int = field(
        default=25,
        metadata={"help": "number k of masked tokens the drafter predicts per pass (GAD: k=25 base, 30 big)"},
    )


@register_task("block_drafting", dataclass=BlockDraftingConfig)
class BlockDraftingTask(TranslationTask):
    cfg: BlockDraftingConfig

    def __init__(self, cfg: BlockDraftingConfig, src_dict, tgt_dict):
        check_block_size(cfg.block_size, cfg.max_target_positions)
        for d in {id(src_dict): src_dict, id(tgt_dict): tgt_dict}.values():
            if MASK_SYMBOL not in d.indices:
                d.add_symbol(MASK_SYMBOL)
        if src_dict.index(MASK_SYMBOL) != tgt_dict.index(MASK_SYMBOL):
            logger.warning("<mask> has different ids in the source and target dictionaries")
        super().__init__(cfg, src_dict, tgt_dict)
        self.mask_idx = tgt_dict.index(MASK_SYMBOL)
        self.block_size = cfg.block_size

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if not hasattr(model, "propose_block"):
            raise ValueError("--task block_drafting needs a nat_block_drafter model (--arch nat_block_drafter*)")
        check_block_size(self.cfg.block_size, model.max_decoder_positions())
        path = getattr(cfg, "init_encoder_from", None)
        if path and not from_checkpoint:
            model.init_encoder_from_checkpoint(path)
        return model

    def build_generator(self, models, args, **kwargs):
        raise NotImplementedError(
            "the NAT block drafter is not decoded with fairseq-generate; use "
            "fastdec.engine.nat_drafter.drafter_alone_decode or the fastdec GAD engine"
        )
