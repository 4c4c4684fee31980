"""core/train.py and core/lab/: the hand-written backward pass for every switch of the table, determinism,
the head scores, the command line, and the shipped data against what `--all` regenerates.

(tests/test_train_reference.py holds the trainer to plain scalar loops bit for bit; tests/test_lab_findings.py
counts the claims over the shipped seeds.)"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import fields

import numpy as np
import pytest

from core.lab import cli, findings, scores, store, tasks
from core.lab.runs import DEFAULT_SEED, RUNS, SEEDS, SNAPSHOTS, train
from core.options import SWITCHES, check_option
from core.rng import Draws
from core.train import Shape, Switches, init_params, loss_and_grads


def flipped(s):
    """A value of switch `s` other than its default: the other side of a toggle, each other choice, or half
    the default number (within the table's limits)."""
    if s.kind == "toggle":
        return [not s.default]
    if s.kind == "choice":
        return [c for c in s.choices if c != s.default]
    return [check_option(s.name, s.default / 2)]


# Every combination of the toggles and choices, then each number switch flipped on its own: all from the
# table, so a switch added to core.options.SWITCHES is trained and checked here too.
DISCRETE = [s for s in SWITCHES if s.kind != "number"]
EVERY_SWITCH = [
    Switches(**dict(zip((s.name for s in DISCRETE), values)))
    for values in itertools.product(*([s.default, *flipped(s)] for s in DISCRETE))
] + [Switches(**{s.name: v}) for s in SWITCHES if s.kind == "number" for v in flipped(s)]


def test_the_trainers_switches_are_the_tables():
    assert [f.name for f in fields(Switches)] == [s.name for s in SWITCHES]
    assert len(EVERY_SWITCH) == 26  # 2 × 2 × 2 × 3 discrete, and τ and X × each flipped


def small_batch(shape: Shape, seed: int = 0):
    p = init_params(shape, seed)
    tokens, targets = tasks.repeated_halves_task(Draws(seed + 100), 2, shape.V, shape.T)
    return p, tokens, targets


def finite_difference_error(sw: Switches, eps: float = 1e-6) -> float:
    """Largest relative error, over every parameter, between the backward pass and central differences."""
    p, tokens, targets = small_batch(Shape(V=5, T=4, C=3, d=2, layers=2))
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


@pytest.mark.parametrize("sw", EVERY_SWITCH, ids=lambda s: "-".join(map(str, s.as_dict().values())))
def test_backward_matches_finite_differences(sw):
    assert finite_difference_error(sw) <= 1e-6


@pytest.mark.parametrize("s", SWITCHES, ids=lambda s: s.name)
def test_every_switch_changes_what_the_model_computes(s):
    p, tokens, targets = small_batch(Shape(V=5, T=4, C=3, d=2, layers=1))
    base, _ = loss_and_grads(p, tokens, targets, Switches())
    for v in flipped(s):
        assert loss_and_grads(p, tokens, targets, Switches(**{s.name: v}))[0] != base, (s.name, v)


def test_top1_has_no_gradient_for_queries_and_keys():
    p, tokens, targets = small_batch(Shape(V=5, T=4, C=3, d=2, layers=1), seed=1)
    _, g = loss_and_grads(p, tokens, targets, Switches(normaliser="top1"))
    assert not g["0.W_Q"].any() and not g["0.W_K"].any()
    assert g["0.W_V"].any()


def test_same_seed_same_run_to_the_last_bit():
    run = RUNS["tied-qk"]
    a = train(run, seed=3, steps=40, record=False)
    b = train(run, seed=3, steps=40, record=False)
    assert (a["losses"] == b["losses"]).all()
    c = train(run, seed=4, steps=40, record=False)
    assert not np.allclose(a["losses"], c["losses"])


def test_head_scores_on_hand_made_patterns():
    T = 6
    prev = np.zeros((1, T, T))
    prev[0, 0, 0] = 1
    prev[0, np.arange(1, T), np.arange(T - 1)] = 1
    assert scores.previous_token_score(prev) == 1.0
    assert scores.largest_weight(prev) == 1.0 and scores.self_first(prev) == 0.0
    tokens = np.array([[0, 1, 2, 0, 1, 2]])
    induction = np.zeros((1, T, T))
    induction[0, :3, 0] = 1
    induction[0, 3, 1], induction[0, 4, 2], induction[0, 5, 3] = 1, 1, 1
    assert scores.induction_score(induction, tokens) == 1.0
    duplicate = np.zeros((1, T, T))
    duplicate[0, np.arange(3, T), np.arange(3)] = 1
    assert scores.duplicate_token_score(duplicate, tokens) == 1.0
    assert scores.induction_score(duplicate, tokens) == 0.0
    itself = np.eye(T)[None]
    assert scores.self_first(itself) == 1.0
    even = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    assert scores.largest_weight(even[None]) == pytest.approx(np.mean(1 / np.arange(2, T + 1)))
    # an output that grows with position: twice as long in the last third as in the first
    O = np.ones((1, 7, 2))
    O[0, 5:] = 2
    assert scores.late_to_early_output(O) == pytest.approx(2.0)


# --- the command line ------------------------------------------------------------------------------


LINE = (
    r"{}: loss \d+\.\d{{3}}, eval loss \d+\.\d{{3}}, "
    r"previous-token score \d\.\d{{3}}, induction score \d\.\d{{3}}"
)


def test_cli_prints_the_run_line_last(capsys):
    assert cli.main(["top-1", "--steps", "5", "--seed", "2"]) == 0
    assert re.fullmatch(LINE.format("top-1"), capsys.readouterr().out.strip().splitlines()[-1])


def test_cli_prints_the_honest_loss_of_a_run_that_has_one(capsys):
    """no-mask's held-out loss is read with the mask off, so it looks perfect; the honest loss generates one
    token at a time (nothing ahead exists) and is what the model is worth. The line must say both."""
    assert RUNS["no-mask"].honest and not RUNS["positional-lookup"].honest
    assert cli.main(["no-mask", "--steps", "3"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(LINE.format("no-mask") + r", honest loss \d+\.\d{3}", last), last
    # the shipped run at its default seed: the honest loss it records is far above a uniform guess
    shipped = json.loads((store.LAB_DIR / "no-mask.json").read_text())["seeds"][0]["end"]
    assert shipped["eval_loss"] < 0.01 < math.log(RUNS["no-mask"].shape.V) < shipped["honest_loss"]


def test_cli_refuses_bad_arguments(capsys):
    bad = (
        [],
        ["nonsense"],
        ["top-1", "--steps", "0"],
        ["top-1", "--all"],
        ["top-1", "--write", "--seed", "1"],
    )
    for argv in bad:
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2


# --- the shipped data ---------------------------------------------------------------------------------


def shipped(name: str) -> dict:
    return json.loads((store.LAB_DIR / f"{name}.json").read_text())


def test_every_run_ships_at_every_seed_the_default_first_and_whole():
    assert len(SEEDS) >= 4 and SEEDS[0] == DEFAULT_SEED
    index = json.loads((store.LAB_DIR / "index.json").read_text())
    assert index["runs"] == list(RUNS)  # the one declaration, in its order
    for name in RUNS:
        records = shipped(name)["seeds"]
        assert [r["seed"] for r in records] == list(SEEDS)
        assert len(records[0]["snapshots"]) == SNAPSHOTS  # the default seed: training, snapshot by snapshot
        assert all(len(r["snapshots"]) == 1 for r in records[1:])  # the others: the trained head
        assert all(r["snapshots"][-1]["step"] == shipped(name)["steps"] for r in records)


@pytest.mark.parametrize("name", ["previous-token", "top-1"])
def test_shipped_run_equals_what_all_regenerates(name, tmp_path):
    """Cheap runs are regenerated whole, at every seed, and compared byte for byte; the slower ones go
    through the same code (store.write_run), which `python -m core.train --all` runs for every run."""
    store.write_run(name, directory=tmp_path)
    assert (tmp_path / f"{name}.json").read_text() == (store.LAB_DIR / f"{name}.json").read_text()


@pytest.mark.parametrize("name", ["tied-qk", "no-scale-sgd", "positional-lookup", "triggers"])
def test_a_runs_start_is_what_its_seed_gives(name):
    """The slower runs are too long to retrain here: their evaluation before the first step (the weights and
    the held-out data a seed draws) is checked at the last seed instead."""
    start = train(RUNS[name], seed=SEEDS[-1], steps=0, record=False)["evals"][0]
    start = store.numbers({k: v for k, v in start.items() if k != "step"})
    assert start == shipped(name)["seeds"][-1]["start"]


def test_shipped_index_is_what_the_shipped_runs_give(tmp_path):
    for f in store.LAB_DIR.glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text())
    assert store.write_index(tmp_path) == json.loads((store.LAB_DIR / "index.json").read_text())
    assert (
        findings.findings(store.read_runs())
        == json.loads((store.LAB_DIR / "index.json").read_text())["findings"]
    )
