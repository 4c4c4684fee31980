"""core/train.py as a port must repeat it: the same numbers, to the last bit, from plain scalar loops.

Training amplifies a difference in the last bit into a different model (the triggers run, perturbed by
1e-15 at its start, ends 0.02 away in loss), so a port to another language (the page's Web Worker, issue
29) can only match the numpy trainer step by step if it does the very same operations in the very same
order. core/train.py states that order; this file writes the model once more the way a port would, one
float at a time in plain loops (Python floats are the same IEEE doubles as JavaScript numbers), and
requires the same bits: the draws, the initial weights, a batch, the loss, every gradient, Adam's step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.attention import exp as fdlibm_exp
from core.lab.runs import BATCHES, RUNS, WEIGHTS, task_batch
from core.rng import Draws, seed_for
from core.train import Adam, Shape, Switches, init_params, loss_and_grads

M32 = 0xFFFFFFFF
GOLDEN = 0x6D2B79F5


def mulberry32(seed: int, k: int) -> int:
    """static/saturation.js's mulberry32, in Python integers."""
    a = (seed + (k + 1) * GOLDEN) & M32
    t = ((a ^ (a >> 15)) * (a | 1)) & M32
    t = ((t + (((t ^ (t >> 7)) * (t | 61)) & M32)) & M32) ^ t
    return (t ^ (t >> 14)) & M32


class ScalarDraws:
    def __init__(self, seed: int):
        self.seed, self.taken = seed, 0

    def uniform(self) -> float:
        u = (mulberry32(self.seed, self.taken) + 0.5) / 4294967296.0
        self.taken += 1
        return u


def exp(x: float) -> float:
    """e^x as core.attention.exp computes it (fdlibm's, which the JavaScript port's Math.exp is)."""
    return float(fdlibm_exp(np.float64(x)))


def zeros(*shape):
    return [0.0] * shape[0] if len(shape) == 1 else [zeros(*shape[1:]) for _ in range(shape[0])]


def scalar_init(shape: Shape, seed: int) -> dict:
    draws = ScalarDraws(seed)

    def uniform(rows, cols, variance):
        bound = math.sqrt(3 * variance)
        return [[bound * (2 * draws.uniform() - 1) for _ in range(cols)] for _ in range(rows)]

    V, T, C, d = shape.V, shape.T, shape.C, shape.d
    p = {"E": uniform(V, C, 0.5), "P": uniform(T, C, 0.5)}
    for n in range(shape.layers):
        for w in ("W_Q", "W_K", "W_V"):
            p[f"{n}.{w}"] = uniform(C, d, 1 / C)
        p[f"{n}.W_O"] = uniform(d, C, 1 / d)
    p["U"] = uniform(C, V, 1 / C)
    return p


def dot(a, b):
    """Σ a[k]·b[k], added from k = 0: as core.attention.matmul adds, and as a port's loop would."""
    s = 0.0
    for x, y in zip(a, b):
        s += x * y
    return s


def in_order(values):
    """A sum added from its first term (core.train.total)."""
    s = values[0]
    for v in values[1:]:
        s += v
    return s


def col(M, j):
    return [row[j] for row in M]


def mm(A, B):
    """A·B, each entry a dot product added in order."""
    return [[dot(row, col(B, j)) for j in range(len(B[0]))] for row in A]


def mm_t(A, B):
    """A·Bᵀ."""
    return [[dot(row, other) for other in B] for row in A]


def tmm(A, B):
    """Aᵀ·B: Σ over the rows of A and B, in order."""
    return [[dot(col(A, i), col(B, j)) for j in range(len(B[0]))] for i in range(len(A[0]))]


def batch_grad(Xs, dYs):
    """Σ over the batch of Xᵀ·dY: each sequence's own sum, then the sequences' in batch order."""
    per = [tmm(X, dY) for X, dY in zip(Xs, dYs)]
    return [[in_order([g[i][j] for g in per]) for j in range(len(per[0][0]))] for i in range(len(per[0]))]


def head(x, p, n, sw: Switches):
    T = len(x)
    W_Q, W_V, W_O = p[f"{n}.W_Q"], p[f"{n}.W_V"], p[f"{n}.W_O"]
    W_K = W_Q if sw.tied_qk else p[f"{n}.W_K"]
    d = len(W_Q[0])
    xs = [[v * sw.x_scale for v in r] for r in x] if sw.x_scale != 1 else x
    Q, K, Vv = mm(xs, W_Q), mm(xs, W_K), mm(xs, W_V)
    S = mm_t(Q, K)
    M = []
    for i in range(T):
        row = []
        for j in range(T):
            s = S[i][j] / math.sqrt(d) if sw.scaling else S[i][j]
            s = s / sw.temperature if sw.temperature != 1 else s
            row.append(-math.inf if sw.causal and j > i else s)
        M.append(row)
    A = []
    for row in M:
        if sw.normaliser == "softmax":
            top = max(v for v in row if math.isfinite(v))
            e = [exp(v - top) if math.isfinite(v) else 0.0 for v in row]
            s = in_order(e)
            A.append([v / s for v in e])
        elif sw.normaliser == "raw":
            A.append([v if math.isfinite(v) else 0.0 for v in row])
        else:
            best = row.index(max(row))
            A.append([1.0 if j == best else 0.0 for j in range(T)])
    O = mm(A, Vv)
    return mm(O, W_O), dict(xs=xs, Q=Q, K=K, V=Vv, M=M, A=A, O=O, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)


