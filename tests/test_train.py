"""core/train.py: the hand-written backward pass, determinism, the head scores, each run's claim on a short
schedule, the command line, and the shipped data against what `--all` regenerates."""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest

from core.lab import cli, encoding, findings, scores, store, tasks
from core.lab.runs import RUNS, train
from core.train import Shape, Switches, init_params, loss_and_grads

EVERY_SWITCH = [
    Switches(scaling=s, causal=c, tied_qk=t, normaliser=n)
    for s, c, t, n in itertools.product(
        (True, False), (True, False), (True, False), ("softmax", "raw", "top1")
    )
]


def finite_difference_error(sw: Switches, seed: int = 0, eps: float = 1e-6) -> float:
    """Largest relative error, over every parameter, between the backward pass and central differences."""
    shape = Shape(V=5, T=4, C=3, d=2, layers=2)
    rng = np.random.default_rng(seed)
    p = init_params(shape, rng)
    tokens, targets = tasks.repeated_halves_task(rng, 2, shape.V, shape.T)
    _, g = loss_and_grads(p, tokens, targets, sw)
    worst = 0.0
    for name, w in p.items():
        fd = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + eps
            up, _ = loss_and_grads(p, tokens, targets, sw)
            w[idx] = old - eps
            down, _ = loss_and_grads(p, tokens, targets, sw)
            w[idx] = old
            fd[idx] = (up - down) / (2 * eps)
        scale = np.linalg.norm(g[name]) + np.linalg.norm(fd)
        worst = max(worst, float(np.linalg.norm(g[name] - fd) / scale) if scale > 0 else 0.0)
    return worst


@pytest.mark.parametrize(
    "sw", EVERY_SWITCH, ids=lambda s: f"{s.scaling}-{s.causal}-{s.tied_qk}-{s.normaliser}"
)
def test_backward_matches_finite_differences(sw):
    assert finite_difference_error(sw) <= 1e-6


def test_top1_has_no_gradient_for_queries_and_keys():
    shape = Shape(V=5, T=4, C=3, d=2, layers=1)
    rng = np.random.default_rng(1)
    p = init_params(shape, rng)
    tokens, targets = tasks.previous_token_task(rng, 3, 5, 4)
    _, g = loss_and_grads(p, tokens, targets, Switches(normaliser="top1"))
    assert not g["0.W_Q"].any() and not g["0.W_K"].any()
    assert g["0.W_V"].any()


def test_same_seed_same_curve():
    run = RUNS["tied-qk"]
    a = train(run, seed=3, steps=40, record=False)
    b = train(run, seed=3, steps=40, record=False)
    np.testing.assert_allclose(a["losses"], b["losses"], rtol=0, atol=1e-12)
    c = train(run, seed=4, steps=40, record=False)
    assert not np.allclose(a["losses"], c["losses"])


def test_head_scores_on_hand_made_patterns():
    T = 6
    prev = np.zeros((1, T, T))
    prev[0, 0, 0] = 1
    prev[0, np.arange(1, T), np.arange(T - 1)] = 1
    assert scores.previous_token_score(prev) == 1.0
    tokens = np.array([[0, 1, 2, 0, 1, 2]])
    induction = np.zeros((1, T, T))
    induction[0, :3, 0] = 1
    induction[0, 3, 1], induction[0, 4, 2], induction[0, 5, 3] = 1, 1, 1
    assert scores.induction_score(induction, tokens) == 1.0
    duplicate = np.zeros((1, T, T))
    duplicate[0, np.arange(3, T), np.arange(3)] = 1
    assert scores.duplicate_token_score(duplicate, tokens) == 1.0
    assert scores.induction_score(duplicate, tokens) == 0.0


# --- each claim, re-trained on a short schedule ------------------------------------------------------


def last(result):
    return result["evals"][-1]


def test_previous_token_forms_and_tied_qk_cannot_match_it():
    full = last(train(RUNS["previous-token"], seed=0, record=False))  # the shipped 200 steps: ~1 s
    tied = last(train(RUNS["tied-qk"], seed=0, record=False))
    p_full, p_tied = full["scores"][0]["previous_token"], tied["scores"][0]["previous_token"]
    assert p_full >= 0.9
    assert p_tied <= 0.8 * p_full


def test_top1_stays_near_the_uniform_guess():
    e = last(train(RUNS["top-1"], seed=0, steps=150, record=False))
    assert e["eval_loss"] > 0.8 * math.log(RUNS["top-1"].shape.V)


def test_raw_weights_are_not_averages():
    r = train(RUNS["raw"], seed=0, steps=60)
    A = encoding.snapshot_head(store.to_json(r)["snapshots"][-1], RUNS["raw"].switches.as_dict()).weights
    assert np.abs(A.sum(axis=-1) - 1).max() > 0.1


def test_no_scale_starts_saturated_and_learns_slower():
    runs = {n: store.to_json(train(RUNS[n], seed=0, steps=80)) for n in ("no-scale", "wide-scaled")}
    found = findings.findings(runs)["no-scale"]
    assert found["verdict"] in ("partly", "reproduced")
    below = {n: findings.first_step_below(r, 1.0) for n, r in runs.items()}
    assert below["no-scale"] > below["wide-scaled"]


def test_induction_and_no_mask_on_repeated_halves():
    ind = train(RUNS["induction"], seed=0, steps=300, record=False)  # the shipped run, cut at 300
    nom = train(RUNS["no-mask"], seed=0, steps=150, record=False)
    e, n = last(ind), last(nom)
    assert e["scores"][1]["induction"] >= 0.7
    assert e["repeat_loss"] < 0.2 * e["first_half_loss"]
    assert nom["losses"][-20:].mean() < 0.2 * ind["losses"][-20:].mean()
    assert n["honest_loss"] > e["eval_loss"]


# --- the command line and the shipped data ------------------------------------------------------------


def test_cli_prints_the_run_line_last(capsys):
    assert cli.main(["top-1", "--steps", "5", "--seed", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(
        r"top-1: loss \d+\.\d{3}, eval loss \d+\.\d{3}, "
        r"previous-token score \d\.\d{3}, induction score \d\.\d{3}",
        lines[-1],
    )


def test_cli_refuses_bad_arguments(capsys):
    for argv in ([], ["nonsense"], ["top-1", "--steps", "0"], ["top-1", "--all"]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2


@pytest.mark.parametrize("name", ["previous-token", "top-1", "no-scale"])
def test_shipped_run_equals_what_all_regenerates(name, tmp_path):
    """The cheap runs are regenerated whole and compared byte for byte; the slower ones (induction,
    no-mask, triggers) by the same code path, so they are covered by `python -m core.train --all` alone."""
    store.write_run(name, directory=tmp_path)
    assert (tmp_path / f"{name}.json").read_text() == (store.LAB_DIR / f"{name}.json").read_text()


def test_shipped_index_is_what_the_shipped_runs_give(tmp_path):
    for f in store.LAB_DIR.glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text())
    assert store.write_index(tmp_path) == json.loads((store.LAB_DIR / "index.json").read_text())
    total = sum(f.stat().st_size for f in store.LAB_DIR.glob("*.json"))
    assert total <= 300_000
