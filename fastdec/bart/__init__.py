"""BART-initialised models (Ge et al. 2022): the CNN-DM verifier (Table 10) and the 12+2 GEC model (Table 3)."""
