"""Benchmarks: each prints its figure and the command that reproduces it; run as `python -m scripts.benchmarks.NAME`."""
