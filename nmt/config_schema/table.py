"""RULES: the allowed values and the one-line meaning of every leaf of the
composed config tree (nmt/configs/*.yaml with every group option), by dotted path.

    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off").means(
        "the largest L2 norm of all gradients together; ..."),

This is the one definition of a key but its default, which the YAML holds:
the checks (values.py), `python -m nmt.train --help` and the configuration
reference (`python -m scripts.docs.docs_reference`) read it. Rules are per key, not
per option: `model.encoder.layers` means the same for an LSTM and a
Transformer encoder, and a meaning names the options it concerns where it
does not hold for all. tests/test_config_schema.py composes every option of
every group and fails for any leaf that has no rule or an empty meaning, so a
new key needs both (add it below).
"""

from nmt.config_schema.kinds import Bool, Choice, Float, Int, Pair, Rule, Text

POSITIVE = Int(low=1)
COUNT = Int(low=0)
DROPOUT = Float(low=0, high=1, high_open=True)
SEED = Int(low=0, high=2**63 - 1, hint="torch's generator takes a signed 64-bit seed")
MAX_VAL_BEAM = 100
MAX_VOCAB = 2**20           # sentencepiece counts pieces in 32 bits; 2^20 rows are 2 GB of output layer at d=512
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")   # torch.compile's
LANGUAGES = ("de", "en", "fr", "cs")
RULES: dict[str, Rule] = {
    # top level
    "cache_dir": Text().means(
        "folder for the sentencepiece models nmt trains and the hub downloads, reused by later runs"),

    # trainer (configs/trainer/default.yaml)
    "trainer.max_steps": POSITIVE.means(
        "the most optimiser updates a run makes (the first of max_steps, max_epochs, max_minutes ends it)"),
    "trainer.max_epochs": POSITIVE.means(
        "the most passes over the training data (the first of max_steps, max_epochs, max_minutes ends it)"),
    "trainer.max_minutes": Float(low=0, low_open=True, null=True, hint="null = no time budget").means(
        "wall-clock budget of the whole run in minutes, resumptions added up; the run ends when it is spent"),
    "trainer.val_every": POSITIVE.means(
        "optimiser updates between validations (a final validation always runs at the end)"),
    "trainer.log_every": POSITIVE.means(
        "optimiser updates between progress lines (loss, learning rate, speed) in train.log, the console and "
        "TensorBoard's scalars"),
    "trainer.device": Choice(options=("auto", "cpu", "cuda"), prefixes=("cuda:",)).means(
        "where the model trains: auto takes a CUDA GPU when there is one, else the CPU; cuda:N names a GPU"),
    "trainer.precision": Choice(options=("auto", "fp32", "bf16", "fp16")).means(
        "number format of the training arithmetic; fp16 is GPU only; auto takes bf16 where the CPU or GPU "
        "multiplies bf16 natively, else fp32"),
    "trainer.compile": Bool().means(
        "true runs the model through torch.compile (a slower start, faster updates where it pays); a speedup, "
        "refused under trainer.speedups=off"),
    "trainer.compile_mode": Choice(options=COMPILE_MODES).means(
        "torch.compile's mode when trainer.compile=true; reduce-overhead records CUDA graphs (pair it with "
        "data.pad_to_multiple=8)"),
    "trainer.matmul": Choice(options=("torch", "openblas", "auto")).means(
        "who computes nn.Linear's products in CPU training updates: torch, openblas (numpy's OpenBLAS; fp32, "
        "eager) or auto (openblas where it was measured to pay, else torch); trainer.speedups=off means torch"),
    "trainer.cuda_graphs": Bool(hint="true: one CUDA graph replayed per batch shape (GPU, fp32 or bf16)").means(
        "record each batch shape's update (forward, loss, backward, clipping) as a CUDA graph and replay it; "
        "pair it with data.pad_to_multiple=8; a speedup, refused under trainer.speedups=off"),
    "trainer.speedups": Choice(options=("auto", "off")).means(
        "auto turns each speedup on where it was measured to pay (the fused loss, kept memory and glibc's heap "
        "on a CPU, the model's dropout mask and padded RNN runs), with trainer.matmul, trainer.compile and "
        "trainer.cuda_graphs deciding theirs; off trains through nmt/core's plain code alone and refuses those "
        "keys asking for a speedup; one log line at the start names what is on"),
    "trainer.seed": SEED.means(
        "seeds the random generators: the model's first weights, dropout and the order of the batches"),
    "trainer.resume": Text(null=True, hint="null, auto, or the path of a checkpoint").means(
        "the checkpoint a run continues from: null starts afresh, auto continues checkpoints/last.pt of this "
        "run folder (hydra.run.dir) or starts afresh in an empty one"),
    "trainer.resume_force": Bool().means(
        "true resumes even when the checkpoint's data or vocabulary settings differ from this config"),
    "trainer.resume_weights_only": Bool().means(
        "true starts a new run (step 0, fresh optimiser and schedule) from the weights of trainer.resume=PATH"),
    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off").means(
        "the largest L2 norm of all gradients together; a larger gradient is scaled down to it before the step"),
    "trainer.accumulate": POSITIVE.means(
        "batches whose gradients are summed into one optimiser update (about accumulate x data.batch_tokens)"),
    "trainer.label_smoothing": Float(low=0, high=1, high_open=True, hint="0 turns smoothing off").means(
        "epsilon of label smoothing (Szegedy et al. 2016): the training target spreads epsilon of its "
        "probability evenly over the vocabulary"),
    "trainer.metric": Choice(options=("bleu", "chrf", "loss")).means(
        "the validation score that chooses best.pt and drives early stopping and the plateau schedule "
        "(BLEU and chrF higher is better, the loss lower)"),
    "trainer.patience": Int(low=0, hint="0 never stops early").means(
        "validations in a row without a better trainer.metric after which the run stops early"),
    "trainer.keep_last": Int(low=0, hint="0 keeps no step checkpoints").means(
        "step checkpoints (step_N.pt) kept beside last.pt and best.pt; older ones are deleted"),
    "trainer.save_every": Int(low=0, hint="0 saves step checkpoints at validations only").means(
        "also write step_N.pt every N updates between validations (unscored; keep_last applies)"),
    "trainer.average_last": Int(low=0, hint="0 turns averaging off").means(
        "at the end, average the last N step checkpoints into averaged.pt and validate it (keeps "
        "max(keep_last, N) of them)"),
    "trainer.average_best": Int(low=0, hint="0 turns averaging off").means(
        "at the end, average the N best-validated step checkpoints (by trainer.metric) into "
        "averaged_best.pt and validate it"),
    "trainer.val_beam_size": Int(low=1, high=MAX_VAL_BEAM, hint="each validation decodes every sentence "
                                 "with this many hypotheses").means(
        "beam width of the search that translates the validation set; 1 is greedy search"),
    "trainer.val_max_sentences": Int(low=1, null=True, hint="null validates on all sentences").means(
        "validate on the first N validation sentences only"),
    "trainer.test_max_sentences": Int(low=0, null=True, hint="null scores all test sentences, 0 none").means(
        "at the end, score best.pt on the first N test sentences"),
    "trainer.heatmap_sentences": COUNT.means(
        "validation sentences whose attention heatmaps are drawn to TensorBoard at each validation; 0 none"),
    "trainer.max_bad_steps": POSITIVE.means(
        "non-finite (NaN or infinite) losses in a row that stop the run; each such update is skipped"),
    "trainer.peer_timeout_s": Float(low=0, low_open=True).means(
        "torchrun: seconds a collective between updates waits for a rank that stopped or died; then rank 0 "
        "saves last.pt and every rank ends with one line"),
    "trainer.hard_baseline_decay": Float(low=0, high=1, high_open=True).means(
        "scope=hard: decay d of REINFORCE's running reward baseline b = d b + (1 - d) reward"),
    "trainer.coverage_penalty": Float(low=0, hint="0 turns it off").means(
        "beta of Wu et al. 2016's coverage penalty in the validation beam search (trainer.val_beam_size > 1)"),
    "trainer.guided_alignment.weight": Float(low=0, hint="0 turns it off").means(
        "lambda of Garg et al. 2019's loss, the cross-entropy pulling one attention toward "
        "data.train_alignments; 0 trains exactly as without it"),
    "trainer.guided_alignment.layer": Int().means(
        "the Transformer decoder layer whose cross-attention is supervised, negative from the last (-2: "
        "Garg et al.'s penultimate); an RNN decoder's one attention ignores it"),
    "trainer.guided_alignment.head": COUNT.means(
        "the head of that layer that is supervised, 0-based (Transformer decoders only)"),

    # optimizer (configs/optimizer)
    "optimizer.lr": Float(low=0, low_open=True).means(
        "the learning rate lr0 that the schedule scales (constant: lr0 throughout)"),
    "optimizer.betas": Pair(item=Float(low=0, high=1, high_open=True)).means(
        "Adam's decay rates [beta1, beta2] of the running means of the gradient and of its square"),
    "optimizer.eps": Float(low=0).means(
        "added to the square root in the denominator of Adam's update, for numerical stability"),
    "optimizer.weight_decay": Float(low=0).means(
        "adam: an L2 penalty added to the gradient; adamw: each step shrinks the weights by lr x this "
        "(Loshchilov & Hutter 2019); 0 none"),
    "optimizer.fused": Bool(hint="true: one fused kernel per step; false: torch's per-parameter loop").means(
        "how torch runs the optimiser step, on the CPU and on CUDA alike"),

    # schedule (configs/schedule)
    "schedule.warmup_steps": POSITIVE.means(
        "updates over which the learning rate rises linearly to optimizer.lr, before it decays "
        "(inverse_sqrt: as 1/sqrt(step); budget_decay: linearly to the budget's end)"),
    "schedule.factor": Float(low=0, high=1, low_open=True, high_open=True).means(
        "plateau: the learning rate is multiplied by this when trainer.metric stalls"),
    "schedule.patience": COUNT.means(
        "plateau: validations without a better trainer.metric that pass before the rate is cut"),
    "schedule.min_lr": Float(low=0).means(
        "plateau: the learning rate is never cut below this"),
    "schedule.final_fraction": Float(low=0, high=1).means(
        "budget_decay: the learning rate when the budget ends, as a fraction of optimizer.lr"),

    # data (configs/data)
    "data.kind": Choice(options=("multi30k", "files", "toy")).means(
        "which loader reads the corpus; the data=OPTION chosen sets it"),
    "data.path": Text(null=True).means(
        "a local Multi30k folder (train, val, test_2016_flickr per language, plain or .gz); null downloads "
        "the hub copy data.hub_id"),
    "data.hub_id": Text().means(
        "the Hugging Face dataset read when data.path is null (bentrevett/multi30k holds de and en only)"),
    "data.src_lang": Choice(options=LANGUAGES).means(
        "the language translated from"),
    "data.tgt_lang": Choice(options=LANGUAGES).means(
        "the language translated into (not data.src_lang)"),
    "data.train_src": Text().means(
        "the training source file: UTF-8, one sentence a line, plain or .gz (??? = must be given)"),
    "data.train_tgt": Text().means(
        "the training target file, line by line the translations of data.train_src"),
    "data.valid_src": Text().means(
        "the validation source file, translated at each validation"),
    "data.valid_tgt": Text().means(
        "the validation references, line by line for data.valid_src"),
    "data.test_src": Text(null=True).means(
        "the test source file, scored with best.pt at the end; null: no test set (give both or neither)"),
    "data.test_tgt": Text(null=True).means(
        "the test references, line by line for data.test_src; null with data.test_src"),
    "data.train_alignments": Text(null=True).means(
        "Pharaoh file of word links \"i-j ...\" (0-based source-target), one line per training pair, for "
        "trainer.guided_alignment; null: none"),
    "data.n_train": POSITIVE.means(
        "toy: training pairs drawn"),
    "data.n_valid": POSITIVE.means(
        "toy: validation pairs drawn"),
    "data.n_test": COUNT.means(
        "toy: test pairs drawn; 0 gives no test set"),
    "data.seed": SEED.means(
        "toy: which sentences are drawn (trainer.seed drives the batching)"),
    "data.max_len": POSITIVE.means(
        "training pairs with more subwords than this on either side are dropped"),
    "data.batch_tokens": POSITIVE.means(
        "padded positions per batch, B x max(S, T+1): sentences per batch times the longer side"),
    "data.pad_to_multiple": Int(low=1, hint="1 pads each batch to its longest sentence; 8 gives few shapes").means(
        "each batch's source and target lengths are padded up to a multiple of this"),
    "data.sort_by": Choice(options=("source", "target")).means(      # nmt.data.batching.SORT_KEYS
        "batches are cut from the pairs sorted by (source, target) length, or by (target, source) as Marian "
        "does: less target padding, other batches"),
    "data.vocab_size": Int(low=5, high=MAX_VOCAB, hint="4 special pieces and at least one more; at most 2^20: "
                           "the output layer holds a row per piece").means(
        "subwords in each sentencepiece model, its 4 special pieces (pad, unk, <s>, </s>) included"),
    "data.spm_model_type": Choice(options=("unigram", "bpe")).means(
        "sentencepiece's way of cutting words: unigram (Kudo 2018) or bpe (Sennrich et al. 2016)"),
    "data.joint_vocab": Bool().means(
        "true: one sentencepiece model for both languages; false: one for each side"),
    "data.streaming": Bool().means(
        "true: the training files are read a buffer at a time, not all into memory (data=files_streaming)"),
    "data.buffer_pairs": POSITIVE.means(
        "streaming: pairs encoded and bucketed at a time; bounds memory and how far the shuffle reaches"),
    "data.spm_sentences": POSITIVE.means(
        "streaming: sentences sampled (per model, seeded) to learn the vocabulary"),

    # model/encoder and model/decoder (RNN, LSTMN, Transformer); {part} is encoder or decoder
    **{f"model.{part}.{key}": rule.means(rule.meaning.format(part=part))
       for part in ("encoder", "decoder") for key, rule in {
        "cell": Choice(options=("gru", "lstm")).means(
            "RNN {part}: its recurrent cell"),
        "embed_dim": POSITIVE.means(
            "RNN and LSTMN {part}: the size of its subword embeddings"),
        "layers": POSITIVE.means(
            "stacked layers: RNN layers, or Transformer blocks"),
        "dropout": DROPOUT.means(
            "dropout probability in the {part}: RNN on its embeddings, outputs and between layers; "
            "Transformer on its embeddings, attention weights and each sublayer's output"),
        "d_model": POSITIVE.means(
            "Transformer {part}: the size of each position's vector, in and out of every block"),
        "heads": POSITIVE.means(
            "Transformer {part}: attention heads of each attention layer; must divide d_model"),
        "ff_size": POSITIVE.means(
            "Transformer {part}: the inner size of each block's feed-forward layer"),
        "norm_first": Bool().means(
            "Transformer {part}: true normalises each sublayer's input (pre-LN), false the residual sum "
            "(post-LN, as Vaswani et al. 2017)"),
        "normaliser": Choice(options=("softmax", "sparsemax", "entmax15")).means(
            "Transformer {part}: what turns every attention's scores into weights; model.attention.normaliser "
            "by default"),
    }.items()},
    "model.encoder.hidden_size": POSITIVE.means(
        "RNN and LSTMN encoder: the size of the states it outputs; bidirectional: half per direction (even)"),
    "model.decoder.hidden_size": POSITIVE.means(
        "RNN decoder: the size of its recurrent state"),
    "model.encoder.bidirectional": Bool().means(
        "RNN encoder: true reads the source both ways and joins the two states, [forward; backward]"),
    "model.decoder.style": Choice(options=("luong", "bahdanau")).means(
        "RNN decoder: luong queries attention with the new state; bahdanau with the previous one, and "
        "feeds the context into the recurrence"),
    "model.decoder.input_feeding": Bool().means(
        "Luong style: the last attentional vector is fed into the next step's input (Luong et al. 2015, 3.3)"),
    "model.decoder.tie_embeddings": Bool().means(
        "the output layer shares the target embeddings' weights (RNN: needs embed_dim == hidden_size)"),
    "model.share_embeddings": Bool().means(
        "one embedding table for source and target subwords (needs data.joint_vocab=true)"),
    "model.decoder.attention_layer": Int(hint="-1 is the last layer").means(
        "Transformer decoder: the layer whose cross-attention heatmaps and Translation.attention show"),
    "model.decoder.attention_head": Int(low=0, null=True, hint="null = the mean over heads").means(
        "Transformer decoder: the cross-attention head shown, 0-based"),

    # model/attention
    "model.attention.scope": Choice(options=("global", "local_m", "local_p", "hard")).means(
        "the source positions a target step attends to: global all; local_m a window around position t; "
        "local_p a Gaussian window around a predicted position; hard one sampled position (all but global: "
        "RNN decoders only)"),
    "model.attention.window": COUNT.means(
        "D: local_m and local_p attend to [p - D, p + D] (local_p's Gaussian: sigma = D / 2); global and "
        "hard ignore it"),
    "model.attention.normaliser": Choice(options=("softmax", "sparsemax", "entmax15")).means(
        "what turns scores into weights: softmax, sparsemax or 1.5-entmax (which can give exact zeros); "
        "also every Transformer attention"),
    "model.attention.hidden_dim": POSITIVE.means(
        "the size of the score's hidden layer tanh(...), the length of v_a"),
    "model.attention.sharpness": Float(low=0, low_open=True).means(
        "beta, the factor on the cosine before normalising (its starting value when learned)"),
    "model.attention.learn_sharpness": Bool().means(
        "true trains beta; false keeps it at model.attention.sharpness"),
    "model.attention.coverage_loss_weight": Float(low=0, hint="0 turns it off").means(
        "lambda of the coverage loss sum_i min(a_t,i, c_t,i) per target token (See et al. 2017)"),
    "model.attention.max_len": POSITIVE.means(
        "the longest source it attends over: W_a scores this many positions (at least data.max_len)"),
    "model.attention.heads": POSITIVE.means(
        "heads of scaled dot-product attention; must divide the encoder's state size"),
    "model.attention.scaled": Bool(hint="luong_general: true divides the score by sqrt(d)").means(
        "true divides the score by sqrt(d), d the decoder's state size (Vaswani et al. 2017's scaling)"),

    # model/bridge
    "model.bridge.hidden_dim": POSITIVE.means(
        "the size of the bridge's hidden layer: han's u = tanh(W h + b), structured's d_a"),
    "model.bridge.hops": POSITIVE.means(
        "r, the rows of A: how many attention distributions over the source are read"),
    "model.bridge.penalty_weight": Float(low=0).means(
        "multiplies the batch-mean penalty ||A A^T - I||_F^2 added to the loss; 0 leaves it out"),

    # model/positional
    "model.positional.kind": Choice(options=("none", "learned", "sinusoidal", "relative", "rotary",
                                             "alibi")).means(
        "the positional encoding; model/positional=OPTION sets it (another kind than its class's is refused)"),
    "model.positional.max_len": POSITIVE.means(
        "positions it has a trained vector for; must cover data.max_len + 1 (for <s>)"),
    "model.positional.max_relative": POSITIVE.means(
        "offsets between two positions are clipped to [-max_relative, max_relative]"),
    "model.positional.values": Bool().means(
        "true adds relative embeddings to the attention's values too (Shaw et al.'s a^V), false to keys only"),
    "model.positional.base": Float(low=0, low_open=True).means(
        "the base of the wavelengths, 10000 in Vaswani et al. 2017 (rotary: theta_i = base^(-2i/d))"),
}
