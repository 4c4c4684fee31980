"""Training tiny attention-only transformers in numpy: the heads that learning grows.

The chapter says trained heads turn out to do legible jobs ("copy the previous
token", "find what followed this token last time") and lists what breaks when
a piece of the head is removed. This module trains models small enough to run
in seconds and checks those sentences against what actually happens.

The model: token and position embeddings add into a residual stream; each
layer is one head of the core's attention (`core.attention`: query, key,
value, scores, scale, mask, softmax / raw / top-1, blend) whose output is
mapped back to the stream by W_O and added; an unembedding gives logits;
the loss is cross-entropy. The backward pass is written by hand, each step's
gradient right beside the step it undoes, and checked against finite
differences (tests/test_train.py). Adam updates every parameter.

    python -m core.train previous-token [--steps N] [--seed S]
    python -m core.train --all          # regenerate every shipped run in static/lab/
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from core.attention import (
    blend,
    causal_mask,
    key,
    mask,
    query,
    raw_weights,
    scale,
    scores,
    softmax,
    top1,
    value,
)

LAB_DIR = Path(__file__).resolve().parents[1] / "static" / "lab"


def T_(a: np.ndarray) -> np.ndarray:
    """Transpose the last two axes (a batch of matrices)."""
    return np.swapaxes(a, -1, -2)


# --- the head's steps, each forward beside its backward ------------------------------------------
# The forwards are the core's own functions; a backward takes the gradient of the loss with respect
# to the step's output and returns it with respect to the step's inputs.


def project(X, W):
    """Q = X·W_Q (and K, V the same way): core.attention.query / key / value, batched over sequences."""
    return X @ W


def project_back(dY, X, W):
    return dY @ W.T, np.einsum("btc,btd->cd", X, dY)


def batch_scores(Q, K):
    """S = Q·Kᵀ for each sequence of the batch (core.attention.scores works on one)."""
    return np.stack([scores(q, k) for q, k in zip(Q, K)])


def scores_back(dS, Q, K):
    return dS @ K, T_(dS) @ Q


def scale_back(dS, d):
    return dS / math.sqrt(d)


def mask_back(dM, future):
    return np.where(future, 0.0, dM)


def softmax_back(dA, A):
    return A * (dA - (dA * A).sum(axis=-1, keepdims=True))


def raw_back(dA, M):
    """Raw weights are the scores themselves where visible, 0 where masked."""
    return np.where(np.isfinite(M), dA, 0.0)


def batch_top1(M):
    """One-hot on each row's largest score (core.attention.top1 works row by row, so rows are stacked)."""
    return top1(M.reshape(-1, M.shape[-1])).reshape(M.shape)


def top1_back(dA, M):
    """A one-hot choice does not move when the scores move a little: its gradient is zero."""
    return np.zeros_like(dA)


NORMALISE = {  # name -> (forward, backward)
    "softmax": (softmax, lambda dA, A, M: softmax_back(dA, A)),
    "raw": (raw_weights, lambda dA, A, M: raw_back(dA, M)),
    "top1": (batch_top1, lambda dA, A, M: top1_back(dA, M)),
}


def blend_back(dO, A, V):
    return dO @ T_(V), T_(A) @ dO


# --- the switches and the model ---------------------------------------------------------------------


@dataclass(frozen=True)
class Switches:
    """The head's options, the same four the explorer has."""

    scaling: bool = True
    causal: bool = True
    tied_qk: bool = False
    normaliser: str = "softmax"


@dataclass(frozen=True)
class Shape:
    V: int  # vocabulary
    T: int  # sequence length
    C: int  # residual stream width
    d: int  # head width
    layers: int


def init_params(shape: Shape, rng: np.random.Generator) -> dict:
    """Embeddings with entries of variance 1/2 each, so the stream's entries have variance ~1; projections
    with variance 1/C, so each query and key entry has variance ~1 and raw scores spread like √d, as the
    chapter assumes."""
    V, T, C, d = shape.V, shape.T, shape.C, shape.d
    p = {"E": rng.normal(0, math.sqrt(0.5), (V, C)), "P": rng.normal(0, math.sqrt(0.5), (T, C))}
    for n in range(shape.layers):
        for w in ("W_Q", "W_K", "W_V"):
            p[f"{n}.{w}"] = rng.normal(0, 1 / math.sqrt(C), (C, d))
        p[f"{n}.W_O"] = rng.normal(0, 1 / math.sqrt(d), (d, C))
    p["U"] = rng.normal(0, 1 / math.sqrt(C), (C, V))
    return p


