"""Draft -> verify -> accept decoding engine shared by greedy, IAD, GAD, GAD++ and Blockwise.

Public API (see docs/ARCHITECTURE.md and each module's docstring):

* :class:`Verifier` -- cached multi-token decoder forward over a fairseq Transformer, with rollback; what the loops
  need of a verifier: :class:`VerifierProtocol` (:mod:`fastdec.engine.interfaces`).
* :func:`draft_verify_accept` -- the loop; :func:`greedy_decode`; :class:`DecodeState`, :class:`DecodeResult`.
* drafters: :class:`Drafter` (base class), :class:`NoDrafter`, :class:`InputCopyDrafter` (IAD),
  :func:`make_drafter` (by name, from :data:`DRAFTERS`), :func:`register_drafter`.
* acceptance rules: :class:`AcceptanceRule` (base class), :data:`accept_top1`, :class:`accept_top_beta` (GAD++),
  :class:`accept_top_k`, :class:`accept_within_distance` (Blockwise, ordinal outputs), :class:`with_min_block`,
  :func:`make_acceptance`.
* :class:`DecodeStats` (corpus summaries: :mod:`fastdec.bench.results`).
* :class:`FairseqGenerator` -- fairseq's SequenceGenerator baseline; :func:`load_model`.
"""
from .acceptance import (AcceptanceRule, ExactRule, accept_top1, accept_top_beta, accept_top_k, accept_within_distance,
                         make_acceptance, ordinal_values, with_min_block)
from .drafters import (DRAFTERS, Drafter, InputCopyDrafter, NoDrafter, available_drafters, make_drafter,
                       register_drafter)
from .fairseq_baseline import BaselineResult, FairseqGenerator
from .interfaces import BatchedVerifierProtocol, GeneratorProtocol, VerifierProtocol
from .load import LoadedModel, load_model
from .loop import compute_max_len, draft_verify_accept, greedy_decode
from .state import DecodeResult, DecodeState
from .stats import DecodeStats
from .verifier import Verifier, VerifierOutput, resolve_device_dtype

__all__ = [
    "Verifier", "VerifierOutput", "resolve_device_dtype",
    "VerifierProtocol", "BatchedVerifierProtocol", "GeneratorProtocol",
    "draft_verify_accept", "greedy_decode", "compute_max_len", "DecodeState", "DecodeResult",
    "Drafter", "NoDrafter", "InputCopyDrafter", "DRAFTERS", "make_drafter", "register_drafter", "available_drafters",
    "AcceptanceRule", "ExactRule", "accept_top1", "accept_top_beta", "accept_top_k", "accept_within_distance", "ordinal_values",
    "with_min_block",
    "make_acceptance", "DecodeStats",
    "FairseqGenerator", "BaselineResult", "LoadedModel", "load_model",
]
