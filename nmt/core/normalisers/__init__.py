"""Scores -> a distribution over the source: softmax, sparsemax, 1.5-entmax
(one file each) and masked.py, which chooses among them and masks."""