def head_forward(x, p, n: int, sw: Switches):
    """One head on the stream x [B, T, C]; returns its contribution to the stream and what backward needs."""
    W_Q, W_V, W_O = p[f"{n}.W_Q"], p[f"{n}.W_V"], p[f"{n}.W_O"]
    W_K = W_Q if sw.tied_qk else p[f"{n}.W_K"]
    T, d = x.shape[1], W_Q.shape[1]
    Q, K, V = query(x, W_Q), key(x, W_K), value(x, W_V)
    S = batch_scores(Q, K)
    Ss = scale(S, d) if sw.scaling else S
    future = causal_mask(T) if sw.causal else np.zeros((T, T), dtype=bool)
    M = mask(Ss, future)
    A = NORMALISE[sw.normaliser][0](M)
    O = blend(A, V)
    out = O @ W_O
    return out, dict(x=x, Q=Q, K=K, V=V, M=M, A=A, O=O, future=future, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)


def head_backward(dout, c, n: int, sw: Switches, g: dict):
    """Undo head_forward step by step, last step first; adds the weights' gradients into g."""
    d = c["W_Q"].shape[1]
    dO, g[f"{n}.W_O"] = dout @ c["W_O"].T, np.einsum("btd,btc->dc", c["O"], dout)
    dA, dV = blend_back(dO, c["A"], c["V"])
    dM = NORMALISE[sw.normaliser][1](dA, c["A"], c["M"])
    dSs = mask_back(dM, c["future"])
    dS = scale_back(dSs, d) if sw.scaling else dSs
    dQ, dK = scores_back(dS, c["Q"], c["K"])
    dx_q, g[f"{n}.W_Q"] = project_back(dQ, c["x"], c["W_Q"])
    dx_k, dW_K = project_back(dK, c["x"], c["W_K"])
    dx_v, g[f"{n}.W_V"] = project_back(dV, c["x"], c["W_V"])
    if sw.tied_qk:
        g[f"{n}.W_Q"] = g[f"{n}.W_Q"] + dW_K  # W_K is W_Q: both uses add up
    else:
        g[f"{n}.W_K"] = dW_K
    return dx_q + dx_k + dx_v


def forward(p, tokens, sw: Switches):
    """Logits [B, T, V] for tokens [B, T], and every layer's cache."""
    B, T = tokens.shape
    x = p["E"][tokens] + p["P"][:T]
    caches = []
    for n in range(n_layers(p)):
        out, c = head_forward(x, p, n, sw)
        caches.append(c)
        x = x + out  # the residual stream
    return x @ p["U"], x, caches


def n_layers(p) -> int:
    return sum(1 for k in p if k.endswith(".W_Q"))


def cross_entropy(logits, targets):
    """Mean −log p(target) over the positions with a target (targets < 0 have none); and d loss/d logits."""
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    has = targets >= 0
    count = max(int(has.sum()), 1)
    picked = np.take_along_axis(logp, np.where(has, targets, 0)[..., None], axis=-1)[..., 0]
    loss = -(picked * has).sum() / count
    dlogits = np.exp(logp)
    onehot = np.zeros_like(dlogits)
    np.put_along_axis(onehot, np.where(has, targets, 0)[..., None], 1.0, axis=-1)
    dlogits = (dlogits - onehot) * has[..., None] / count
    return loss, dlogits


def loss_and_grads(p, tokens, targets, sw: Switches):
    logits, x, caches = forward(p, tokens, sw)
    loss, dlogits = cross_entropy(logits, targets)
    g = {"U": np.einsum("btc,btv->cv", x, dlogits)}
    dx = dlogits @ p["U"].T
    for n in reversed(range(len(caches))):
        dx = dx + head_backward(dx, caches[n], n, sw, g)
    g["E"] = np.zeros_like(p["E"])
    np.add.at(g["E"], tokens, dx)
    g["P"] = np.zeros_like(p["P"])
    g["P"][: tokens.shape[1]] = dx.sum(axis=0)
    if sw.tied_qk:
        for n in range(len(caches)):
            g[f"{n}.W_K"] = np.zeros_like(p[f"{n}.W_K"])  # unused while tied
    return loss, g


class Adam:
    def __init__(self, params: dict, lr: float, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict) -> None:
        self.t += 1
        for k in params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - self.b1**self.t)
            v_hat = self.v[k] / (1 - self.b2**self.t)
            params[k] = params[k] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


# --- the tasks ------------------------------------------------------------------------------------
# Each returns (tokens [B, T], targets [B, T]); a target of -1 means "no prediction here".


def previous_token_task(rng, B: int, V: int, T: int):
    """Random tokens; at position i the answer is the token at i−1, which only reading i−1 can give."""
    x = rng.integers(0, V, (B, T))
    y = np.full((B, T), -1)
    y[:, 1:] = x[:, :-1]
    return x, y


def repeated_halves_task(rng, B: int, V: int, T: int):
    """Random first half, repeated as the second; predict the next token. Only the repeat is predictable."""
    h = T // 2
    first = rng.integers(0, V, (B, h))
    x = np.concatenate([first, first], axis=1)
    y = np.full((B, T), -1)
    y[:, :-1] = x[:, 1:]
    return x, y


