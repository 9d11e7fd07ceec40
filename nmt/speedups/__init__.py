"""Speedups: faster replacements of the reference core's plain pieces.

Each one computes what a plain piece of nmt.core computes (bit for bit where
its test says so, tests/speedups/), faster where it was measured to pay, and
is installed from outside the core, so the core reads as the papers write it.
One setting chooses them, trainer.speedups (nmt.speedups.choice): `auto`, or
`off` for the core's plain code alone. The model's (model.py): the cheap
dropout mask (dropout.py) and padded RNN runs instead of packing
(padded_rnn.py); eager_loop.py keeps the RNN decoder's teacher-forced loop
out of torch.compile. The update's: the fused label-smoothed loss, scratch
memory and the heap setting, OpenBLAS products, CUDA graphs and compile.
Decoding's (decode_kernels.py: oneDNN products and a step's attention written
out) changes the floats in their last bits, so it is not under `auto`: it is
chosen by Translator(kernels="fast") or `nmt.translate --kernels fast`.
decode_cache.py (a Transformer step's self-attention cache written in place,
bit for bit the core's) is on for every model that Translator.from_checkpoint
loads; training's validation decodes with the core's step. swap.py: how each
takes a core piece's place (its module's class swapped in place, parameters kept).
"""
