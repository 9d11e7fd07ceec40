"""docs/beam_tree_hf.png: the beam tree of a Hugging Face MarianMTModel that learned the toy task of dates.

    python -m scripts.docs.docs_hf_tree --model-dir /tmp/toy-marian --out docs

Builds a small MarianMTModel offline, as tests/hf_marian.py does (a sentencepiece model
trained on the toy task's training sentences, shared by source and target; bpe at 240
pieces, as data=toy, so every toy word is one piece) but larger
(d_model 64, 2 + 2 layers, 4 heads, no dropout), and trains it with a plain torch loop: AdamW,
teacher forcing (the labels, <pad> masked as -100), batches of 64 sentence pairs, a fixed
seed, on the training pairs of `data=toy` (nmt/configs/data/toy.yaml). Every --eval-every
updates it prints its greedy validation BLEU. At the end it saves the model to
--model-dir (outside the repository: the weights are not committed), scores it with
nmt's HFTranslator (generate(), greedy; sacreBLEU) on the toy validation set, and draws
DATE's beam tree (beam 3, the prefix PREFIX forced) with nmt.viz.notebook.beam_tree, as
tests/test_hf.py's browser test does: the page opened in Debian's Chromium (Playwright,
as scripts/docs/screenshots.py does; 1,920 px wide, so the whole tree shows), the best
final clicked, a full-page screenshot OUT/beam_tree_hf.png. OUT/beam_tree_hf.json records the command, commit, date, CPU,
updates, training seconds, validation BLEU and sentences, seed and the sentence drawn.
Run it pinned to one core on a shared machine (`taskset -c 1`, OMP_NUM_THREADS=1).
"""

import argparse
import json
import shlex
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import yaml

from nmt import CONFIGS, cpu_description, git_commit, load_corpus, read_cpuinfo, score_translations
from nmt.hf.translator import HFTranslator
from nmt.viz import notebook
from scripts.docs.screenshots import ARGS, CHROMIUM, small_png
from scripts.out_path import ready_folder

DATE = "monday the twenty first of march nineteen eighty four"  # tests/test_attention_html.py's DATE
PREFIX = "1 9"  # forced: the tree shows the prefix in yellow, then the model's own search
# the attention study's toy Transformer sizes (nmt_study/configs.py): no dropout; embeddings
# scaled by sqrt(d_model), as the opus-mt Marians are, so the sinusoidal positions do not drown them
SIZES = {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
         "decoder_attention_heads": 4, "encoder_ffn_dim": 256, "decoder_ffn_dim": 256, "dropout": 0.0,
         "scale_embedding": True}
LR, WARMUP = 3e-3, 100
POSITIONS = 64  # each side's longest: a toy source is at most 12 subwords, a target at most 12
BATCH = 64


def toy_corpus():
    """The sentences of `data=toy`: its sizes and seed read from nmt's own config."""
    return load_corpus(yaml.safe_load((CONFIGS / "data" / "toy.yaml").read_text(encoding="utf-8")))


def build_marian(folder: Path, pairs: list[tuple[str, str]], seed: int):
    """A randomly initialised MarianMTModel and its MarianTokenizer, saved to `folder`:
    one sentencepiece model over both sides of `pairs` (bpe at 240, as data=toy: every toy word one piece)."""
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    with tempfile.TemporaryDirectory() as scratch:
        text = Path(scratch) / "corpus.txt"
        text.write_text("\n".join(line for pair in pairs for line in pair) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"), vocab_size=240,
                                       model_type="bpe", bos_id=-1, eos_id=1, unk_id=2, pad_id=0,
                                       minloglevel=2)
    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    pieces = ["<pad>", "</s>", "<unk>"] + [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]
    (folder / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}), encoding="utf-8")
    for side in ("source", "target"):
        (folder / f"{side}.spm").write_bytes((folder / "spm.model").read_bytes())
    tokenizer = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))
    torch.manual_seed(seed)
    config = MarianConfig(vocab_size=len(pieces), **SIZES, max_position_embeddings=POSITIONS, pad_token_id=0,
                          eos_token_id=1, decoder_start_token_id=0, forced_eos_token_id=1)
    return MarianMTModel(config), tokenizer


def greedy_bleu(model, tokenizer, pairs: list[tuple[str, str]]) -> float:
    """Corpus BLEU (sacreBLEU) of generate()'s greedy translations of `pairs`' sources, in batches."""
    model.eval()
    hypotheses = []
    with torch.no_grad():
        for start in range(0, len(pairs), BATCH):
            batch = tokenizer([src for src, _ in pairs[start : start + BATCH]], return_tensors="pt", padding=True)
            out = model.generate(**batch, num_beams=1, do_sample=False, max_new_tokens=POSITIONS - 2)
            hypotheses += tokenizer.batch_decode(out, skip_special_tokens=True)
    model.train()
    return score_translations(hypotheses, [tgt for _, tgt in pairs])[0]


