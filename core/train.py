"""A tiny attention-only transformer, trained by hand in numpy: the training lab's model.

Token and position embeddings add into a residual stream. Each layer is one head of the chapter's
attention (core.attention: query, key, value, scores, ÷√d, mask, softmax / raw / top-1, blend), whose
output W_O maps back to the width of the stream, where it is added. An unembedding U turns the last
stream into logits, and the loss is the cross-entropy of the next token.

Each step's forward comes with its backward right beside it: the backward takes the gradient of the loss
with respect to the step's output and returns it with respect to the step's inputs. tests/test_train.py
checks every gradient against finite differences. An optimiser (Adam, or plain SGD) then moves every
parameter. A run (core/lab/runs.py) is, in short:

    params = init_params(shape, seed)
    optimiser = Adam(params, lr)
    for tokens, targets in batches:
        loss, grads = loss_and_grads(params, tokens, targets, switches)
        optimiser.step(params, grads)

The head takes the explorer's switches (`Switches`: one field per row of core.options.SWITCHES).

This is the reference a port to another language is held to, step by step, and training can amplify a
difference in the last bit into a different model (at the moment a pair of heads forms). So every number
is made by operations a port can repeat exactly: random numbers are core.rng's uniforms, taken in a
stated order; a product of matrices adds its terms from the first to the last (core.attention.matmul),
and so does every other sum (`total`); a weight's gradient is each sequence's own sum, then the
sequences' sums added in batch order; e^x is core.attention.exp (fdlibm's, as browsers compute it); no
other function of the libraries (BLAS, numpy's pairwise sums) touches a number that training uses. A
logarithm appears only in the loss that is reported, never in a gradient.

`python -m core.train RUN` trains one run of the lab; `python -m core.train --all` regenerates static/lab/.
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
    exp,
    key,
    mask,
    matmul,
    query,
    raw_weights,
    scale,
    top1,
    value,
)
from core.options import Options
from core.rng import Draws

# The head's switches are the explorer's Options, whose fields are the rows of core.options.SWITCHES
# (checked there): a switch added to that table reaches the trainer too (tests/test_train.py flips each).
Switches = Options


@dataclass(frozen=True)
class Shape:
    V: int  # vocabulary
    T: int  # sequence length
    C: int  # residual stream width
    d: int  # head width
    layers: int


def init_params(shape: Shape, seed: int) -> dict:
    """Every parameter drawn uniformly from ±√(3·variance), which has that variance, in this order: E, P,
    then each layer's W_Q, W_K, W_V, W_O, then U, each filled row by row from one stream of draws.

    Embeddings get variance 1/2 each, so the stream's entries have variance ~1; projections into the head
    1/C, so each query and key entry has variance ~1 and raw scores spread like √d, as the chapter
    assumes; W_O 1/d and U 1/C keep their outputs' entries near variance 1 too."""
    V, T, C, d = shape.V, shape.T, shape.C, shape.d
    draws = Draws(seed)

    def uniform(rows, cols, variance):
        return math.sqrt(3 * variance) * (2 * draws.uniform((rows, cols)) - 1)

    p = {"E": uniform(V, C, 0.5), "P": uniform(T, C, 0.5)}
    for n in range(shape.layers):
        for w in ("W_Q", "W_K", "W_V"):
            p[f"{n}.{w}"] = uniform(C, d, 1 / C)
        p[f"{n}.W_O"] = uniform(d, C, 1 / d)
    p["U"] = uniform(C, V, 1 / C)
    return p


# --- sums in a stated order ------------------------------------------------------------------------


