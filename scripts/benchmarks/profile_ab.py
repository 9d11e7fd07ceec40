"""Same-process A/B micro-benchmarks of the training step's parts, one thread.

    python -m scripts.benchmarks.profile_ab optimizer dropout dropout_update loss rnn_step --rounds 15

Each candidate runs beside the code it would replace in one process,
alternating A, B, B, A, ... over `--rounds` rounds, so a machine that is busy
with other work slows both alike; what is printed is the median over rounds
of time(B) / time(A) (below 1: B is faster), not absolute times. Shapes are
those of the presets on Multi30k (data.batch_tokens=4096, 8k joint vocabulary).

  optimizer  Adam's for-loop step (torch's CPU default) against foreach=True and
             fused=True, over the parameters of transformer_small and rnn_bahdanau
  dropout    F.dropout (one bernoulli_ per element) against a mask cut from 16-bit
             slices of 64-bit random words, forward and backward, (4096, 256) and (4096, 1024)
  loss       log-softmax, gather and mean with autograd's backward, against
             F.cross_entropy(label_smoothing=...), the one-pass backward that saved
             log-probabilities (exp in the backward), and token_losses' now (softmax
             saved, scaled in place)
  loss_update  a whole forward and backward of each preset with token_losses' loss,
             LabelSmoothedNLL saving log-probabilities against saving the softmax
  rnn_step   rnn_bahdanau's decoder, teacher-forced forward and backward, slicing
             emb[:, t] at every step against one emb.unbind(1)
  dropout_update  a whole forward and backward of each preset, its dropout modules
             drawing F.dropout's mask against nmt.speedups.dropout's
  dropout_bool  a whole forward and backward of each preset, nmt's dropout multiplying by a
             float noise tensor (now) against a bool mask applied with masked_fill
  kv_fused   transformer_small's forward and backward, each attention's keys and values
             from two products (w_k, w_v) against one product with the weights stacked
  encoder_pack  the bidirectional GRU encoder on packed sequences against
             nmt.speedups.padded_rnn, forward and backward
  precision  a whole forward and backward of each preset in fp32 against the
             trainer's trainer.precision=bf16 (torch.autocast on the CPU: bf16 matrix
             products, fp32 weights and loss)
  attention_dropout  transformer_small's forward and backward, dropout 0.1 on the attention
             weights (SDPA's math path) against none (its fused CPU kernel)
  dropout_noise  nmt's dropout noise m / q from its random words: the comparison written
             as float (now) against the bool mask cast to float and scaled, (4096, 256)
             and (4096, 1024)
  loss_scratch  LabelSmoothedNLL's forward and backward on (3700, 8000) logits, the
             softmax into a fresh tensor against into an UpdateScratch kept between calls
  compile    a whole forward and backward of each preset, eager against
             trainer.compile=true's torch.compile(model, dynamic=True) (compiled in
             the warm-up call)
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

VOCAB = 8000


def ab(name: str, variants: dict, rounds: int, reps: int = 1) -> dict:
    """Median over rounds of each variant's time / the first variant's time."""
    keys = list(variants)
    for fn in variants.values():  # warm-up: allocator, lazy state
        fn()
    times = {k: [] for k in keys}
    for r in range(rounds):
        for key in keys if r % 2 == 0 else keys[::-1]:
            start = time.perf_counter()
            for _ in range(reps):
                variants[key]()
            times[key].append((time.perf_counter() - start) / reps)
    base = keys[0]
    ratios = {k: statistics.median(t / b for t, b in zip(times[k], times[base])) for k in keys}
    print(f"{name}: time / time({base}), median of {rounds} alternating rounds")
    for k in keys:
        print(f"  {k:<40} {ratios[k]:.3f}")
    return ratios


def build(preset: str):
    from hydra import compose, initialize_config_dir

    from nmt.base.config_files import CONFIGS
    from nmt.models.build import build_model

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={preset}"])
    return build_model(cfg.model, VOCAB, VOCAB)


PRESETS = ("transformer_small", "rnn_bahdanau")
B, S, T = 128, 28, 26  # ~3,300 target tokens of a 4096-position batch


def random_batch(src_len: int = S, tgt_len: int = T) -> tuple[torch.Tensor, torch.Tensor]:
    """src (B, S) and tgt (B, T + 1) of random non-special ids."""
    return torch.randint(4, VOCAB, (B, src_len)), torch.randint(4, VOCAB, (B, tgt_len + 1))


def training_model(preset: str):
    model = build(preset)
    model.train()
    return model


def mean_log_prob(logits, labels):
    return logits.float().log_softmax(-1).mean()


def logit_sum(logits, labels):
    return logits.sum()


def smoothed_loss(logits, labels):
    from nmt.speedups.fused_loss import fused_label_smoothed_nll

    return fused_label_smoothed_nll(logits, labels, 0, 0.1)[0].sum()


def patched_update(model, src, tgt, owner, attribute: str, replacement, objective=mean_log_prob):
    """A run of `ab`: one forward and backward of `model` on (src, tgt) with
    owner.attribute (a method or a class) replaced for its duration."""

    def run():
        current = getattr(owner, attribute)
        setattr(owner, attribute, replacement)
        try:
            out, _ = model(src, tgt[:, :-1])
            objective(out.logits, tgt[:, 1:]).backward()
        finally:
            setattr(owner, attribute, current)

    return run


def bench_optimizer(rounds: int) -> None:
    for preset in ("transformer_small", "rnn_bahdanau"):
        params = list(build(preset).parameters())
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        optimizers = {
            "Adam for-loop (CPU default)": torch.optim.Adam(params, lr=1e-4, foreach=False),
            "Adam foreach=True": torch.optim.Adam(params, lr=1e-4, foreach=True),
            "Adam fused=True": torch.optim.Adam(params, lr=1e-4, fused=True),
            "AdamW fused=True": torch.optim.AdamW(params, lr=1e-4, fused=True),
        }
        ab(
            f"optimizer step, {preset} ({sum(p.numel() for p in params):,} parameters)",
            {k: o.step for k, o in optimizers.items()},
            rounds,
            reps=3,
        )


def dropout_words(x, p: float):
    """nmt.speedups.dropout's mask: 16-bit slices of random 64-bit words."""
    from nmt.speedups.dropout import dropout_noise

    return x * dropout_noise(x.shape, p, x.device, x.dtype)


