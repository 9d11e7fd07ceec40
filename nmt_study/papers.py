"""The papers the study reads its rows against: who, where, in what setting.

Each entry is data: the citation, the paper's own setting (language pair,
data size, model) and one sentence on what that setting means for a
comparison with ours (2-layer models of 2-3 million parameters, 29,000
Multi30k pairs, 1,600 RNN / 1,000 Transformer updates; or the toy task).
The claims themselves are in nmt_study.claims. A table or section number is
given only where a stored copy of the paper's text was read; "not read"
names what no stored copy let us read, and "abstract" says that only the
abstract was read.
"""

from dataclasses import dataclass

OURS = ("ours: 2-layer models of 2-3 million parameters, 29,000 Multi30k pairs, 1,600 RNN and 1,000 "
        "Transformer updates")


@dataclass(frozen=True)
class Paper:
    cite: str          # authors year, title, venue
    setting: str       # their experiment: language pair, data, model
    versus: str        # what that means for a comparison with ours


PAPERS = {
    "luong2015": Paper(
        "Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural Machine Translation, EMNLP",
        "WMT'14 English→German (4.5 million pairs), 4-layer LSTMs of 1,000 units trained for 10-12 epochs; "
        "AER of one-to-one alignments from the attention, English→German models force-decoded on RWTH's gold "
        "alignments of 508 English–German Europarl sentences (Sec. 5.4)",
        "their differences of 1-2 BLEU come from 4-layer 1,000-unit models with 50,000-word vocabularies, far "
        "larger than ours, trained on 150 times the data; "
        "their AER is against gold links, ours against eflomal's silver links (Multi30k) or true links (toy)"),
    "britz2017": Paper(
        "Britz, Goldie, Luong & Le 2017, Massive Exploration of Neural Machine Translation Architectures, EMNLP",
        "WMT English→German, many architecture variants, several runs each (abstract: several hundred runs, "
        "over 250,000 GPU hours); the paper's text was not read here: its attention finding is quoted from a "
        "secondary summary, so no section or table number is given",
        "they found additive attention slightly but consistently ahead of multiplicative at that scale; a "
        "small, consistent gap needs more seeds than a short budget on 29,000 pairs can give"),
    "shaw2018": Paper(
        "Shaw, Uszkoreit & Vaswani 2018, Self-Attention with Relative Position Representations, NAACL",
        "WMT'14 English→German and English→French, 6-layer Transformers, base (100,000 steps) and big "
        "(300,000 steps); the absolute baseline of Table 1 is the sinusoidal encoding",
        "their +0.3 to +1.3 BLEU is smaller than two seeds of a 1,000-update 2-layer model can separate "
        "unless the spread is small"),
    "vaswani2017": Paper(
        "Vaswani et al. 2017, Attention Is All You Need, NeurIPS",
        "WMT'14 English→German, Transformer base; learned against sinusoidal positions in Table 3, row (E)",
        "their 'nearly identical' result is at 100,000 updates; ours is 1,000 updates of a 2-layer model"),
    "press2022": Paper(
        "Press, Smith & Lewis 2022, Train Short, Test Long: Attention with Linear Biases (ALiBi), ICLR",
        "causal language modelling only (WikiText-103; a 1.3-billion-parameter model on the CC100+RoBERTa "
        "corpus), no translation; the paper's claim is about inputs longer than in training",
        "our test sentences are as long as the training sentences, so only 'as good at the training "
        "length' can be read here"),
    "tu2016": Paper(
        "Tu, Lu, Liu, Liu & Li 2016, Modeling Coverage for Neural Machine Translation, ACL",
        "Chinese→English, GRU encoder-decoder with additive attention; the abstract reports better translation "
        "and alignment quality (model, data size, tables and alignment test set not read)",
        "their gains are on a language pair with long reorderings and long sentences; Multi30k captions "
        "are short and mostly monotone"),
    "guided_rnn": Paper(
        "Chen, Matusov, Khadivi & Peter 2016, Guided Alignment Training for Topic-Aware Neural Machine "
        "Translation, AMTA; Mi, Wang & Ittycheriah 2016, Supervised Attentions for Neural Machine "
        "Translation, EMNLP; Liu, Utiyama, Finch & Sumita 2016, Neural Machine Translation with Supervised "
        "Attention, COLING",
        "RNN encoder-decoders whose attention is supervised with statistical word alignments, on e-commerce "
        "product titles and descriptions (Chen et al.) and Chinese→English (Mi et al.; Liu et al.); by their "
        "abstracts (Mi et al.: arXiv:1608.00112; Liu et al.: ACL Anthology C16-1291) all three gain BLEU, "
        "and Mi et al. (\"alignment qualities\", on a large-scale Chinese→English task) and Liu et al. "
        "(\"better alignments\", on two Chinese→English tasks) also align better; their tables not read",
        "their gains are at convergence on large data; at a fixed short budget a gain can also be faster "
        "learning of a weak base, so the same supervision is also measured on the strong base "
        "(bahdanau-guided against bahdanau): a gain that only speeds up a slow learner shrinks there"),
    "garg2019": Paper(
        "Garg, Peitz, Nallasamy & Paulik 2019, Jointly Learning to Align and Translate with Transformer "
        "Models, EMNLP",
        "Transformers on three public alignment data sets, trained to translate and to align from alignments "
        "extracted from their own attention, or from GIZA++; by the abstract, alignments competitive with "
        "GIZA++ without sacrificing translation accuracy (tables and the supervised head not read)",
        "the Transformer method; ours supervises the same head (penultimate layer, head 1)"),
    "sparse": Paper(
        "Malaviya, Ferreira & Martins 2018, Sparse and Constrained Attention for Neural Machine Translation, "
        "ACL; Peters, Niculae & Martins 2019, Sparse Sequence-to-Sequence Models (1.5-entmax), ACL",
        "NMT on three language pairs with sparse and constrained attention (Malaviya et al.); entmax in both "
        "attention and output layer, with consistent gains over dense models by the abstract (Peters et al.); "
        "models, data and tables not read. Sparsemax itself (Martins & Astudillo 2016, ICML) has no "
        "translation experiments: multi-label classification and natural language inference",
        "Peters et al.'s gains come with entmax in the output layer too; ours changes the attention only"),
    "cheng2016": Paper(
        "Cheng, Dong & Lapata 2016, Long Short-Term Memory-Networks for Machine Reading, EMNLP",
        "language modelling, sentiment and natural language inference; no translation experiments",
        "the study tests the LSTMN as a translation encoder, which the paper did not: no paper claim"),
    "wu2016": Paper(
        "Wu et al. 2016, Google's Neural Machine Translation System, arXiv:1609.08144",
        "WMT'14 English→French and English→German, 8-layer LSTMs; Sec. 7 tunes the coverage penalty β with "
        "the length penalty α: Table 2 (an ML-trained En→Fr model, development set) goes from 30.3 BLEU at "
        "α = β = 0 to 31.4 with a coverage penalty at small α, and their experiments use α = β = 0.2; at "
        "α = 1.0, β = 0.2 gives 30.3 against 31.1 without it; after RL refinement (Table 3) both matter less",
        "the study decodes at α = 1.0 (nmt.translate's default), the column of Table 2 where β = 0.2 loses "
        "0.8 BLEU, on a 29,000-pair task with short captions, where under-translation is rarer"),
    "ghader2017": Paper(
        "Ghader & Monz 2017, What does Attention in Neural Machine Translation Pay Attention to?, IJCNLP",
        "RNN NMT against gold alignments: attention differs from alignment in some cases and captures useful "
        "information beyond it (abstract); its nouns-against-verbs finding and language directions not read",
        "the study scores attention as an alignment over all words and does not split it by word type (it "
        "has no part-of-speech tags); the nearest reading here is precision against recall and the AER over "
        "target words the reference links (*Attention read as an alignment* in each part's report): a "
        "mechanism can translate well with attention that is not an alignment, so AER ranks alignment only"),
    "koehn2017": Paper(
        "Koehn & Knowles 2017, Six Challenges for Neural Machine Translation, WNMT",
        "RNN NMT: word alignment is the fifth of the six challenges its abstract names (the attention model "
        "may diverge dramatically from an alignment, in the introduction's words as quoted by a secondary "
        "source); the section's text and its figures were not read",
        "the one-step-later reading (aer_shift) says, per row, whether our RNNs attend one step early"),
    "chen2020": Paper(
        "Chen, Liu, Chen, Jiang & Liu 2020, Accurate Word Alignment Induction from Neural Machine "
        "Translation, EMNLP (Shift-Att)",
        "Transformers on three public gold-alignment data sets: read the attention of target word y_t at the "
        "step where y_t is the decoder input, one step later (abstract; Sec. 1, Fig. 1, whose example map is "
        "the third decoder layer's attention)",
        "our Transformers have 2 layers and we choose the layer and head on the validation set; how they "
        "choose their layer was not read (their method section)"),
}
