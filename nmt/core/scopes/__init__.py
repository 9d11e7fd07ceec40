"""Attention scopes: which source positions a query may weigh, and how.

Every scope has the signature

    scope(scores (B, H, T, S), mask (B, 1, S), centers (B, T) float or None,
          window D, training, normaliser) -> (read, weights, log_prob)

where `read` (B, H, T, S) combines the values, `weights` (B, H, T, S) is the
distribution shown in heatmaps and `log_prob` (B, T) or None. H = 1 for
single-head scores. Source positions s count from 0.
"""
