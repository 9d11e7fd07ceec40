"""The papers the study reads its rows against: who, where, in what setting.

Each entry is data: the citation, the paper's own setting (language pair,
data size, model) and one sentence on what that setting means for a
comparison with ours (2-layer models of 2-3 million parameters, 29,000
Multi30k pairs, 1,600 RNN / 1,000 Transformer updates; or the toy task).
The claims themselves are in nmt.study.claims. Where a table or section
number is given, it was checked against the paper; "section not checked"
says where it was not.
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
        "AER of the attention against the RWTH gold German–English alignments",
        "their differences of 1-2 BLEU come from 4-layer 1,000-unit models with 50,000-word vocabularies, far "
        "larger than ours, trained on 150 times the data; "
        "their AER is against gold links, ours against eflomal's silver links (Multi30k) or true links (toy)"),
    "britz2017": Paper(
        "Britz, Goldie, Luong & Le 2017, Massive Exploration of Neural Machine Translation Architectures, EMNLP",
        "WMT'15 English→German (4.5 million pairs), many architecture variants each trained for hundreds of "
        "thousands of steps, several runs each",
        "they found additive attention slightly but consistently ahead of multiplicative at that scale; a "
        "small, consistent gap needs more seeds than a short budget on 29,000 pairs can give"),
    "shaw2018": Paper(
        "Shaw, Uszkoreit & Vaswani 2018, Self-Attention with Relative Position Representations, NAACL",
        "WMT'14 English→German and English→French, 6-layer Transformers (base and big), 100,000+ updates",
        "their +0.3 to +1.3 BLEU is smaller than two seeds of a 1,000-update 2-layer model can separate "
        "unless the spread is small"),
    "vaswani2017": Paper(
        "Vaswani et al. 2017, Attention Is All You Need, NeurIPS",
        "WMT'14 English→German, Transformer base; learned against sinusoidal positions in Table 3, row (E)",
        "their 'nearly identical' result is at 100,000 updates; ours is 1,000 updates of a 2-layer model"),
    "press2022": Paper(
        "Press, Smith & Lewis 2022, Train Short, Test Long: Attention with Linear Biases (ALiBi), ICLR",
        "language modelling (WikiText-103 and a large web corpus), no translation; the claim is about "
        "inputs longer than in training, section not checked",
        "our test sentences are as long as the training sentences, so only 'as good at the training "
        "length' can be read here"),
    "tu2016": Paper(
        "Tu, Lu, Liu, Liu & Li 2016, Modeling Coverage for Neural Machine Translation, ACL",
        "Chinese→English (1.25 million pairs), GRU encoder-decoder with additive attention; AER against "
        "hand alignments (table not checked)",
        "their gains are on a language pair with long reorderings and long sentences; Multi30k captions "
        "are short and mostly monotone"),
    "guided_rnn": Paper(
        "Chen, Matusov, Khadivi & Peter 2016, Guided Alignment Training for Topic-Aware Neural Machine "
        "Translation, AMTA; Mi, Wang & Ittycheriah 2016, Supervised Attentions for Neural Machine "
        "Translation, EMNLP; Liu, Utiyama, Finch & Sumita 2016, Neural Machine Translation with Supervised "
        "Attention, COLING",
        "RNN encoder-decoders whose attention is supervised with statistical alignments (GIZA++), on "
        "e-commerce English→French and Chinese→English; each reports lower AER and a BLEU gain",
        "their gains are at convergence on large data; at a fixed short budget a gain can also be faster "
        "learning, which only the convergence check separates"),
    "garg2019": Paper(
        "Garg, Peitz, Nallasamy & Paulik 2019, Jointly Learning to Align and Translate with Transformer "
        "Models, EMNLP",
        "Transformer base on German→English, Romanian→English and English→French, one head of the "
        "penultimate layer supervised with alignments; AER improves, BLEU does not change",
        "the Transformer method; ours supervises the same head (penultimate layer, head 1)"),
    "sparse": Paper(
        "Malaviya, Ferreira & Martins 2018, Sparse and Constrained Attention for Neural Machine Translation, "
        "ACL; Peters, Niculae & Martins 2019, Sparse Sequence-to-Sequence Models (1.5-entmax), ACL",
        "RNN NMT on small IWSLT-sized pairs (German, Japanese, Romanian→English): sparse attention "
        "translates about as well as softmax, and 1.5-entmax as well or slightly better. Sparsemax itself "
        "(Martins & Astudillo 2016, ICML) has no translation experiments",
        "their data are the size of ours, so these claims are the closest to our setting"),
    "cheng2016": Paper(
        "Cheng, Dong & Lapata 2016, Long Short-Term Memory-Networks for Machine Reading, EMNLP",
        "language modelling, sentiment and natural language inference; no translation experiments",
        "the study tests the LSTMN as a translation encoder, which the paper did not: no paper claim"),
    "wu2016": Paper(
        "Wu et al. 2016, Google's Neural Machine Translation System, arXiv:1609.08144",
        "WMT'14 English→French and English→German, 8-layer LSTMs; the coverage penalty is tuned with the "
        "length penalty (Sec. 7)",
        "a penalty tuned on their data is used here at one setting, β = 0.2"),
    "ghader2017": Paper(
        "Ghader & Monz 2017, What does Attention in Neural Machine Translation Pay Attention to?, IJCNLP",
        "German→English and English→German RNN NMT against gold alignments: attention agrees with alignment "
        "for nouns more than for verbs, and attending elsewhere than the aligned word is not always an error",
        "the study scores attention as an alignment over all words and does not split it by word type (it "
        "has no part-of-speech tags); the nearest reading here is precision against recall and the AER over "
        "target words the reference links (*Attention read as an alignment* in each part's report): a "
        "mechanism can translate well with attention that is not an alignment, so AER ranks alignment only"),
    "koehn2017": Paper(
        "Koehn & Knowles 2017, Six Challenges for Neural Machine Translation, WNMT, Sec. 3.5",
        "German–English RNN NMT: the attention of some words is off by one from the alignment, and for "
        "some it diverges altogether",
        "the one-step-later reading (aer_shift) says, per row, whether our RNNs attend one step early"),
    "chen2020": Paper(
        "Chen, Liu, Chen, Jiang & Liu 2020, Accurate Word Alignment Induction from Neural Machine "
        "Translation, EMNLP (Shift-Att)",
        "Transformers on German–English, Romanian–English and English–French gold alignments: read the "
        "attention of target word y_t at the step where y_t is the decoder's input, one step later",
        "our Transformers have 2 layers; the layer and head are chosen on the validation set as they "
        "choose theirs on held-out data"),
}
