"""Attention for RNN decoders: base.py (what every score shares), then one file per score."""
