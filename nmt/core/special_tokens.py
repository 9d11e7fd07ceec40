"""The ids of the four special subwords, the one convention every part shares.

The sentencepiece models are trained to give them these ids (nmt.data.tokenizer);
batches pad with <pad>, so a real token is `id != PAD_ID` (masks.py); every
decoder input starts with <s>; greedy and beam search end an output at </s>:

    <pad> = 0, <unk> = 1, <s> = 2, </s> = 3

The file imports nothing, so every layer (the CTranslate2 route too) reads them here.
"""

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