N_TRIGGERS = 3
TRIGGER_SHARE = 0.2  # of the next-token mass after an ordinary token; with less, second occurrences are rare


def bigram_chain(V: int, seed: int = 1234) -> np.ndarray:
    """A fixed random bigram table, the same for every sequence (Bietti et al.'s "global" knowledge)."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(V, 0.5), size=V)
    table[:, :N_TRIGGERS] = 0.0  # triggers get a fixed share, so each shows up about every 15 tokens
    table *= (1 - TRIGGER_SHARE) / table.sum(axis=1, keepdims=True)
    table[:, :N_TRIGGERS] += TRIGGER_SHARE / N_TRIGGERS
    return table


def triggers_task(rng, B: int, V: int, T: int, n_triggers: int = N_TRIGGERS):
    """Bigram sequences with trigger tokens (Bietti et al. 2023, "Birth of a Transformer").

    Tokens 0..n_triggers−1 are triggers. Each sequence draws its own output token for each trigger; after
    a trigger always comes its output, everything else follows the fixed bigram table. The outputs change
    from sequence to sequence, so after a trigger's second occurrence the only way to predict is to look up
    what followed it last time: the induction job.
    """
    table = bigram_chain(V)
    outputs = rng.integers(n_triggers, V, (B, n_triggers))
    cdf = np.cumsum(table, axis=1)
    x = np.zeros((B, T), dtype=np.int64)
    x[:, 0] = rng.integers(0, V, B)
    u = rng.random((B, T))
    for t in range(1, T):
        prev = x[:, t - 1]
        nxt = np.minimum((u[:, t, None] > cdf[prev]).sum(axis=1), V - 1)
        is_trig = prev < n_triggers
        nxt[is_trig] = outputs[is_trig, prev[is_trig]]
        x[:, t] = nxt
    y = np.full((B, T), -1)
    y[:, :-1] = x[:, 1:]
    return x, y


TASKS = {
    "previous-token": previous_token_task,
    "repeated-halves": repeated_halves_task,
    "triggers": triggers_task,
}


# --- head scores ------------------------------------------------------------------------------------


def previous_token_score(A: np.ndarray) -> float:
    """Mean weight a query puts on the position just before it (queries 1..T−1)."""
    return float(np.diagonal(A, offset=-1, axis1=-2, axis2=-1).mean())


def _earlier(tokens: np.ndarray):
    """same[b, i, j]: j < i holds the token at i."""
    T = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]
    return same & np.tril(np.ones((T, T), dtype=bool), k=-1)


def duplicate_token_score(A: np.ndarray, tokens: np.ndarray) -> float:
    """Mean total weight on earlier copies of the query's own token (queries that have one)."""
    same = _earlier(tokens)
    has = same.any(axis=-1)
    return float((A * same).sum(axis=-1)[has].mean()) if has.any() else float("nan")


def induction_score(A: np.ndarray, tokens: np.ndarray, queries: np.ndarray | None = None) -> float:
    """Mean total weight on the tokens that followed earlier copies of the query's token (only at
    `queries`, a [B, T] mask, when given)."""
    same = _earlier(tokens)
    after = np.zeros_like(same)
    after[:, :, 1:] = same[:, :, :-1]  # j+1 for each earlier copy j (j+1 ≤ i)
    has = after.any(axis=-1) if queries is None else after.any(axis=-1) & queries
    return float((A * after).sum(axis=-1)[has].mean()) if has.any() else float("nan")


def offset_score(A: np.ndarray, h: int) -> float:
    """Mean weight from each query i ≥ h on position i − h + 1, where the repeated halves' induction target
    sits. Measured on sequences that do not repeat, a high value means the head finds that spot by
    position alone (a positional look-up), not by matching tokens."""
    return float(np.diagonal(A, offset=-(h - 1), axis1=-2, axis2=-1)[..., 1:].mean())


# --- runs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    name: str
    claim: str  # the chapter's sentence this run tests, in our words
    task: str
    shape: Shape
    switches: Switches = Switches()
    steps: int = 1000
    lr: float = 1e-2
    batch: int = 32
    about: tuple = (0, 0)  # (layer for the previous-token score, layer for the induction score)
    shown_layer: int = 0  # the head the lab draws
    compare: str = ""  # the full-head run this ablation is set against
    honest: bool = False  # also evaluate by generating one token at a time


