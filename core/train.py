"""A tiny attention-only transformer and its training, by hand in numpy: the lab's model.

The model: token and position embeddings add into a residual stream; each layer is one head of the
chapter's attention (`core.attention`: query, key, value, scores, ÷√d, mask, softmax / raw / top-1,
blend) whose output W_O maps back to the stream, where it is added; an unembedding U gives logits; the
loss is cross-entropy on the next token. Each step's forward comes with its backward right beside it: the
backward takes the gradient of the loss with respect to the step's output and returns it with respect to
the step's inputs. tests/test_train.py checks every gradient against finite differences. Adam updates
every parameter.

The head takes the explorer's own switches (`Switches`, one field per row of core.options.SWITCHES).

What the model is trained on, the runs, their data files and what they showed live in core/lab/.
`python -m core.train RUN` trains one run; `python -m core.train --all` regenerates static/lab/.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from core.attention import (
    blend,
    causal_mask,
    cool,
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
from core.options import Options

# The head's switches: the explorer's Options, whose fields are the rows of core.options.SWITCHES (checked
# there), so a switch added to that table reaches the trainer too (tests/test_train.py flips every one).
Switches = Options


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


def T_(a: np.ndarray) -> np.ndarray:
    """Transpose the last two axes (a batch of matrices)."""
    return np.swapaxes(a, -1, -2)


# --- the head's steps, each forward beside its backward ----------------------------------------------
# The forwards are the core's own functions (core.attention), batched over the sequences of a batch.


def x_scale_back(dXs, x_scale):
    """Xs = X · x_scale (the 'multiply X' switch)."""
    return dXs * x_scale


def project_back(dY, X, W):
    """Q = X·W_Q (and K, V alike): core.attention.query / key / value."""
    return dY @ W.T, np.einsum("btc,btd->cd", X, dY)


def batch_scores(Q, K):
    """S = Q·Kᵀ for each sequence of the batch (core.attention.scores works on one)."""
    return np.stack([scores(q, k) for q, k in zip(Q, K)])


def scores_back(dS, Q, K):
    return dS @ K, T_(dS) @ Q


def scale_back(dS, d):
    """S ÷ √d: core.attention.scale."""
    return dS / math.sqrt(d)


def cool_back(dS, temperature):
    """S ÷ τ: core.attention.cool (the temperature switch)."""
    return dS / temperature


def mask_back(dM, future):
    """−∞ above the diagonal: core.attention.mask. Nothing flows back through a masked score."""
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
    """O = A·V: core.attention.blend."""
    return dO @ T_(V), T_(A) @ dO


def head_forward(x, p, n: int, sw: Switches):
    """Layer n's head on the stream x [B, T, C]: its contribution to the stream, and what backward needs."""
    W_Q, W_V, W_O = p[f"{n}.W_Q"], p[f"{n}.W_V"], p[f"{n}.W_O"]
    W_K = W_Q if sw.tied_qk else p[f"{n}.W_K"]
    T, d = x.shape[1], W_Q.shape[1]
    xs = x * sw.x_scale if sw.x_scale != 1 else x
    Q, K, V = query(xs, W_Q), key(xs, W_K), value(xs, W_V)
    S = batch_scores(Q, K)
    Ss = scale(S, d) if sw.scaling else S
    Sc = cool(Ss, sw.temperature) if sw.temperature != 1 else Ss
    future = causal_mask(T) if sw.causal else np.zeros((T, T), dtype=bool)
    M = mask(Sc, future)
    A = NORMALISE[sw.normaliser][0](M)
    O = blend(A, V)
    out = O @ W_O
    return out, dict(xs=xs, Q=Q, K=K, V=V, M=M, A=A, O=O, future=future, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)


def head_backward(dout, c, n: int, sw: Switches, g: dict):
    """Undo head_forward step by step, last step first; puts the weights' gradients into g and returns the
    gradient with respect to the stream x."""
    d = c["W_Q"].shape[1]
    dO, g[f"{n}.W_O"] = dout @ c["W_O"].T, np.einsum("btd,btc->dc", c["O"], dout)
    dA, dV = blend_back(dO, c["A"], c["V"])
    dM = NORMALISE[sw.normaliser][1](dA, c["A"], c["M"])
    dSc = mask_back(dM, c["future"])
    dSs = cool_back(dSc, sw.temperature) if sw.temperature != 1 else dSc
    dS = scale_back(dSs, d) if sw.scaling else dSs
    dQ, dK = scores_back(dS, c["Q"], c["K"])
    dx_q, g[f"{n}.W_Q"] = project_back(dQ, c["xs"], c["W_Q"])
    dx_k, dW_K = project_back(dK, c["xs"], c["W_K"])
    dx_v, g[f"{n}.W_V"] = project_back(dV, c["xs"], c["W_V"])
    if sw.tied_qk:
        g[f"{n}.W_Q"] = g[f"{n}.W_Q"] + dW_K  # W_K is W_Q: both uses add up
    else:
        g[f"{n}.W_K"] = dW_K
    dxs = dx_q + dx_k + dx_v
    return x_scale_back(dxs, sw.x_scale) if sw.x_scale != 1 else dxs


# --- the whole model -----------------------------------------------------------------------------------


def n_layers(p) -> int:
    return sum(1 for k in p if k.endswith(".W_Q"))


def forward(p, tokens, sw: Switches):
    """Logits [B, T, V] for tokens [B, T], the last stream, and every layer's cache."""
    B, T = tokens.shape
    x = p["E"][tokens] + p["P"][:T]
    caches = []
    for n in range(n_layers(p)):
        out, c = head_forward(x, p, n, sw)
        caches.append(c)
        x = x + out  # the residual stream
    return x @ p["U"], x, caches


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
    """The loss on a batch and its gradient for every parameter: forward, then each step undone in turn."""
    logits, x, caches = forward(p, tokens, sw)
    loss, dlogits = cross_entropy(logits, targets)
    g = {"U": np.einsum("btc,btv->cv", x, dlogits)}
    dx = dlogits @ p["U"].T
    for n in reversed(range(len(caches))):
        dx = dx + head_backward(dx, caches[n], n, sw, g)  # the residual: both paths carry the gradient
    g["E"] = np.zeros_like(p["E"])
    np.add.at(g["E"], tokens, dx)
    g["P"] = np.zeros_like(p["P"])
    g["P"][: tokens.shape[1]] = dx.sum(axis=0)
    if sw.tied_qk:
        for n in range(len(caches)):
            g[f"{n}.W_K"] = np.zeros_like(p[f"{n}.W_K"])  # unused while tied
    return loss, g


class Adam:
    """Adam (Kingma and Ba): each parameter's step is its gradient's running mean over the root of its
    running mean square, so small gradients take steps as large as big ones."""

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


if __name__ == "__main__":  # python -m core.train: the lab's command line
    from core.lab.cli import main

    sys.exit(main())
