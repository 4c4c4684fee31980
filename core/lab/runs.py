"""The lab's runs: which model is trained on which task with which switches, and what is measured.

`RUNS` declares every shipped run once; the lab's picker, the command line, the data files, the findings
and the benchmarks all take their list from it. `train` trains a run from a seed and evaluates it on
held-out sequences as it goes; `evaluate` says what each head does (core/lab/scores.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.lab.scores import (
    duplicate_token_score,
    earlier_copies,
    induction_score,
    offset_score,
    previous_token_score,
)
from core.lab.tasks import N_TRIGGERS, TASKS, previous_token_task
from core.train import (
    Adam,
    Shape,
    Switches,
    cross_entropy,
    forward,
    head_forward,
    init_params,
    loss_and_grads,
)


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

EVAL_SEQS = 256
PROBE_T = 12  # the lab's probe: the first 12 positions, the most a heatmap shows with numbers in its cells
SNAPSHOTS = 16  # enough to watch a pattern form; 20 put the export over its 2 MB budget


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
        again = earlier_copies(tokens).any(axis=-1) & (tokens < N_TRIGGERS)  # a trigger seen before
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