# Sizes, each the smallest at which the claim can show, so a run takes seconds and 20 snapshots of the
# whole head fit the lab's data budget (static/lab/ ≤ 300 KB, inlined in the export).
# Previous-token family: 16 tokens (ln 16 ≈ 2.77, far above a learned copy), 12 positions, a stream of 8
# and a head of 4 (W_Q and W_K small enough to read).
# The no-scale pair: the chapter's wide head, d = 64, where raw scores spread ≈ √64 = 8 at initialisation.
# Repeated halves: 8 random tokens from 24 (a token repeats within the first half in about 3 of 4
# sequences, rare enough per position), then the same 8 again; stream 16, head 4 (at 24 and 8 the scores
# were the same and the data twice as big).
# Triggers: 24 positions, 3 triggers taking 20 % of the next-token mass, 3000 steps, stream 24, head 8
# (the pair forms suddenly, between steps ~1800 and ~2500).
# A first try with 32 positions, triggers at their Dirichlet frequency and 1500 steps grew nothing
# (recall loss 2.9); at stream 16 and head 4 the circuit had not formed by step 4000.
PREV = Shape(V=16, T=12, C=8, d=4, layers=1)
WIDE = Shape(V=16, T=12, C=16, d=64, layers=1)
HALVES = Shape(V=24, T=16, C=16, d=4, layers=2)
TRIG = Shape(V=24, T=24, C=24, d=8, layers=2)

RUNS = {
    r.name: r
    for r in (
        Run(
            "previous-token",
            "Trained heads often learn a legible job such as copying the previous token.",
            "previous-token",
            PREV,
            steps=200,
        ),
        Run(
            "tied-qk",
            "With W_K = W_Q every token matches itself best, so a head cannot express the asymmetric "
            "'look one back'.",
            "previous-token",
            PREV,
            Switches(tied_qk=True),
            steps=200,
            compare="previous-token",
        ),
        Run(
            "top-1",
            "Top-1 gives no gradient about the keys nearly chosen, so the routing cannot be learned.",
            "previous-token",
            PREV,
            Switches(normaliser="top1"),
            steps=200,
            compare="previous-token",
        ),
        Run(
            "raw",
            "Raw scores as weights are unbounded and signed: outputs are no longer averages of the values.",
            "previous-token",
            PREV,
            Switches(normaliser="raw"),
            steps=200,
            compare="previous-token",
        ),
        Run(
            "wide-scaled",
            "The wide head with ÷√d: the reference for the no-scale run.",
            "previous-token",
            WIDE,
            steps=200,
        ),
        Run(
            "no-scale",
            "Without ÷√d a wide head's softmax is nearly one-hot at initialisation, so the head barely "
            "learns.",
            "previous-token",
            WIDE,
            Switches(scaling=False),
            steps=200,
            compare="wide-scaled",
        ),
        Run(
            "induction",
            "Trained heads find what followed this token last time (an induction head).",
            "repeated-halves",
            HALVES,
            steps=1000,
            about=(0, 1),
            shown_layer=1,
        ),
        Run(
            "no-mask",
            "Without the mask the loss falls to nearly zero by reading one position ahead, and the model is "
            "useless at inference.",
            "repeated-halves",
            HALVES,
            Switches(causal=False),
            steps=1000,
            about=(0, 1),
            shown_layer=1,
            compare="induction",
            honest=True,
        ),
        Run(
            "triggers",
            "On bigram data with trigger tokens the textbook pair is known to form: a previous-token head "
            "feeding an induction head.",
            "triggers",
            TRIG,
            steps=3000,
            about=(0, 1),
            shown_layer=1,
        ),
    )
}
NAMED = ("previous-token", "induction", "no-scale", "tied-qk", "top-1", "raw", "no-mask")

EVAL_SEQS = 256
PROBE_T = 12  # the lab's probe: the first 12 positions, the most a heatmap shows with numbers in its cells
SNAPSHOTS = 16  # enough to watch a pattern form; 20 put the export over its 2 MB budget
CURVE_POINTS = 100


def task_batch(run: Run, rng, B: int):
    s = run.shape
    return TASKS[run.task](rng, B, s.V, s.T)


def attention_maps(p, tokens, sw: Switches) -> list[np.ndarray]:
    _, _, caches = forward(p, tokens, sw)
    return [c["A"] for c in caches]


def honest_loss(p, tokens, targets, sw: Switches) -> float:
    """Generate one token at a time: position i is predicted from tokens 0..i only, whatever the mask."""
    total, count = 0.0, 0
    for i in range(tokens.shape[1]):
        has = targets[:, i] >= 0
        if not has.any():
            continue
        logits, _, _ = forward(p, tokens[:, : i + 1], sw)
        loss, _ = cross_entropy(logits[:, -1:], targets[:, i : i + 1])
        n = int(has.sum())
        total, count = total + loss * n, count + n
    return total / count


