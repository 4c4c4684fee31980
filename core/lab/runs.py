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
    largest_weight,
    late_to_early_output,
    offset_score,
    previous_token_score,
    self_first,
)
from core.lab.tasks import N_TRIGGERS, TASKS, previous_token_task
from core.rng import Draws, seed_for
from core.train import (
    OPTIMISERS,
    Shape,
    Switches,
    cross_entropy,
    embed,
    forward,
    head_forward,
    init_params,
    loss_and_grads,
)


@dataclass(frozen=True)
class Run:
    name: str  # what the run is, in the lab's picker and the data file's name
    claim: str  # the chapter's sentence this run tests, in our words
    task: str  # core/lab/tasks.py
    shape: Shape
    switches: Switches = Switches()
    steps: int = 1000
    optimiser: str = "adam"  # core.train.OPTIMISERS
    lr: float = 1e-2
    batch: int = 32
    shown_layer: int = 0  # the head the lab draws (the other layers' weights are shown as maps)
    compare: str = ""  # the run this one is set against (the same model without this run's change)
    honest: bool = False  # also evaluate by generating one token at a time, with the mask

    @property
    def about(self) -> tuple[int, int]:
        """The layers whose previous-token and induction scores the command line prints: the first, and
        the last (a previous-token head feeds an induction head above it)."""
        return 0, self.shape.layers - 1


SEEDS = (0, 1, 2, 3)  # every shipped run is trained at each; the lab opens on the first
DEFAULT_SEED = SEEDS[0]

# Sizes, each the smallest at which the claim can show, so a run takes seconds and its snapshots fit the
# lab's data budget (static/lab/ is inlined in the export, which must stay within 2.5 MB).
# Previous-token family: 16 tokens (ln 16 ≈ 2.77, far above a learned copy), 12 positions, a stream of 8
# and a head of 4 (W_Q and W_K small enough to read).
# The no-scale pairs: the chapter's wide head, d = 64, where raw scores spread ≈ √64 = 8 at initialisation.
# Repeated halves: 8 random tokens from 24 (a token repeats within the first half in about 3 of 4
# sequences, rare enough per position), then the same 8 again; stream 16, head 4.
# Triggers: 24 positions, 3 triggers taking 20 % of the next-token mass, 3000 steps, stream 24, head 8
# (the pair forms suddenly, late in training). Smaller tries grew nothing: 32 positions with rarer
# triggers and 1500 steps; stream 16 and head 4 by step 4000 (bench/RESULTS-lab.md).
PREV = Shape(V=16, T=12, C=8, d=4, layers=1)
WIDE = Shape(V=16, T=12, C=16, d=64, layers=1)
HALVES = Shape(V=24, T=16, C=16, d=4, layers=2)
TRIG = Shape(V=24, T=24, C=24, d=8, layers=2)
SGD_LR = 1.0  # plain SGD's rate for the wide heads: as fast as Adam's 0.01 with ÷√d, and stable

NO_SCALE_CLAIM = (
    "Without ÷√d a wide head's softmax is nearly one-hot at initialisation, its gradients nearly vanish, so "
    "the head barely learns and learns slower."
)
RUNS = {
    r.name: r
    for r in (
        Run(
            "previous-token",
            "A head can learn a legible job such as copying the previous token. (Here the target is the "
            "previous token itself, so the run shows that a head can learn the job when trained for it, not "
            "that one appears on its own: that is the triggers run's question.)",
            "previous-token",
            PREV,
            steps=200,
        ),
        Run(
            "tied-qk",
            "With W_K = W_Q a token's score against another is the same both ways (q_i·q_j), so the "
            "asymmetric 'read the token before me' is hard to express, and, the chapter adds, every token "
            "attends mostly to itself.",
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
            "With raw scores as weights the output is no longer an average of the values: its size can grow "
            "with the number of keys a query sees, so later positions get larger outputs.",
            "previous-token",
            PREV,
            Switches(normaliser="raw"),
            steps=200,
            compare="previous-token",
        ),
        Run(
            "wide-scaled",
            "The wide head with ÷√d, trained with Adam: the reference for the no-scale run.",
            "previous-token",
            WIDE,
            steps=200,
        ),
        Run(
            "no-scale",
            NO_SCALE_CLAIM + " (Trained here with Adam, whose steps do not shrink with the gradient.)",
            "previous-token",
            WIDE,
            Switches(scaling=False),
            steps=200,
            compare="wide-scaled",
        ),
        Run(
            "wide-scaled-sgd",
            "The wide head with ÷√d, trained with plain SGD: the reference for the no-scale-sgd run.",
            "previous-token",
            WIDE,
            steps=200,
            optimiser="sgd",
            lr=SGD_LR,
        ),
        Run(
            "no-scale-sgd",
            NO_SCALE_CLAIM + " (Trained here with plain SGD, whose steps shrink with the gradient.)",
            "previous-token",
            WIDE,
            Switches(scaling=False),
            steps=200,
            optimiser="sgd",
            lr=SGD_LR,
            compare="wide-scaled-sgd",
        ),
        Run(
            "positional-lookup",
            "Trained heads find what followed this token last time (an induction head). Here the second "
            "half of each sequence repeats the first, so looking a fixed distance back does the same job.",
            "repeated-halves",
            HALVES,
            steps=1000,
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
            shown_layer=1,
            compare="positional-lookup",
            honest=True,
        ),
        Run(
            "triggers",
            "A previous-token head feeding an induction head forms by itself on text where it pays: bigrams "
            "with trigger tokens whose next token changes from sequence to sequence. Nothing here asks for "
            "the previous token: both heads appear because looking up what followed a trigger last time "
            "lowers the loss.",
            "triggers",
            TRIG,
            steps=3000,
            shown_layer=1,
        ),
    )
}

