"""The Transformer (Vaswani et al. 2017): multi-head attention (`attention.py`),
the sub-layer rules and feed-forward network both layers share (`layers.py`),
the encoder and the decoder. RNN attention is in nmt/models/attention/."""
