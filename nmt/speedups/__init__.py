"""Speedups: faster replacements of the reference core's plain pieces.

Each one gives what the core's plain piece gives (bit for bit where its test
says so, tests/speedups/) and is installed from outside the core, so the core
reads as the papers write it. model.py installs the model's: the cheap
dropout mask (dropout.py) and padded RNN runs instead of packing
(padded_rnn.py); nmt.models.build.build_model(..., speedups=False) leaves
the model as nmt.core builds it. eager_loop.py keeps the RNN decoder's
teacher-forced loop out of torch.compile (trainer.compile=true).
"""
