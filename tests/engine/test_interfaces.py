"""Every verifier, batched verifier and baseline generator has what its protocol (fastdec/engine/interfaces.py)
declares: each attribute on a built instance, each method and property on the class, with a signature that accepts
every call the protocol's allows."""
import inspect

import pytest

from conftest import random_model
from fastdec.engine.batched import BatchedVerifier
from fastdec.engine.ctranslate2_backend import CT2Generator
from fastdec.engine.fairseq_baseline import FairseqGenerator
from fastdec.engine.fast_batched import FastBatchedVerifier
from fastdec.engine.fast_verifier import FastVerifier
from fastdec.engine.interfaces import BatchedVerifierProtocol, GeneratorProtocol, VerifierProtocol
from fastdec.engine.student_verifier import StudentVerifier
from fastdec.engine.verifier import Verifier
from helpers.students import build_random_student


def protocol_gaps(obj, protocol) -> list:
    """What ``obj`` (a class, or an instance: then its attributes are checked too) lacks of ``protocol``."""
    cls = obj if isinstance(obj, type) else type(obj)
    gaps = []
    for name, member in vars(protocol).items():
        if isinstance(member, property):
            if not isinstance(inspect.getattr_static(cls, name, None), property):
                gaps.append(f"{name}: not a property")
        elif inspect.isfunction(member) and not name.startswith("_"):
            impl = getattr(cls, name, None)
            if not callable(impl):
                gaps.append(f"{name}: no such method")
            else:
                gaps += [f"{name}: {gap}" for gap in signature_gaps(inspect.signature(impl),
                                                                     inspect.signature(member))]
    if not isinstance(obj, type):
        gaps += [f"{name}: no such attribute" for name in protocol.__annotations__ if not hasattr(obj, name)]
    return gaps


def signature_gaps(have: inspect.Signature, want: inspect.Signature) -> list:
    """Parameters of ``want`` missing from ``have`` (same name and kind, a default where ``want`` has one), and
    parameters ``have`` requires that ``want`` does not pass."""
    gaps = []
    for name, p in want.parameters.items():
        q = have.parameters.get(name)
        if q is None or q.kind != p.kind:
            gaps.append(f"parameter {name} ({p.kind.description}) missing")
        elif p.default is not p.empty and q.default is q.empty:
            gaps.append(f"parameter {name} has no default")
    for name, q in have.parameters.items():
        if name not in want.parameters and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            gaps.append(f"extra required parameter {name}")
    return gaps


def verifiers():
    model, _, ver = random_model(0)
    student, _ = build_random_student()
    return {"Verifier": ver, "FastVerifier": FastVerifier(model), "StudentVerifier": StudentVerifier(student)}


@pytest.fixture(scope="module")
def built():
    return verifiers()


@pytest.mark.parametrize("name", ["Verifier", "FastVerifier", "StudentVerifier"])
def test_verifiers_satisfy_the_verifier_protocol(built, name):
    ver = built[name]
    assert protocol_gaps(ver, VerifierProtocol) == []
    assert isinstance(ver, VerifierProtocol)


@pytest.mark.parametrize("name,cls", [("Verifier", BatchedVerifier), ("FastVerifier", FastBatchedVerifier)])
def test_batched_verifiers_satisfy_the_batched_protocol(built, name, cls):
    bver = cls(built[name])
    assert protocol_gaps(bver, BatchedVerifierProtocol) == []
    assert isinstance(bver, BatchedVerifierProtocol)
    assert protocol_gaps(bver.ver, VerifierProtocol) == []


@pytest.mark.parametrize("cls", [FairseqGenerator, CT2Generator])
def test_generators_satisfy_the_generator_protocol(cls):
    assert protocol_gaps(cls, GeneratorProtocol) == []


def test_the_check_names_what_a_class_lacks():
    class NoRollback(Verifier):
        rollback = None

    class NarrowForward(Verifier):
        def forward(self, tokens):  # no need_logits keyword
            return super().forward(tokens)

    class RequiresMore(FairseqGenerator):
        def generate(self, sources, batch_size=1, *, beam):  # a required argument the loops never pass
            return []

    assert protocol_gaps(NoRollback, VerifierProtocol) == ["rollback: no such method"]
    assert protocol_gaps(NarrowForward, VerifierProtocol) == ["forward: parameter need_logits (keyword-only) missing"]
    assert protocol_gaps(RequiresMore, GeneratorProtocol) == ["generate: extra required parameter beam"]
    assert protocol_gaps(BatchedVerifier, BatchedVerifierProtocol) == []  # attributes only on instances