def head_back(douts, caches, n, sw: Switches, g):
    """The backward of one layer for every sequence of the batch; returns each sequence's dx."""
    per = []
    for dout, c in zip(douts, caches):
        T, d = len(c["A"]), len(c["W_Q"][0])
        dO = mm_t(dout, c["W_O"])
        dA, dV = mm_t(dO, c["V"]), tmm(c["A"], dO)
        dS = zeros(T, T)
        for i in range(T):
            r = in_order([dA[i][j] * c["A"][i][j] for j in range(T)])
            for j in range(T):
                if sw.normaliser == "softmax":
                    v = c["A"][i][j] * (dA[i][j] - r)
                elif sw.normaliser == "raw":
                    v = dA[i][j] if math.isfinite(c["M"][i][j]) else 0.0
                else:
                    v = 0.0
                v = 0.0 if sw.causal and j > i else v
                v = v / sw.temperature if sw.temperature != 1 else v
                dS[i][j] = v / math.sqrt(d) if sw.scaling else v
        dQ, dK = mm(dS, c["K"]), tmm(dS, c["Q"])
        per.append(dict(dO=dO, dQ=dQ, dK=dK, dV=dV))
    xs = [c["xs"] for c in caches]
    g[f"{n}.W_O"] = batch_grad([c["O"] for c in caches], douts)
    gQ, gK = batch_grad(xs, [q["dQ"] for q in per]), batch_grad(xs, [q["dK"] for q in per])
    g[f"{n}.W_V"] = batch_grad(xs, [q["dV"] for q in per])
    if sw.tied_qk:
        g[f"{n}.W_Q"] = [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(gQ, gK)]
        g[f"{n}.W_K"] = [[0.0] * len(r) for r in gK]
    else:
        g[f"{n}.W_Q"], g[f"{n}.W_K"] = gQ, gK
    out = []
    for q, c in zip(per, caches):
        dxq, dxk, dxv = mm_t(q["dQ"], c["W_Q"]), mm_t(q["dK"], c["W_K"]), mm_t(q["dV"], c["W_V"])
        dxs = [[(a + b) + e for a, b, e in zip(ra, rb, re)] for ra, rb, re in zip(dxq, dxk, dxv)]
        out.append([[v * sw.x_scale for v in r] for r in dxs] if sw.x_scale != 1 else dxs)
    return out


def scalar_loss_and_grads(p, tokens, targets, sw: Switches):
    layers = sum(1 for k in p if k.endswith(".W_Q"))
    xs = [[[e + q for e, q in zip(p["E"][t], p["P"][i])] for i, t in enumerate(seq)] for seq in tokens]
    caches = []
    for n in range(layers):
        outs = [head(x, p, n, sw) for x in xs]
        caches.append([c for _, c in outs])
        xs = [[[a + b for a, b in zip(ra, rb)] for ra, rb in zip(x, o)] for x, (o, _) in zip(xs, outs)]
    count = max(sum(1 for row in targets for t in row if t >= 0), 1)
    dlogits, terms = [], []
    for x, ys in zip(xs, targets):
        rows = []
        for logits, y in zip(mm(x, p["U"]), ys):
            top = max(logits)
            z = [v - top for v in logits]
            e = [exp(v) for v in z]
            s = in_order(e)
            has = 1.0 if y >= 0 else 0.0
            rows.append([(ev / s - (1.0 if k == y else 0.0)) * has / count for k, ev in enumerate(e)])
            terms.append(z[y] - math.log(s) if y >= 0 else 0.0)
        dlogits.append(rows)
    loss = -in_order(terms) / count
    g = {"U": batch_grad(xs, dlogits)}
    dx = [mm_t(dl, p["U"]) for dl in dlogits]
    for n in reversed(range(layers)):
        back = head_back(dx, caches[n], n, sw, g)
        dx = [[[a + b for a, b in zip(ra, rb)] for ra, rb in zip(x, y)] for x, y in zip(dx, back)]
    g["E"] = zeros(len(p["E"]), len(p["E"][0]))
    for seq, dseq in zip(tokens, dx):
        for t, row in zip(seq, dseq):
            g["E"][t] = [a + b for a, b in zip(g["E"][t], row)]
    g["P"] = zeros(len(p["P"]), len(p["P"][0]))
    for i in range(len(tokens[0])):
        g["P"][i] = [in_order([dseq[i][c] for dseq in dx]) for c in range(len(p["P"][0]))]
    return loss, g


def bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def test_draws_are_mulberry32_in_order():
    d, s = Draws(12345), ScalarDraws(12345)
    assert (bits(d.uniform((3, 7))) == bits([[s.uniform() for _ in range(7)] for _ in range(3)])).all()
    assert seed_for(7, 3) == mulberry32(7, 3)


def test_initial_weights_are_the_scalar_draws():
    shape = RUNS["triggers"].shape
    p, ref = init_params(shape, seed_for(0, WEIGHTS)), scalar_init(shape, seed_for(0, WEIGHTS))
    assert list(p) == list(ref)
    for k in p:
        assert (bits(p[k]) == bits(ref[k])).all(), k


# sums of more than 8 terms (numpy adds those in 8 interleaved partial sums, which these loops would catch)
SMALL = Shape(V=11, T=10, C=3, d=2, layers=2)
CASES = [
    Switches(),
    Switches(scaling=False, tied_qk=True),
    Switches(causal=False, normaliser="raw", x_scale=1.5),
    Switches(normaliser="top1", temperature=0.3),
]


@pytest.mark.parametrize("sw", CASES, ids=lambda s: "-".join(f"{v}" for v in s.as_dict().values()))
def test_loss_gradients_and_adam_are_the_scalar_loops_bit_for_bit(sw):
    p = init_params(SMALL, 3)
    draws = Draws(4)
    tokens = draws.below(SMALL.V, (2, SMALL.T))
    targets = np.where(draws.uniform((2, SMALL.T)) < 0.8, draws.below(SMALL.V, (2, SMALL.T)), -1)
    loss, g = loss_and_grads(p, tokens, targets, sw)
    ref_loss, ref = scalar_loss_and_grads(scalar_init(SMALL, 3), tokens.tolist(), targets.tolist(), sw)
    assert bits(loss) == bits(ref_loss)
    for k in p:
        assert (bits(g[k]) == bits(ref[k])).all(), k
    # two of Adam's steps, as a port writes them
    opt = Adam(p, 0.01)
    m = {k: zeros(*v.shape) for k, v in p.items()}
    v2 = {k: zeros(*v.shape) for k, v in p.items()}
    q = {k: v.tolist() for k, v in p.items()}
    b1t = b2t = 1.0
    for _ in range(2):
        opt.step(p, g)
        b1t, b2t = b1t * 0.9, b2t * 0.999
        for k in q:
            for idx in np.ndindex(p[k].shape):
                i, j = idx
                gk = g[k][idx]
                m[k][i][j] = 0.9 * m[k][i][j] + (1 - 0.9) * gk
                v2[k][i][j] = 0.999 * v2[k][i][j] + (1 - 0.999) * (gk * gk)
                m_hat, v_hat = m[k][i][j] / (1 - b1t), v2[k][i][j] / (1 - b2t)
                q[k][i][j] = q[k][i][j] - 0.01 * m_hat / (math.sqrt(v_hat) + 1e-8)
    for k in p:
        assert (bits(p[k]) == bits(q[k])).all(), k


@pytest.mark.parametrize("task", ["previous-token", "positional-lookup", "triggers"])
def test_a_batch_is_the_same_draws_in_the_stated_order(task):
    """Each task's first batch, rebuilt from scalar draws as its docstring says it takes them."""
    run = RUNS[task]
    V, T, B = run.shape.V, run.shape.T, run.batch
    tokens, _ = task_batch(run, Draws(seed_for(0, BATCHES)), B)
    d = ScalarDraws(seed_for(0, BATCHES))

    def below(n):
        return math.floor(d.uniform() * n)

    if run.task == "previous-token":
        expect = [[below(V) for _ in range(T)] for _ in range(B)]
    elif run.task == "repeated-halves":
        expect = [[below(V) for _ in range(T // 2)] * 2 for _ in range(B)]
    else:
        from core.lab.tasks import N_TRIGGERS, bigram_table

        table = bigram_table(V).tolist()
        running = []
        for row in table:
            acc, out = 0.0, []
            for w in row:
                acc = w if not out else acc + w
                out.append(acc)
            running.append(out)
        outputs = [[N_TRIGGERS + below(V - N_TRIGGERS) for _ in range(N_TRIGGERS)] for _ in range(B)]
        expect = [[below(V)] for _ in range(B)]
        us = [[d.uniform() for _ in range(T - 1)] for _ in range(B)]
        for b in range(B):
            for t in range(1, T):
                prev = expect[b][-1]
                if prev < N_TRIGGERS:
                    expect[b].append(outputs[b][prev])
                else:
                    expect[b].append(min(sum(us[b][t - 1] > c for c in running[prev]), V - 1))
    assert tokens.tolist() == expect
