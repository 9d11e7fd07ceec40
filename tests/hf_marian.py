"""A tiny Marian model built offline: 2 layers, a sentencepiece model trained on a few hundred lines."""

import json
from pathlib import Path


def build_tiny_marian(folder: Path, positions: int = 64) -> Path:
    """Save a randomly initialised 2-layer MarianMTModel and its tokenizer to `folder`,
    with `positions` position embeddings (its longest input and output)."""
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    from nmt.data.toy import make_toy_corpus

    folder.mkdir(parents=True, exist_ok=True)
    pairs = make_toy_corpus(300, 10, 10, seed=0).train
    text = folder / "corpus.txt"
    text.write_text("\n".join(line for pair in pairs for line in pair) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"), vocab_size=60,
                                   model_type="unigram", bos_id=-1, eos_id=1, unk_id=2, pad_id=0,
                                   hard_vocab_limit=False)
    text.unlink()
    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    pieces = ["<pad>", "</s>", "<unk>"] + [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    for side in ("source", "target"):
        (folder / f"{side}.spm").write_bytes((folder / "spm.model").read_bytes())
    tokenizer = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))
    torch.manual_seed(0)
    config = MarianConfig(vocab_size=len(vocab), d_model=16, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                          decoder_ffn_dim=32, max_position_embeddings=positions, pad_token_id=0, eos_token_id=1,
                          decoder_start_token_id=0, forced_eos_token_id=1)
    model = MarianMTModel(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