def bench_dropout(rounds: int) -> None:
    for shape in ((4096, 256), (4096, 1024)):
        x = torch.randn(*shape, requires_grad=True)
        g = torch.randn(*shape)

        def run(fn):
            return lambda: fn(x).backward(g)

        ab(
            f"dropout p=0.1 forward+backward {shape}",
            {
                "F.dropout": run(lambda t: F.dropout(t, 0.1, True)),
                "64-bit words, 16-bit slices": run(lambda t: dropout_words(t, 0.1)),
                "rand_like(x) >= p": run(lambda t: t.masked_fill(torch.rand_like(t) < 0.1, 0.0) / 0.9),
            },
            rounds,
            reps=3,
        )
        ab(
            f"dropout p=0.1 mask only {shape}",
            {
                "bernoulli_": lambda: torch.empty(shape).bernoulli_(0.9),
                "64-bit words, 16-bit slices": lambda: torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_(
                    -(2**63), 2**63 - 1
                ),
            },
            rounds,
            reps=3,
        )


def noise_cast_from_bool(words, shape, p: float):
    """nmt.speedups.dropout's m / q as it was to 410dd26: the bool mask, cast to float, scaled."""
    from nmt.speedups.dropout import LEVELS

    cut = round(p * LEVELS)
    keep = words.view(torch.int16)[: shape[0] * shape[1]].view(shape) >= cut - LEVELS // 2
    return keep.to(torch.float32).mul_(LEVELS / (LEVELS - cut))


