"""The super-resolution track (Stern et al. 2018, Sec. 7.2, Table 2 and Figure 4's super-resolution series) at demo
scale: grey-level patches of a photograph a package ships, low resolution -> high resolution as pixel-intensity
tokens, a Transformer and its blockwise proposal heads (frozen or fine-tuned), decoded with exact and distance-based
acceptance (``blockwise:k=K:eps=E``)."""
