"""RULES: the allowed values of every leaf of the composed config tree
(nmt/configs/*.yaml with every group option), by dotted path.

    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off"),
    "trainer.metric":    Choice(options=("bleu", "chrf", "loss")),

Rules are per key, not per option: `model.encoder.layers` means the same for
an LSTM and a Transformer encoder. tests/test_config_schema.py composes every
option of every group and fails for any leaf that has no rule, so a new key
needs one (add it below).
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
    "cache_dir": Text(),

    # trainer (configs/trainer/default.yaml)
    "trainer.max_steps": POSITIVE,
    "trainer.max_epochs": POSITIVE,
    "trainer.max_minutes": Float(low=0, low_open=True, null=True, hint="null = no time budget"),
    "trainer.val_every": POSITIVE,
    "trainer.log_every": POSITIVE,
    "trainer.device": Choice(options=("auto", "cpu", "cuda"), prefixes=("cuda:",)),
    "trainer.precision": Choice(options=("auto", "fp32", "bf16", "fp16")),
    "trainer.compile": Bool(),
    "trainer.compile_mode": Choice(options=COMPILE_MODES),
    "trainer.matmul": Choice(options=("torch", "openblas", "auto")),
    "trainer.cuda_graphs": Bool(hint="true: one CUDA graph replayed per batch shape (GPU, fp32 or bf16)"),
    "trainer.seed": SEED,
    "trainer.resume": Text(null=True, hint="null, auto, or the path of a checkpoint"),
    "trainer.resume_force": Bool(),
    "trainer.resume_weights_only": Bool(),
    "trainer.grad_clip": Float(low=0, hint="0 turns clipping off"),
    "trainer.accumulate": POSITIVE,
    "trainer.label_smoothing": Float(low=0, high=1, high_open=True, hint="0 turns smoothing off"),
    "trainer.metric": Choice(options=("bleu", "chrf", "loss")),
    "trainer.patience": Int(low=0, hint="0 never stops early"),
    "trainer.keep_last": Int(low=0, hint="0 keeps no step checkpoints"),
    "trainer.save_every": Int(low=0, hint="0 saves step checkpoints at validations only"),
    "trainer.average_last": Int(low=0, hint="0 turns averaging off"),
    "trainer.average_best": Int(low=0, hint="0 turns averaging off"),
    "trainer.val_beam_size": Int(low=1, high=MAX_VAL_BEAM, hint="each validation decodes every sentence "
                                 "with this many hypotheses"),
    "trainer.val_max_sentences": Int(low=1, null=True, hint="null validates on all sentences"),
    "trainer.test_max_sentences": Int(low=0, null=True, hint="null scores all test sentences, 0 none"),
    "trainer.heatmap_sentences": COUNT,
    "trainer.max_bad_steps": POSITIVE,
    "trainer.peer_timeout_s": Float(low=0, low_open=True),
    "trainer.hard_baseline_decay": Float(low=0, high=1, high_open=True),
    "trainer.coverage_penalty": Float(low=0, hint="0 turns it off"),
    "trainer.guided_alignment.weight": Float(low=0, hint="0 turns it off"),
    "trainer.guided_alignment.layer": Int(),
    "trainer.guided_alignment.head": COUNT,

    # optimizer (configs/optimizer)
    "optimizer.lr": Float(low=0, low_open=True),
    "optimizer.betas": Pair(item=Float(low=0, high=1, high_open=True)),
    "optimizer.eps": Float(low=0),
    "optimizer.weight_decay": Float(low=0),
    "optimizer.fused": Bool(hint="true: one fused kernel per step; false: torch's per-parameter loop"),

    # schedule (configs/schedule)
    "schedule.warmup_steps": POSITIVE,
    "schedule.factor": Float(low=0, high=1, low_open=True, high_open=True),
    "schedule.patience": COUNT,
    "schedule.min_lr": Float(low=0),
    "schedule.final_fraction": Float(low=0, high=1),

    # data (configs/data)
    "data.kind": Choice(options=("multi30k", "files", "toy")),
    "data.path": Text(null=True),
    "data.hub_id": Text(),
    "data.src_lang": Choice(options=LANGUAGES),
    "data.tgt_lang": Choice(options=LANGUAGES),
    "data.train_src": Text(),
    "data.train_tgt": Text(),
    "data.valid_src": Text(),
    "data.valid_tgt": Text(),
    "data.test_src": Text(null=True),
    "data.test_tgt": Text(null=True),
    "data.train_alignments": Text(null=True),
    "data.n_train": POSITIVE,
    "data.n_valid": POSITIVE,
    "data.n_test": COUNT,
    "data.seed": SEED,
    "data.max_len": POSITIVE,
    "data.batch_tokens": POSITIVE,
    "data.pad_to_multiple": Int(low=1, hint="1 pads each batch to its longest sentence; 8 gives few shapes"),
    "data.sort_by": Choice(options=("source", "target")),      # nmt.data.batching.SORT_KEYS
    "data.vocab_size": Int(low=5, high=MAX_VOCAB, hint="4 special pieces and at least one more; at most 2^20: "
                           "the output layer holds a row per piece"),
    "data.spm_model_type": Choice(options=("unigram", "bpe")),
    "data.joint_vocab": Bool(),
    "data.streaming": Bool(),
    "data.buffer_pairs": POSITIVE,
    "data.spm_sentences": POSITIVE,

    # model/encoder and model/decoder (RNN, LSTMN, Transformer)
    **{f"model.{part}.{key}": rule for part in ("encoder", "decoder") for key, rule in {
        "cell": Choice(options=("gru", "lstm")),
        "embed_dim": POSITIVE,
        "hidden_size": POSITIVE,
        "layers": POSITIVE,
        "dropout": DROPOUT,
        "d_model": POSITIVE,
        "heads": POSITIVE,
        "ff_size": POSITIVE,
        "norm_first": Bool(),
        "normaliser": Choice(options=("softmax", "sparsemax", "entmax15")),
    }.items()},
    "model.encoder.bidirectional": Bool(),
    "model.decoder.style": Choice(options=("luong", "bahdanau")),
    "model.decoder.input_feeding": Bool(),
    "model.decoder.tie_embeddings": Bool(),
    "model.share_embeddings": Bool(),
    "model.decoder.attention_layer": Int(hint="-1 is the last layer"),
    "model.decoder.attention_head": Int(low=0, null=True, hint="null = the mean over heads"),

    # model/attention
    "model.attention.scope": Choice(options=("global", "local_m", "local_p", "hard")),
    "model.attention.window": COUNT,
    "model.attention.normaliser": Choice(options=("softmax", "sparsemax", "entmax15")),
    "model.attention.hidden_dim": POSITIVE,
    "model.attention.sharpness": Float(low=0, low_open=True),
    "model.attention.learn_sharpness": Bool(),
    "model.attention.coverage_loss_weight": Float(low=0, hint="0 turns it off"),
    "model.attention.max_len": POSITIVE,
    "model.attention.heads": POSITIVE,
    "model.attention.scaled": Bool(hint="luong_general: true divides the score by sqrt(d)"),

    # model/bridge
    "model.bridge.hidden_dim": POSITIVE,
    "model.bridge.hops": POSITIVE,
    "model.bridge.penalty_weight": Float(low=0),

    # model/positional
    "model.positional.kind": Choice(options=("none", "learned", "sinusoidal", "relative", "rotary",
                                             "alibi")),
    "model.positional.max_len": POSITIVE,
    "model.positional.max_relative": POSITIVE,
    "model.positional.values": Bool(),
    "model.positional.base": Float(low=0, low_open=True),
}
