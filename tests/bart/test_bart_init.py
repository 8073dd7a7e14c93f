"""BART initialisation: the checkpoint fine-tuning starts from holds the pretrained BART weights where it should --
every encoder layer, embeddings and layernorm_embedding as they are, and the decoder layers the config names,
renumbered (the 12+2 GEC model keeps two of BART-large's twelve decoder layers) -- and fairseq loads it into the
fine-tuning architecture (BART's <mask> embedding row dropped by BARTModel itself). GPT-2 BPE round-trips text."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers.bart import bart_args, gpt2_files, write_bart_archive  # noqa: E402
from fastdec.bart.init import build_bart_init, read_bart_state, select_layers  # noqa: E402
from fastdec.data.gpt2_bpe import decode_line, encode_line, load_encoder  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("bart")
    files = gpt2_files(root / "gpt2")
    archive = write_bart_archive(root / "bart.large.tar.gz", files["dict.txt"], name="bart.large", layers=3,
                                 decoder_layers=4, seed=7)
    return archive, files


def fine_tuning_model(dict_path, decoder_layers):
    """The model fairseq-train builds for --arch bart_base --decoder-layers N over the GPT-2 dict.txt."""
    from fairseq.data import Dictionary
    from fairseq.models.bart.model import BARTModel

    d = Dictionary.load(str(dict_path))
    args = bart_args(3, decoder_layers, max_positions=1024)
    return BARTModel.build_model(args, SimpleNamespace(source_dictionary=d, target_dictionary=d)), d


@pytest.mark.parametrize("keep", [[0, 1], [0, 3], [2]])
def test_init_keeps_bart_weights_and_the_named_decoder_layers(tmp_path, release, keep):
    archive, files = release
    bart = read_bart_state(str(archive), "bart.large/model.pt")["model"]
    out = tmp_path / "init.pt"
    report = build_bart_init(str(archive), "bart.large/model.pt", str(out), decoder_layers=keep)
    assert report["bart_layers"] == {"encoder": 3, "decoder": 4} and report["decoder_layers_kept"] == keep
    model, d = fine_tuning_model(files["dict.txt"], len(keep))
    model.load_state_dict(torch.load(out, weights_only=False)["model"], strict=True)
    got = model.state_dict()
    n = len(d)  # BART's extra <mask> row is dropped: the fine-tuning dictionary has none
    assert bart["encoder.embed_tokens.weight"].shape[0] == n + 1
    assert torch.equal(got["encoder.embed_tokens.weight"], bart["encoder.embed_tokens.weight"][:n])
    for key in ("encoder.layernorm_embedding.weight", "decoder.layernorm_embedding.bias",
                "encoder.embed_positions.weight", "decoder.embed_positions.weight"):
        assert torch.equal(got[key], bart[key]), key
    for i in range(3):
        for name in ("self_attn.k_proj.weight", "fc2.bias", "final_layer_norm.weight"):
            assert torch.equal(got[f"encoder.layers.{i}.{name}"], bart[f"encoder.layers.{i}.{name}"])
    for j, i in enumerate(keep):
        for name in ("self_attn.q_proj.weight", "encoder_attn.v_proj.bias", "fc1.weight", "final_layer_norm.bias"):
            assert torch.equal(got[f"decoder.layers.{j}.{name}"], bart[f"decoder.layers.{i}.{name}"]), (j, i, name)
    # the kept layers are really different tensors in BART (so the test tells layer 0 from layer 3)
    assert not torch.equal(bart["decoder.layers.0.fc1.weight"], bart["decoder.layers.3.fc1.weight"])


def test_all_decoder_layers_by_default(tmp_path, release):
    archive, files = release
    build_bart_init(str(archive), "bart.large/model.pt", str(tmp_path / "all.pt"))
    model, _ = fine_tuning_model(files["dict.txt"], 4)
    model.load_state_dict(torch.load(tmp_path / "all.pt", weights_only=False)["model"], strict=True)


def test_bad_layer_selection_and_member_are_clear_errors(tmp_path, release):
    archive, _ = release
    with pytest.raises(ValueError, match=r"decoder layers \[0, 4\]: BART has decoder layers 0..3"):
        build_bart_init(str(archive), "bart.large/model.pt", str(tmp_path / "x.pt"), decoder_layers=[0, 4])
    with pytest.raises(Exception, match="no member 'bart.base/model.pt'"):
        read_bart_state(str(archive), "bart.base/model.pt")
    with pytest.raises(ValueError, match="BART archive not found"):
        read_bart_state(str(tmp_path / "missing.tar.gz"), "bart.large/model.pt")
    with pytest.raises(ValueError, match="name each at most once"):
        select_layers({"decoder.layers.0.x": torch.zeros(1)}, "decoder", [0, 0])


def test_gpt2_bpe_round_trip_and_truncation(release):
    _, files = release
    enc = load_encoder(str(files["encoder.json"]), str(files["vocab.bpe"]))
    text = "The cat sat on the mat, then another cat ate."
    ids = encode_line(enc, "  " + text + "\n")
    assert all(t.isdigit() for t in ids.split()) and decode_line(enc, ids) == text
    assert len(encode_line(enc, text, max_tokens=5).split()) == 5
    assert decode_line(enc, ids + " <unk>") == text
    with pytest.raises(ValueError, match="GPT-2 BPE file not found: /nowhere/encoder.json"):
        load_encoder("/nowhere/encoder.json", str(files["vocab.bpe"]))