EVAL_SEQS = 256
PROBE_T = 12  # the lab's probe: the first 12 positions, the most a heatmap shows with numbers in its cells
SNAPSHOTS = 10  # enough to watch a pattern form; 16 for the first seed of each run put the export over 2.5 MB


# Each use of a run's seed draws from a stream of its own (core.rng.seed_for(seed, purpose)).
WEIGHTS, BATCHES, HELD_OUT, PROBE, UNREPEATED = range(5)


def task_batch(run: Run, draws: Draws, B: int):
    s = run.shape
    return TASKS[run.task](draws, B, s.V, s.T)


def attention_maps(p, tokens, sw: Switches) -> list[np.ndarray]:
    _, _, caches = forward(p, tokens, sw)
    return [c["A"] for c in caches]


def honest_loss(p, tokens, targets, sw: Switches) -> float:
    """Generate one token at a time: position i is predicted from tokens 0..i only, whatever the mask."""
    summed, count = 0.0, 0
    for i in range(tokens.shape[1]):
        has = targets[:, i] >= 0
        if not has.any():
            continue
        logits, _, _ = forward(p, tokens[:, : i + 1], sw)
        loss, _ = cross_entropy(logits[:, -1:], targets[:, i : i + 1])
        n = int(has.sum())
        summed, count = summed + loss * n, count + n
    return summed / count


def evaluate(run: Run, p, data, unrepeated=None) -> dict:
    """What the model does on held-out `data`: its loss, and what each head does there (core/lab/scores.py).
    For the repeated halves, `unrepeated` are sequences that do not repeat (where an induction head has
    nothing to find and only a positional look-up still points i − T/2 + 1 back)."""
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
            "largest_weight": largest_weight(A),
            "self_first": self_first(A),
            "late_to_early_output": late_to_early_output(c["O"]),
        }
        for A, c in zip(maps, caches)
    ]
    if run.task == "repeated-halves":
        h = run.shape.T // 2
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
    x = embed(p, tokens[None])[0]
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
    """Train `run` from `seed`; return its losses, its evaluations and (if record) snapshots of the shown
    head. The same seed gives the same run, to the last bit."""
    steps = run.steps if steps is None else steps
    p = init_params(run.shape, seed_for(seed, WEIGHTS))
    batches = Draws(seed_for(seed, BATCHES))
    held_out = task_batch(run, Draws(seed_for(seed, HELD_OUT)), EVAL_SEQS)
    probe = task_batch(run, Draws(seed_for(seed, PROBE)), 1)[0][0][:PROBE_T]
    unrepeated = None
    if run.task == "repeated-halves":
        s = run.shape
        unrepeated = previous_token_task(Draws(seed_for(seed, UNREPEATED)), EVAL_SEQS, s.V, s.T)[0]
    opt = OPTIMISERS[run.optimiser](p, run.lr)
    # Closer together early on, where the patterns form: step = steps · (k / (SNAPSHOTS − 1))².
    eval_at = set(np.unique((steps * np.linspace(0, 1, SNAPSHOTS) ** 2).round().astype(int)).tolist())
    losses, evals, snaps = [], [], []
    for step in range(steps + 1):
        if step in eval_at:
            e = evaluate(run, p, held_out, unrepeated)
            e["step"] = step
            evals.append(e)
            if record:
                s = head_snapshot(p, probe, run)
                s["step"] = step
                snaps.append(s)
        if step == steps:
            break
        tokens, targets = task_batch(run, batches, run.batch)
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
    """How a run did, on one line: its training loss (the last twentieth of the steps), held-out loss,
    previous-token score (first layer), induction score (last layer) and, where the run has one, the
    honest loss (generating one token at a time, so only the tokens so far exist: what the model is worth
    in use)."""
    run, e = result["run"], result["evals"][-1]
    lp, li = run.about
    tail = result["losses"][-max(1, len(result["losses"]) // 20) :].mean()
    line = (
        f"{run.name}: loss {tail:.3f}, eval loss {e['eval_loss']:.3f}, "
        f"previous-token score {e['scores'][lp]['previous_token']:.3f}, "
        f"induction score {e['scores'][li]['induction']:.3f}"
    )
    return line + (f", honest loss {e['honest_loss']:.3f}" if "honest_loss" in e else "")