def total(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """The sum along `axis`, added from the first term to the last (np.sum pairs terms up instead)."""
    a = np.moveaxis(a, axis, 0)
    out = a[0]
    for term in a[1:]:
        out = out + term
    return out


def T_(a: np.ndarray) -> np.ndarray:
    """Transpose the last two axes (a batch of matrices)."""
    return np.swapaxes(a, -1, -2)


def batch_outer(X: np.ndarray, dY: np.ndarray) -> np.ndarray:
    """Σ over the batch and positions of Xᵀ·dY, the gradient of a weight used as X·W at every position:
    each sequence's sum over its positions (a matmul), then the sequences' sums in batch order."""
    return total(matmul(T_(X), dY), axis=0)


# --- the head's steps, each forward beside its backward ---------------------------------------------
# The forwards are the core's functions (core.attention), batched over the sequences of a batch: a
# matmul broadcasts over leading axes. `*_back` takes the output's gradient, returns the inputs'.


def x_scale_back(dXs, x_scale):
    """Xs = X · x_scale (the switch "multiply X by")."""
    return dXs * x_scale


def project_back(dY, X, W):
    """Y = X·W: Q = X·W_Q, K = X·W_K, V = X·W_V (core.attention.query, key, value), and the head's
    output O·W_O. Returns dX and dW."""
    return matmul(dY, W.T), batch_outer(X, dY)


def batch_scores(Q, K):
    """S = Q·Kᵀ: core.attention.scores, for each sequence at once."""
    return matmul(Q, T_(K))


def scores_back(dS, Q, K):
    return matmul(dS, K), matmul(T_(dS), Q)


def scale_back(dS, d):
    """S ÷ √d: core.attention.scale."""
    return dS / math.sqrt(d)


def cool_back(dS, temperature):
    """S ÷ τ: core.attention.cool (the temperature switch)."""
    return dS / temperature


def mask_back(dM, future):
    """−∞ where the key comes after the query: core.attention.mask. Nothing flows back through it."""
    return np.where(future, 0.0, dM)


def softmax(M):
    """Each row's softmax, −∞ giving exactly 0: core.attention.softmax, with its row sums added in order."""
    finite = np.isfinite(M)
    top = np.max(np.where(finite, M, -np.inf), axis=-1, keepdims=True)
    e = exp(np.where(finite, M - top, -np.inf))
    return e / total(e)[..., None]


def softmax_back(dA, A):
    return A * (dA - total(dA * A)[..., None])


def raw_back(dA, M):
    """Raw scores as weights (core.attention.raw_weights): the scores themselves where visible, 0 where
    masked."""
    return np.where(np.isfinite(M), dA, 0.0)


def batch_top1(M):
    """One-hot on each row's largest score, the first of equals (core.attention.top1, row by row)."""
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
    """O = A·V: core.attention.blend. Returns dA and dV."""
    return matmul(dO, T_(V)), matmul(T_(A), dO)


def head_forward(x, p, n: int, sw: Switches):
    """Layer n's head on the stream x [B, T, C]: what it adds to the stream, and what backward needs."""
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
    out = matmul(O, W_O)
    return out, dict(xs=xs, Q=Q, K=K, V=V, M=M, A=A, O=O, future=future, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)


def head_backward(dout, c, n: int, sw: Switches, g: dict):
    """Undo head_forward step by step, last step first; puts the weights' gradients into g and returns the
    gradient with respect to the stream."""
    d = c["W_Q"].shape[1]
    dO, g[f"{n}.W_O"] = project_back(dout, c["O"], c["W_O"])
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
        g[f"{n}.W_K"] = np.zeros_like(dW_K)  # and the unused W_K does not move
    else:
        g[f"{n}.W_K"] = dW_K
    dxs = dx_q + dx_k + dx_v
    return x_scale_back(dxs, sw.x_scale) if sw.x_scale != 1 else dxs


# --- the whole model -----------------------------------------------------------------------------------


def n_layers(p) -> int:
    return sum(1 for k in p if k.endswith(".W_Q"))


def embed(p, tokens):
    """The stream's start: each token's embedding plus its position's."""
    return p["E"][tokens] + p["P"][: tokens.shape[1]]


def embed_back(dx, p, tokens, g: dict) -> None:
    """Each position's gradient added into its token's row of E (positions in order, sequence by
    sequence) and into its position's row of P (sequences in batch order)."""
    g["E"] = np.zeros_like(p["E"])
    np.add.at(g["E"], tokens.ravel(), dx.reshape(-1, dx.shape[-1]))  # unbuffered: in the order given
    g["P"] = np.zeros_like(p["P"])
    g["P"][: tokens.shape[1]] = total(dx, axis=0)


def forward(p, tokens, sw: Switches):
    """Logits [B, T, V] for tokens [B, T], the last stream, and every layer's cache."""
    x = embed(p, tokens)
    caches = []
    for n in range(n_layers(p)):
        out, c = head_forward(x, p, n, sw)
        caches.append(c)
        x = x + out  # the residual stream
    return matmul(x, p["U"]), x, caches


def cross_entropy(logits, targets):
    """The mean of −log p(target) over the positions with a target (targets < 0 have none), and its
    gradient with respect to the logits: (p − one-hot) ÷ the number of targets."""
    z = logits - np.max(logits, axis=-1, keepdims=True)
    e = exp(z)
    s = total(e)
    has = targets >= 0
    count = max(int(has.sum()), 1)
    onehot = np.zeros_like(z)
    np.put_along_axis(onehot, np.where(has, targets, 0)[..., None], 1.0, axis=-1)
    dlogits = (e / s[..., None] - onehot) * has[..., None] / count
    # the loss itself is only reported: its logarithm feeds no gradient
    picked = np.take_along_axis(z, np.where(has, targets, 0)[..., None], axis=-1)[..., 0]
    loss = -float(total(np.where(has, picked - np.log(s), 0.0).ravel())) / count
    return loss, dlogits


def loss_and_grads(p, tokens, targets, sw: Switches):
    """The loss on a batch, and its gradient for every parameter: forward, then each step undone in turn."""
    logits, x, caches = forward(p, tokens, sw)
    loss, dlogits = cross_entropy(logits, targets)
    g = {}
    dx, g["U"] = project_back(dlogits, x, p["U"])
    for n in reversed(range(len(caches))):
        dx = dx + head_backward(dx, caches[n], n, sw, g)  # the residual: both paths carry the gradient
    embed_back(dx, p, tokens, g)
    return loss, g


# --- optimisers ------------------------------------------------------------------------------------------


class Adam:
    """Adam (Kingma and Ba, 2015): each parameter steps by its gradient's running mean over the root of
    its running mean square, so a parameter with small gradients takes steps as large as one with big
    ones. The bias corrections' powers β^t are kept as running products."""

    def __init__(self, params: dict, lr: float, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.b1_t, self.b2_t = 1.0, 1.0  # β₁^t, β₂^t
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict) -> None:
        self.b1_t, self.b2_t = self.b1_t * self.b1, self.b2_t * self.b2
        for k in params:
            g = grads[k]
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * (g * g)
            m_hat = self.m[k] / (1 - self.b1_t)
            v_hat = self.v[k] / (1 - self.b2_t)
            params[k] = params[k] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class SGD:
    """Plain gradient descent: each parameter steps by −lr × its gradient, small gradients small steps."""

    def __init__(self, params: dict, lr: float):
        self.lr = lr

    def step(self, params: dict, grads: dict) -> None:
        for k in params:
            params[k] = params[k] - self.lr * grads[k]


OPTIMISERS = {"adam": Adam, "sgd": SGD}


if __name__ == "__main__":  # python -m core.train: the lab's command line
    from core.lab.cli import main

    sys.exit(main())
