"""Speedups: each computes what a plain piece of nmt.core computes, faster where it was measured
to pay, chosen by trainer.speedups (nmt.speedups.choice); each has its equivalence test."""