def bench_dropout_noise(rounds: int) -> None:
    from nmt.speedups.dropout import noise_from_words

    for shape in ((4096, 256), (4096, 1024)):
        words = torch.empty((shape[0] * shape[1] + 3) // 4, dtype=torch.int64).random_(-(2**63), 2**63 - 1)
        assert torch.equal(noise_from_words(words, shape, 0.1), noise_cast_from_bool(words, shape, 0.1))
        ab(
            f"dropout noise p=0.1 {shape}",
            {
                "bool mask, cast, scaled": lambda: noise_cast_from_bool(words, shape, 0.1),
                "comparison written as float, scaled": lambda: noise_from_words(words, shape, 0.1),
            },
            rounds,
            reps=3,
        )


def bench_loss_scratch(rounds: int) -> None:
    from nmt.speedups.fused_loss import LabelSmoothedNLL
    from nmt.speedups.scratch import UpdateScratch

    logits = torch.randn(3700, VOCAB, requires_grad=True)
    labels = torch.randint(0, VOCAB, (3700,))
    scratch = UpdateScratch()

    def run(kept):
        def once():
            smoothed, _ = LabelSmoothedNLL.apply(logits, labels, 0.1, kept)
            torch.autograd.grad(smoothed.sum(), logits)

        return once

    ab(
        "label-smoothed loss forward+backward (3700, 8000)",
        {
            "softmax into a fresh tensor": run(None),
            "softmax into an UpdateScratch": run(scratch),
        },
        rounds,
    )


class LogProbsSaved(torch.autograd.Function):
    """LabelSmoothedNLL as it was from 341e2ae: log-softmax saved, exp in the backward."""

    @staticmethod
    def forward(ctx, logits, labels, smoothing):
        log_probs = logits.float().log_softmax(-1)
        nll = -log_probs.gather(-1, labels[:, None])[:, 0]
        smoothed = (1.0 - smoothing) * nll - smoothing * log_probs.mean(-1)
        ctx.save_for_backward(log_probs, labels)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        ctx.mark_non_differentiable(nll)
        return smoothed, nll

    @staticmethod
    def backward(ctx, grad, _):
        log_probs, labels = ctx.saved_tensors
        eps, V = ctx.smoothing, log_probs.size(-1)
        g = grad.float()[:, None]
        out = log_probs.exp().mul_(g).sub_(g * (eps / V))
        out.scatter_add_(-1, labels[:, None], -(1.0 - eps) * g)
        return out.to(ctx.dtype), None, None


def bench_loss(rounds: int) -> None:
    from nmt.speedups.fused_loss import fused_label_smoothed_nll as token_losses

    N = 3300  # target tokens of a 4096-position batch
    logits = torch.randn(1, N, VOCAB, requires_grad=True)
    labels = torch.randint(4, VOCAB, (1, N))
    labels[0, -100:] = 0  # some padding
    real = labels != 0

    def autograd():
        """token_losses as it was: log-softmax, gather and mean, autograd's backward."""
        log_probs = F.log_softmax(logits.float(), dim=-1)
        nll = -log_probs.gather(-1, labels.masked_fill(~real, 0)[..., None])[..., 0]
        smoothed = 0.9 * nll - 0.1 * log_probs.mean(-1)
        smoothed.masked_fill(~real, 0.0).sum().backward()

    def cross_entropy():
        flat, y = logits.view(N, VOCAB), labels.view(N)
        smoothed = F.cross_entropy(flat, y, ignore_index=0, label_smoothing=0.1, reduction="none")
        with torch.no_grad():
            F.cross_entropy(flat, y, ignore_index=0, reduction="none")  # the logged NLL
        smoothed.sum().backward()

    def now():
        smoothed, _ = token_losses(logits, labels, 0, 0.1)
        smoothed.sum().backward()

    def log_probs_saved():
        safe = labels.masked_fill(~real, 0).view(N)
        smoothed, _ = LogProbsSaved.apply(logits.view(N, VOCAB), safe, 0.1)
        smoothed.masked_fill(~real.view(N), 0.0).sum().backward()

    ab(
        f"loss forward+backward ({N} tokens, V={VOCAB})",
        {
            "log-softmax, gather, mean (autograd)": autograd,
            "F.cross_entropy x2": cross_entropy,
            "LabelSmoothedNLL, log-probs saved (before)": log_probs_saved,
            "LabelSmoothedNLL, softmax saved (now)": now,
        },
        rounds,
    )


def bench_loss_update(rounds: int) -> None:
    """A whole forward+backward of each preset, its loss token_losses' with
    LabelSmoothedNLL as it was (log-probabilities saved) and as it is."""
    import nmt.speedups.fused_loss as loss

    for preset in PRESETS:
        model, (src, tgt) = training_model(preset), random_batch()
        ab(
            f"{preset} forward+backward (B={B}, S={S}, T={T}), label-smoothed loss",
            {
                "log-probs saved, exp in backward (before)": patched_update(
                    model, src, tgt, loss, "LabelSmoothedNLL", LogProbsSaved, smoothed_loss
                ),
                "softmax saved, scaled in place (now)": patched_update(
                    model, src, tgt, loss, "LabelSmoothedNLL", loss.LabelSmoothedNLL, smoothed_loss
                ),
            },
            rounds,
        )


def bench_rnn_step(rounds: int) -> None:
    from nmt.core import rnn_decoder as rnn

    current = rnn.RNNDecoder.forward  # emb.unbind(1) once

    def forward_sliced(self, tgt_in, state, memory, need_weights=False):
        """The decoder as it was: emb[:, t] at each step, whose backward writes a
        (B, T, E) gradient per step."""
        emb = self.dropout(self.embed(tgt_in))
        vecs, weights = [], []
        for t in range(tgt_in.size(1)):
            vec, state, att = self._step(emb[:, t], state, memory)
            vecs.append(vec)
            weights.append(att.weights)
        return rnn.DecoderOutput(self.output(torch.stack(vecs, 1)), torch.cat(weights, 1))

    model, (src, tgt) = build("rnn_bahdanau"), random_batch()

    def update(forward):
        return patched_update(model, src, tgt, rnn.RNNDecoder, "forward", forward, logit_sum)

    ab(
        f"rnn_bahdanau forward+backward (B={B}, S={S}, T={T})",
        {"emb[:, t] per step (before)": update(forward_sliced), "emb.unbind(1) once (now)": update(current)},
        rounds,
    )


def bench_dropout_update(rounds: int) -> None:
    """A whole forward+backward of each preset with the model's dropout
    modules drawing torch's mask (F.dropout) and their own (now)."""
    from nmt.speedups.dropout import Dropout

    def torch_mask(self, x):
        return F.dropout(x, self.p, self.training)

    for preset in PRESETS:
        model, (src, tgt) = training_model(preset), random_batch()
        ab(
            f"{preset} forward+backward (B={B}, S={S}, T={T}), dropout modules",
            {
                "F.dropout (bernoulli_, before)": patched_update(model, src, tgt, Dropout, "forward", torch_mask),
                "16-bit slices of 64-bit words (now)": patched_update(
                    model, src, tgt, Dropout, "forward", Dropout.forward
                ),
            },
            rounds,
        )


def bench_encoder_pack(rounds: int) -> None:
    """rnn_bahdanau's bidirectional GRU encoder forward+backward on packed
    sequences (as nmt ran it before) against nmt.speedups.padded_rnn
    (now), on a batch of mixed lengths. ATen's packed layer narrows the
    projected input at every step, and each narrow's backward writes a zero
    (N, 3H) tensor: O(S^2) memory traffic."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from nmt.speedups.padded_rnn import run_padded

    encoder = training_model("rnn_bahdanau").encoder
    x = torch.randn(B, S, 256, requires_grad=True)
    lengths = torch.randint(S // 2, S + 1, (B,))
    lengths[0] = S

    def packed():
        out, _ = encoder.rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        pad_packed_sequence(out, batch_first=True)[0].sum().backward()

    def padded():
        run_padded(encoder.rnn, x, lengths)[0].sum().backward()

    ab(
        f"bidirectional GRU encoder forward+backward (B={B}, S={S}, lengths {S // 2}..{S})",
        {"packed sequences (before)": packed, "run_padded (now)": padded},
        rounds,
    )

    # the whole model, its encoder as it was (packed) and as it is
    from nmt.core import rnn_encoder as rnn

    model, (src, tgt) = training_model("rnn_bahdanau"), random_batch()
    src[torch.arange(S)[None, :] >= lengths[:, None]] = 0  # padding

    def forward_packed(self, src, src_mask):
        n = src_mask[:, 0, :].sum(-1)
        x = self.dropout(self.embed(src))
        out, final = self.rnn(pack_padded_sequence(x, n.cpu().clamp(min=1), batch_first=True, enforce_sorted=False))
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        hidden = final[0] if isinstance(final, tuple) else final
        last = torch.cat([hidden[-2], hidden[-1]], -1) if self.bidirectional else hidden[-1]
        return rnn.EncoderOutput(self.dropout(memory), last)

    ab(
        f"rnn_bahdanau forward+backward (B={B}, S={S}, lengths {S // 2}..{S}, T={T})",
        {
            "packed encoder (before)": patched_update(model, src, tgt, rnn.RNNEncoder, "forward", forward_packed),
            "run_padded encoder (now)": patched_update(
                model, src, tgt, rnn.RNNEncoder, "forward", rnn.RNNEncoder.forward
            ),
        },
        rounds,
    )


class MaskedScale(torch.autograd.Function):
    """x * scale with the dropped entries 0, saving a bool mask (1 byte an entry, not 4)."""

    @staticmethod
    def forward(ctx, x, drop, scale):
        ctx.save_for_backward(drop)
        ctx.scale = scale
        return x.mul(scale).masked_fill_(drop, 0.0)

    @staticmethod
    def backward(ctx, grad):
        (drop,) = ctx.saved_tensors
        return grad.mul(ctx.scale).masked_fill_(drop, 0.0), None, None


def bench_dropout_bool(rounds: int) -> None:
    """nmt's Dropout as it is (x * a float noise tensor) against the same random
    words turned into a bool mask and applied with masked_fill."""
    from nmt.speedups.dropout import LEVELS, Dropout

    def bool_mask(self, x):
        if not self.training or self.p == 0.0:
            return x
        words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_(-(1 << 63), (1 << 63) - 1)
        cut = round(self.p * LEVELS)
        u = words.view(torch.int16)[: x.numel()].view(x.shape)
        return MaskedScale.apply(x, u < cut - LEVELS // 2, LEVELS / (LEVELS - cut))

    for preset in PRESETS:
        model, (src, tgt) = training_model(preset), random_batch()
        ab(
            f"{preset} forward+backward (B={B}, S={S}, T={T}), dropout",
            {
                "float noise tensor (now)": patched_update(
                    model, src, tgt, Dropout, "forward", Dropout.forward, smoothed_loss
                ),
                "bool mask, masked_fill": patched_update(model, src, tgt, Dropout, "forward", bool_mask, smoothed_loss),
            },
            rounds,
        )


def bench_kv_fused(rounds: int) -> None:
    """Keys and values of every attention of transformer_small from one matrix
    product (w_k and w_v stacked) against two (now)."""
    from nmt.core.multihead import MultiHeadAttention as Attention

    def stacked(self, x, positions=None):
        weight = torch.cat([self.w_k.weight, self.w_v.weight])  # (2D, Dkv)
        bias = torch.cat([self.w_k.bias, self.w_v.bias])
        k, v = (self._split(part) for part in F.linear(x, weight, bias).chunk(2, dim=-1))
        return (k if positions is None else self.position.rotate(k, positions)), v

    model, (src, tgt) = training_model("transformer_small"), random_batch()
    ab(
        f"transformer_small forward+backward (B={B}, S={S}, T={T}), keys and values",
        {
            "w_k, w_v: two products (now)": patched_update(
                model, src, tgt, Attention, "keys_values", Attention.keys_values, smoothed_loss
            ),
            "stacked: one product": patched_update(model, src, tgt, Attention, "keys_values", stacked, smoothed_loss),
        },
        rounds,
    )


def whole_update(model, src, tgt, autocast: bool = False):
    """A run of `ab`: one forward and backward of `model` with the label-smoothed
    loss, under bf16 autocast as the trainer runs trainer.precision=bf16."""

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out, _ = model(src, tgt[:, :-1])
        smoothed_loss(out.logits, tgt[:, 1:]).backward()

    return run


def bench_precision(rounds: int) -> None:
    for preset in PRESETS:
        model = training_model(preset)
        src, tgt = random_batch()
        ab(
            f"{preset}: forward+backward",
            {"fp32": whole_update(model, src, tgt), "bf16 autocast": whole_update(model, src, tgt, autocast=True)},
            rounds,
        )


def bench_compile(rounds: int) -> None:
    from nmt.speedups.eager_loop import keep_loop_eager

    for preset in PRESETS:
        model = training_model(preset)
        src, tgt = random_batch()
        keep_loop_eager()  # as trainer.compile=true does
        compiled = torch.compile(model, dynamic=True)
        ab(
            f"{preset}: forward+backward",
            {"eager": whole_update(model, src, tgt), "torch.compile(dynamic=True)": whole_update(compiled, src, tgt)},
            rounds,
        )


def bench_attention_dropout(rounds: int) -> None:
    """transformer_small's forward and backward with dropout on the attention weights (now:
    F.scaled_dot_product_attention with dropout_p = 0.1, which only its math path can do:
    bmm, softmax, a Bernoulli mask) against none (dropout_p = 0: the fused CPU kernel,
    flash attention); every other dropout as it is."""
    from nmt.core.multihead import MultiHeadAttention as Attention

    model, (src, tgt) = training_model("transformer_small"), random_batch()
    attentions = [m for m in model.modules() if isinstance(m, Attention)]

    def with_dropout(p: float):
        run = whole_update(model, src, tgt)

        def set_and_run():
            for attention in attentions:
                attention.dropout = p
            run()

        return set_and_run

    ab(
        f"transformer_small forward+backward (B={B}, S={S}, T={T}), attention-weight dropout",
        {"0.1 (now; SDPA's math path)": with_dropout(0.1), "0 (SDPA's fused CPU kernel)": with_dropout(0.0)},
        rounds,
    )


BENCHES = {
    "optimizer": bench_optimizer,
    "dropout": bench_dropout,
    "dropout_update": bench_dropout_update,
    "loss": bench_loss,
    "loss_update": bench_loss_update,
    "rnn_step": bench_rnn_step,
    "encoder_pack": bench_encoder_pack,
    "kv_fused": bench_kv_fused,
    "dropout_bool": bench_dropout_bool,
    "precision": bench_precision,
    "compile": bench_compile,
    "attention_dropout": bench_attention_dropout,
    "dropout_noise": bench_dropout_noise,
    "loss_scratch": bench_loss_scratch,
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("benches", nargs="+", choices=sorted(BENCHES))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for name in args.benches:
        BENCHES[name](args.rounds)


if __name__ == "__main__":
    main()