def evaluate(run: Run, p, data) -> dict:
    tokens, targets = data
    sw = run.switches
    logits, _, caches = forward(p, tokens, sw)
    out = {"eval_loss": cross_entropy(logits, targets)[0]}
    maps = [c["A"] for c in caches]
    out["scores"] = [
        {
            "previous_token": previous_token_score(A),
            "duplicate_token": duplicate_token_score(A, tokens),
            "induction": induction_score(A, tokens),
        }
        for A in maps
    ]
    if run.task == "repeated-halves":
        h = run.shape.T // 2
        unrepeated = previous_token_task(np.random.default_rng(99), len(tokens), run.shape.V, run.shape.T)[0]
        _, _, plain = forward(p, unrepeated, sw)
        for s, c in zip(out["scores"], plain):
            s["positional"] = offset_score(c["A"], h)
        first, second = targets.copy(), targets.copy()
        first[:, h - 1 :] = -1
        second[:, : h - 1] = -1
        second[:, h - 1] = -1  # the first token of the repeat is predictable only by position
        out["first_half_loss"] = cross_entropy(logits, first)[0]
        out["repeat_loss"] = cross_entropy(logits, second)[0]
    if run.task == "triggers":
        again = _earlier(tokens).any(axis=-1) & (tokens < N_TRIGGERS)  # a trigger seen before
        after_trigger = np.zeros_like(again)
        after_trigger[:, 1:] = tokens[:, :-1] < N_TRIGGERS
        for s, A in zip(out["scores"], maps):
            s["induction_at_triggers"] = induction_score(A, tokens, queries=again)
            # Where a previous-token head matters here: on the output token right after a trigger.
            s["previous_token_after_triggers"] = float(
                np.diagonal(A, -1, -2, -1)[after_trigger[:, 1:]].mean()
            )
        recall = np.where(again, targets, -1)
        out["recall_loss"] = cross_entropy(logits, recall)[0]
        out["recall_positions"] = int((recall >= 0).sum())
    if run.honest:
        out["honest_loss"] = honest_loss(p, tokens, targets, sw)
    return out


def head_snapshot(p, tokens, run: Run) -> dict:
    """The shown head on the probe sequence: its input X and its weights, enough to recompute every step."""
    n = run.shown_layer
    x = p["E"][tokens] + p["P"][: tokens.shape[0]]
    for k in range(n):
        out, _ = head_forward(x[None], p, k, run.switches)
        x = x + out[0]
    sw = run.switches
    snap = {
        "X": x,
        "W_Q": p[f"{n}.W_Q"],
        "W_K": p[f"{n}.W_Q"] if sw.tied_qk else p[f"{n}.W_K"],
        "W_V": p[f"{n}.W_V"],
    }
    snap["maps"] = [A[0] for A in attention_maps(p, tokens[None], sw)]
    return snap


def train(run: Run, *, seed: int = 0, steps: int | None = None, record: bool = True) -> dict:
    """Train `run` from seed; return its curves, scores and (if record) snapshots. Deterministic for a "
    "seed."""
    steps = run.steps if steps is None else steps
    rng = np.random.default_rng(seed)
    p = init_params(run.shape, rng)
    data_rng = np.random.default_rng([seed, 1])
    held_out = task_batch(run, np.random.default_rng([seed, 2]), EVAL_SEQS)
    probe = task_batch(run, np.random.default_rng([seed, 3]), 1)[0][0][:PROBE_T]
    opt = Adam(p, run.lr)
    # Closer together early on, where the patterns form: step = steps · (k / (SNAPSHOTS − 1))².
    eval_at = set(np.unique((steps * np.linspace(0, 1, SNAPSHOTS) ** 2).round().astype(int)).tolist())
    losses, evals, snaps = [], [], []
    for step in range(steps + 1):
        if step in eval_at:
            e = evaluate(run, p, held_out)
            e["step"] = step
            evals.append(e)
            if record:
                s = head_snapshot(p, probe, run)
                s["step"] = step
                snaps.append(s)
        if step == steps:
            break
        tokens, targets = task_batch(run, data_rng, run.batch)
        loss, g = loss_and_grads(p, tokens, targets, run.switches)
        losses.append(loss)
        opt.step(p, g)
    return {
        "run": run,
        "seed": seed,
        "steps": steps,
        "losses": np.array(losses),
        "evals": evals,
        "snapshots": snaps,
        "probe": probe,
        "params": p,
    }


