"""Size presets shared by the plugin's small architectures (demo, tiny); fairseq's own presets cover base/big."""


def small_transformer_sizes(args, embed_dim: int, ffn_dim: int, layers: int, heads: int) -> None:
    """Set encoder and decoder sizes that the command line did not give (decoder sizes follow the encoder's)."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", embed_dim)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn_dim)
    args.encoder_layers = getattr(args, "encoder_layers", layers)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", heads)
    args.decoder_layers = getattr(args, "decoder_layers", layers)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", heads)