def train(model, tokenizer, corpus, steps: int, eval_every: int, seed: int) -> float:
    """`steps` updates of AdamW (lr LR after WARMUP warm-up updates, then linear decay to 0)
    on shuffled batches of the training pairs; the seconds it took, validation included."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / WARMUP, max(0.0, (steps - step) / max(1, steps - WARMUP))))
    order = torch.Generator().manual_seed(seed)
    model.train()
    begun, step = time.monotonic(), 0
    while step < steps:
        for batch_ids in torch.randperm(len(corpus.train), generator=order).split(BATCH):
            if step == steps:
                break
            pairs = [corpus.train[i] for i in batch_ids.tolist()]
            batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], return_tensors="pt",
                              padding=True)
            batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
            loss = model(**batch).loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step += 1
            if step % eval_every == 0 or step == steps:
                bleu = greedy_bleu(model, tokenizer, corpus.valid)
                print(f"update {step}: loss {loss.item():.3f}, validation BLEU {bleu:.2f} (greedy), "
                      f"{time.monotonic() - begun:.0f} s", flush=True)
    model.eval()
    return time.monotonic() - begun


def screenshot(translator: HFTranslator, out: Path) -> dict:
    """OUT/beam_tree_hf.png of DATE's beam tree, the best final clicked; the finals it shows."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        page_file = Path(scratch) / "tree.html"
        notebook.beam_tree(translator, DATE, beam_size=3, prefix=PREFIX).save(page_file)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1920, "height": 1000}, bypass_csp=True)
            page.set_default_timeout(90_000)
            page.goto(page_file.as_uri())
            page.wait_for_selector("svg.beam-tree")
            finals = [(r.locator("td.text").inner_text(), r.locator("td.final-score").inner_text())
                      for r in page.locator("tr.final-row").all()]
            page.locator("g.node.final[data-rank='1']").click()
            page.wait_for_selector("svg.prefix-heatmap")
            page.mouse.move(0, 0)
            page.screenshot(path=str(out / "beam_tree_hf.png"), full_page=True)
            browser.close()
    small_png(out / "beam_tree_hf.png")
    return {"finals": [{"translation": text, "score": float(score)} for text, score in finals]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True, help="where the trained model is saved (outside the repository)")
    parser.add_argument("--out", default="docs", help="folder for beam_tree_hf.png and beam_tree_hf.json")
    parser.add_argument("--steps", type=int, default=3000, help="updates of batches of 64 sentence pairs")
    parser.add_argument("--eval-every", type=int, default=500, help="print the validation BLEU every N updates")
    parser.add_argument("--seed", type=int, default=1, help="initialisation and batch order")
    args = parser.parse_args(argv)
    out, folder = ready_folder(args.out, "docs_hf_tree"), ready_folder(args.model_dir, "docs_hf_tree", "--model-dir")
    torch.set_num_threads(1)
    corpus = toy_corpus()
    model, tokenizer = build_marian(folder, corpus.train, args.seed)
    seconds = train(model, tokenizer, corpus, args.steps, args.eval_every, args.seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    translator = HFTranslator(str(folder), device="cpu")
    hypotheses = [t.text for t in translator.translate([src for src, _ in corpus.valid], beam_size=1)]
    bleu = score_translations(hypotheses, [tgt for _, tgt in corpus.valid])[0]
    command = "python -m scripts.docs.docs_hf_tree " + shlex.join(argv if argv is not None else sys.argv[1:])
    record = {
        "picture": "beam_tree_hf.png",
        "model": f"MarianMTModel, {SIZES['encoder_layers']} + {SIZES['decoder_layers']} layers, d_model "
                 f"{SIZES['d_model']}, {SIZES['decoder_attention_heads']} heads, {len(tokenizer)} subwords",
        "data": "the toy task of dates (data=toy)",
        "updates": args.steps,
        "batch_pairs": BATCH,
        "seed": args.seed,
        "training_seconds": round(seconds, 1),
        "validation_bleu": round(bleu, 2),
        "validation_sentences": len(corpus.valid),
        "validation_search": "greedy, generate()",
        "sentence": DATE,
        "greedy_translation": translator.translate([DATE])[0].text,
        "beam_size": 3,
        "prefix": PREFIX,
        **screenshot(translator, out),
        "command": command,
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "cpu": cpu_description(read_cpuinfo()),
    }
    (out / "beam_tree_hf.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"validation BLEU {record['validation_bleu']:.2f} on {len(corpus.valid)} toy dates after {args.steps} "
          f"updates ({seconds:.0f} s); {out / 'beam_tree_hf.png'}")
    print(f"command: {command}")
    return record


if __name__ == "__main__":
    main()