def final_line(result: dict) -> str:
    run, e = result["run"], result["evals"][-1]
    lp, li = run.about
    tail = result["losses"][-max(1, len(result["losses"]) // 20) :].mean()
    return (
        f"{run.name}: loss {tail:.3f}, eval loss {e['eval_loss']:.3f}, "
        f"previous-token score {e['scores'][lp]['previous_token']:.3f}, "
        f"induction score {e['scores'][li]['induction']:.3f}"
    )


# --- shipped data -----------------------------------------------------------------------------------
# Numbers are rounded before they are written (weights to 3 decimals, everything else to 3 significant
# digits): the lab shows two decimals, and the whole set must stay small enough to inline in the export.


def f16(a) -> dict:
    """A matrix as half-precision floats in base64 (2.7 characters a number instead of ~7 as decimals).
    Half precision keeps 3 significant digits, more than the lab prints; readers decode it exactly."""
    a = np.asarray(a, dtype=float)
    return {"shape": list(a.shape), "f16": base64.b64encode(a.astype("<f2").tobytes()).decode("ascii")}


def unf16(m: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(m["f16"]), dtype="<f2").astype(float).reshape(m["shape"])


def sig3(a) -> list:
    a = np.asarray(a, dtype=float)
    return [float(f"{v:.3g}") for v in a.ravel()] if a.ndim <= 1 else [sig3(r) for r in a]


def dec3(a) -> list:
    return np.round(np.asarray(a, dtype=float), 3).tolist()


def curve(losses: np.ndarray, points: int = CURVE_POINTS) -> dict:
    """The training loss averaged over `points` equal windows (one batch is noisy)."""
    chunks = np.array_split(np.arange(len(losses)), min(points, len(losses)))
    return {"step": [int(c[-1]) + 1 for c in chunks], "loss": sig3([losses[c].mean() for c in chunks])}


def head_is_drawn(run: Run) -> bool:
    """Whether snapshots carry the shown head's matrices (a 16 × 64 W_Q is too big to ship or to read)."""
    return run.shape.d <= 8


def to_json(result: dict) -> dict:
    run = result["run"]
    evals = [
        {k: (sig3([v])[0] if isinstance(v, float) else v) for k, v in e.items() if k != "scores"}
        | {"scores": [{k: round(v, 4) for k, v in s.items()} for s in e["scores"]]}
        for e in result["evals"]
    ]
    snaps = []
    for s in result["snapshots"]:
        # The drawn head's weights are recomputed from its matrices; the other layers' are shipped.
        shipped = [n for n in range(len(s["maps"])) if n != run.shown_layer or not head_is_drawn(run)]
        snap = {"step": s["step"], "maps": {str(n): f16(s["maps"][n]) for n in shipped}}
        if head_is_drawn(run):
            snap |= {k: f16(s[k]) for k in ("X", "W_Q", "W_K", "W_V")}
        snaps.append(snap)
    return {
        "name": run.name,
        "claim": run.claim,
        "task": run.task,
        "shape": asdict(run.shape),
        "switches": asdict(run.switches),
        "seed": result["seed"],
        "steps": result["steps"],
        "lr": run.lr,
        "batch": run.batch,
        "compare": run.compare,
        "shown_layer": run.shown_layer,
        "about": list(run.about),
        "probe": [int(t) for t in result["probe"]],
        "curve": curve(result["losses"]),
        "evals": evals,
        "snapshots": snaps,
    }


def seeds_summary(run: Run, seeds=(0, 1, 2), steps: int | None = None) -> list[dict]:
    """Final numbers of the run over several seeds (no snapshots), for the claims that need them."""
    out = []
    for s in seeds:
        r = train(run, seed=s, steps=steps, record=False)
        e = r["evals"][-1]
        out.append(
            {
                "seed": s,
                "eval_loss": sig3([e["eval_loss"]])[0],
                "scores": [{k: round(v, 4) for k, v in sc.items()} for sc in e["scores"]],
            }
        )
    return out


SEEDED = ("previous-token", "tied-qk")  # the claim compares these two over three seeds


def write_run(
    name: str, seed: int = 0, steps: int | None = None, directory: Path = LAB_DIR
) -> tuple[dict, str]:
    run = RUNS[name]
    result = train(run, seed=seed, steps=steps)
    data = to_json(result)
    if name in SEEDED:
        data["seeds"] = seeds_summary(run, steps=steps)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return data, final_line(result)


def first_step_below(data: dict, level: float):
    """The first step at which the (window-averaged) training loss is below `level`, or None."""
    for step, loss in zip(data["curve"]["step"], data["curve"]["loss"]):
        if loss < level:
            return step
    return None


def _f(x, digits=2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def raw_weights_of(snap: dict, sw: dict) -> np.ndarray:
    """The drawn head's weights on the probe, recomputed from a snapshot's matrices with the core."""
    from core.attention import attend

    m = {k: unf16(snap[k]) for k in ("X", "W_Q", "W_K", "W_V")}
    return attend(
        m["X"],
        m["W_Q"],
        m["W_K"],
        m["W_V"],
        scaling=sw["scaling"],
        causal=sw["causal"],
        tied_qk=sw["tied_qk"],
        normaliser=sw["normaliser"],
    ).weights


def small(x: float) -> str:
    """A loss or ratio in a sentence: three decimals, or two significant figures below 0.01 (not "0.000")."""
    if x >= 0.01 or x <= 0:
        return f"{x:.3f}"
    return f"{x:.{1 - math.floor(math.log10(x))}f}"


def findings(runs: dict) -> dict:
    """What each run showed, as sentences built from its numbers, and whether the claim held at this size.

    `runs` maps names to the dicts `to_json` writes. Verdicts: "reproduced", "partly", "not reproduced".
    """
    out = {}

    def last(name):
        return runs[name]["evals"][-1]

    def tail_loss(name):
        return float(np.mean(runs[name]["curve"]["loss"][-5:]))

    if "previous-token" in runs:
        r, e = runs["previous-token"], last("previous-token")
        p = e["scores"][0]["previous_token"]
        seeds = [s["scores"][0]["previous_token"] for s in r.get("seeds", [])]
        out["previous-token"] = (
            "reproduced" if p >= 0.9 else "not reproduced",
            [
                f"After {r['steps']} steps the head puts {p:.2f} of its weight on the token just before "
                f"(previous-token score; {', '.join(f'{v:.2f}' for v in seeds)} over seeds 0, 1, 2), and the "
                f"held-out loss is {e['eval_loss']:.3f} (a uniform guess: ln {r['shape']['V']} = "
                f"{math.log(r['shape']['V']):.2f})."
            ],
        )
    if "tied-qk" in runs and "previous-token" in runs:
        r = runs["tied-qk"]
        full = [s["scores"][0]["previous_token"] for s in runs["previous-token"]["seeds"]]
        tied = [s["scores"][0]["previous_token"] for s in r["seeds"]]
        ratios = [t / f for t, f in zip(tied, full)]
        losses = [s["eval_loss"] for s in r["seeds"]]
        out["tied-qk"] = (
            "reproduced" if max(ratios) <= 0.8 else "partly" if min(ratios) <= 0.8 else "not reproduced",
            [
                f"Previous-token score with W_K = W_Q: {', '.join(f'{v:.2f}' for v in tied)} against "
                f"{', '.join(f'{v:.2f}' for v in full)} with separate matrices (seeds 0, 1, 2; ratio "
                f"{min(ratios):.2f}–{max(ratios):.2f}).",
                f"Held-out losses of the tied head: {', '.join(f'{v:.3f}' for v in losses)}: the rest of the "
                "model still solves the task, the head just cannot make i−1 its clear favourite.",
            ],
        )
    if "no-scale" in runs and "wide-scaled" in runs:
        n, w = runs["no-scale"], runs["wide-scaled"]
        sat = {
            k: float(np.mean(np.max(unf16(runs[k]["snapshots"][0]["maps"]["0"]), axis=-1)))
            for k in ("no-scale", "wide-scaled")
        }
        s_n, s_w = first_step_below(n, 1.0), first_step_below(w, 1.0)
        t_n, t_w = first_step_below(n, 0.1), first_step_below(w, 0.1)
        slower = s_n is not None and s_w is not None and s_n >= 1.5 * s_w
        learns = last("no-scale")["eval_loss"] < 0.1
        out["no-scale"] = (
            "partly" if slower and learns else "reproduced" if not learns else "not reproduced",
            [
                f"At initialisation (d = {n['shape']['d']}) the largest weight in a row averages "
                f"{sat['no-scale']:.2f} without ÷√d and {sat['wide-scaled']:.2f} with it (on the probe).",
                f"Training loss first below 1.0 at step {s_n} without ÷√d, {s_w} with it; below 0.1 at "
                f"{t_n} and {t_w}.",
                f"Final held-out loss {small(last('no-scale')['eval_loss'])} against "
                f"{small(last('wide-scaled')['eval_loss'])}: slower, "
                + (
                    "but it does learn: 'barely learns' does not hold at this size."
                    if learns
                    else "and it does not recover."
                ),
            ],
        )
    if "top-1" in runs:
        r, e = runs["top-1"], last("top-1")
        lnV = math.log(r["shape"]["V"])
        out["top-1"] = (
            "reproduced" if e["eval_loss"] > 0.8 * lnV else "not reproduced",
            [
                f"Held-out loss {e['eval_loss']:.3f} after {r['steps']} steps, against ln "
                f"{r['shape']['V']} = "
                f"{lnV:.2f} for a uniform guess and {last('previous-token')['eval_loss']:.3f} for the "
                "softmax head; "
                f"previous-token score {e['scores'][0]['previous_token']:.2f}."
            ],
        )
    if "raw" in runs:
        r, e = runs["raw"], last("raw")
        A = raw_weights_of(r["snapshots"][-1], r["switches"])
        sums = A.sum(axis=-1)
        out["raw"] = (
            "reproduced" if (np.abs(sums - 1) > 0.1).any() else "not reproduced",
            [
                f"Held-out loss {e['eval_loss']:.3f} (softmax head: "
                f"{last('previous-token')['eval_loss']:.3f}, "
                f"uniform guess {math.log(r['shape']['V']):.2f}): "
                + (
                    "raw weights learned this task too."
                    if e["eval_loss"] < 0.5 * math.log(r["shape"]["V"])
                    else "with raw weights this model did not learn the task."
                ),
                f"On the probe the learned weights run from {A.min():.2f} to {A.max():.2f} and the rows "
                "sum to "
                f"{sums.min():.2f}…{sums.max():.2f}, not 1: each output is a scaled combination of values, "
                "not "
                f"an average (mean weight on i−1: {e['scores'][0]['previous_token']:.2f}).",
            ],
        )
    if "induction" in runs:
        r, e = runs["induction"], last("induction")
        s0, s1 = e["scores"]
        ok = s1["induction"] >= 0.7 and e["repeat_loss"] < 0.5 * e["first_half_loss"]
        positional = s1["positional"] > 0.5
        out["induction"] = (
            ("partly" if positional else "reproduced") if ok else "not reproduced",
            [
                f"Layer 1's induction score is {s1['induction']:.2f}; the loss on the repeated half is "
                f"{e['repeat_loss']:.3f} against {e['first_half_loss']:.3f} on the first half.",
                f"Layer 0: previous-token score {s0['previous_token']:.2f}, duplicate-token score "
                f"{s0['duplicate_token']:.2f}, induction score {s0['induction']:.2f}.",
                f"On sequences that do not repeat, layer 1 still puts {s1['positional']:.2f} on position "
                f"i − {r['shape']['T'] // 2 - 1} (layer 0: {s0['positional']:.2f}): "
                + (
                    "layer 1 finds the spot by position, a positional look-up (the halves always have the "
                    "same "
                    "length), not the textbook previous-token + induction pair."
                    if positional
                    else "it matches tokens, not positions."
                ),
            ],
        )
    if "no-mask" in runs and "induction" in runs:
        e, ei = last("no-mask"), last("induction")
        lt, li = tail_loss("no-mask"), tail_loss("induction")
        ok = lt < 0.2 * li and e["honest_loss"] > ei["eval_loss"]
        out["no-mask"] = (
            "reproduced" if ok else "not reproduced",
            [
                f"Training loss {small(lt)} against {small(li)} for the masked model ({small(lt / li)}×).",
                "Generating one token at a time, so nothing ahead exists, its loss is "
                f"{e['honest_loss']:.2f}, "
                f"against {ei['eval_loss']:.3f} for the masked model and ln "
                f"{runs['no-mask']['shape']['V']} = "
                f"{math.log(runs['no-mask']['shape']['V']):.2f} for a uniform guess.",
            ],
        )
    if "triggers" in runs:
        r, e = runs["triggers"], last("triggers")
        s0, s1 = e["scores"]
        formed = s0["previous_token_after_triggers"] > 0.5 and s1["induction_at_triggers"] > 0.5
        out["triggers"] = (
            "reproduced" if formed else "not reproduced",
            [
                f"Layer 0: previous-token score {s0['previous_token']:.2f} over all positions, "
                f"{s0['previous_token_after_triggers']:.2f} on the tokens right after a trigger (where the "
                f"textbook circuit needs it), duplicate-token {s0['duplicate_token']:.2f}; layer 1: "
                f"induction score {s1['induction']:.2f} over every "
                f"repeated token, {s1['induction_at_triggers']:.2f} at repeated triggers.",
                f"Loss on the tokens after a repeated trigger: {e['recall_loss']:.2f} (ln "
                f"{r['shape']['V']} = "
                f"{math.log(r['shape']['V']):.2f}), over {e['recall_positions']} such positions.",
                "The textbook pair formed: layer 0 copies the previous token where it matters, layer 1 "
                "looks up what followed the trigger last time."
                if formed
                else f"No previous-token + induction pair formed in {r['steps']} steps at this size.",
            ],
        )
    return {k: {"verdict": v[0], "showed": v[1]} for k, v in out.items()}


def write_index(directory: Path = LAB_DIR) -> dict:
    runs = {
        n: json.loads((directory / f"{n}.json").read_text())
        for n in RUNS
        if (directory / f"{n}.json").exists()
    }
    index = {"runs": [n for n in RUNS if n in runs], "findings": findings(runs)}
    (directory / "index.json").write_text(json.dumps(index, separators=(",", ":"), ensure_ascii=False) + "\n")
    return index


def one_blas_thread() -> None:
    """Re-run this command with one BLAS thread: for these tiny matrices threads only add overhead."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        os.execve(sys.executable, [sys.executable, "-m", "core.train", *sys.argv[1:]], env)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", choices=sorted(RUNS), help="the run to train")
    parser.add_argument("--all", action="store_true", help="regenerate every shipped run in static/lab/")
    parser.add_argument("--steps", type=int, help="training steps (default: the run's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="also write the run's data file")
    args = parser.parse_args(argv)
    if args.all == bool(args.run):
        parser.error("name one run, or --all")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    if argv is None:
        one_blas_thread()
    names = list(RUNS) if args.all else [args.run]
    for name in names:
        t0 = time.perf_counter()
        if args.all or args.write:
            _, line = write_run(name, seed=args.seed, steps=args.steps)
        else:
            line = final_line(train(RUNS[name], seed=args.seed, steps=args.steps, record=False))
        print(f"{name}: trained in {time.perf_counter() - t0:.1f} s")
        print(line, flush=True)
    if args.all or args.write:
        write_index()
    return 0


if __name__ == "__main__":
    sys.exit(main())
