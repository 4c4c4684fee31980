"""The lab's claims, counted over the shipped seeds (issue 27): each count is computed here again from the
numbers in static/lab/*.json, by this file's own reading of the claim, and the lab's verdicts and
sentences (core/lab/findings.py, index.json) must agree with it."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from core.lab import findings
from core.lab.encoding import snapshot_head
from core.lab.runs import RUNS, SEEDS
from core.lab.store import LAB_DIR, read_runs
from widgets.lab_data import LAB_INTRO, lab_payload

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = read_runs()
INDEX = json.loads((LAB_DIR / "index.json").read_text())
FINDINGS = INDEX["findings"]
N = len(SEEDS)


def ends(name: str, layer: int | None = None) -> list:
    """The end-of-training numbers of each seed (a layer's head scores, if a layer is given)."""
    return [r["end"] if layer is None else r["end"]["scores"][layer] for r in SHIPPED[name]["seeds"]]


def held(name: str, says: str) -> list[bool]:
    """The lab's own count for the check of run `name` whose text starts with `says`."""
    (check,) = [c for c in FINDINGS[name]["checks"] if c["says"].startswith(says)]
    return check["held"]


def showed(name: str) -> str:
    return " ".join(FINDINGS[name]["showed"])


def verdict_of(flags: list[bool]) -> str:
    return "reproduced" if all(flags) else "not reproduced" if not any(flags) else "partly"


def formed_at() -> list[bool]:
    """Triggers: layer 0 reads the token before where a trigger was, and layer 1 looks up what followed a
    repeated trigger, each with more than half its weight."""
    return [
        a["previous_token_after_triggers"] > 0.5 and b["induction_at_triggers"] > 0.5
        for a, b in zip(ends("triggers", 0), ends("triggers", 1))
    ]


def test_every_run_is_counted_over_the_same_seeds():
    for name, run in SHIPPED.items():
        assert [r["seed"] for r in run["seeds"]] == list(SEEDS), name
    for name, found in FINDINGS.items():
        assert found["seeds"] == list(SEEDS) and all(len(c["held"]) == N for c in found["checks"]), name


def test_previous_token_shows_a_head_can_learn_the_job_and_leaves_emergence_to_triggers():
    flags = [s["previous_token"] >= 0.9 for s in ends("previous-token", 0)]
    assert held("previous-token", "the head puts ≥ 0.9") == flags
    assert FINDINGS["previous-token"]["verdict"] == verdict_of(flags)
    claim = SHIPPED["previous-token"]["claim"]
    assert "can learn" in claim and "not that one appears on its own" in claim and "triggers" in claim
    assert f"there it formed at {sum(formed_at())} of {N} seeds" in showed("previous-token")


def test_triggers_pair_is_counted_seed_by_seed():
    formed = formed_at()
    assert held("triggers", "the pair formed") == formed
    assert FINDINGS["triggers"]["verdict"] == verdict_of(formed)
    text = showed("triggers")
    if all(formed):
        assert "formed at every seed" in text
    elif any(formed):
        missing = [str(s) for s, f in zip(SEEDS, formed) if not f]
        assert f"not at {', '.join(missing)}" in text and "depends on the seed" in text
    else:
        assert "at any seed" in text


def test_the_repeated_halves_run_is_named_for_the_positional_look_up_it_learns():
    assert "induction" not in RUNS and "positional-lookup" in RUNS
    h = SHIPPED["positional-lookup"]["shape"]["T"] // 2
    positional = [max(s["positional"] for s in e["scores"]) >= 0.5 for e in ends("positional-lookup")]
    token_matching = [
        any(s["induction"] >= 0.5 and s["positional"] < 0.5 for s in e["scores"])
        for e in ends("positional-lookup")
    ]
    assert held("positional-lookup", "a positional look-up") == positional
    assert held("positional-lookup", "an induction head") == token_matching
    assert FINDINGS["positional-lookup"]["verdict"] == verdict_of(token_matching)
    text = showed("positional-lookup")
    assert "matches tokens" not in text  # the old text said so even at a seed where no layer did induction
    for r in SHIPPED["positional-lookup"]["seeds"]:
        scores = r["end"]["scores"]
        k = int(np.argmax([s["positional"] for s in scores]))
        assert (
            f"seed {r['seed']}: layer {k} puts {scores[k]['positional']:.2f} on position i − {h - 1}" in text
        )


def test_tied_qk_says_what_tying_does_and_agrees_with_the_explorer_and_its_losses():
    run = SHIPPED["tied-qk"]
    assert "matches itself best" not in run["claim"]  # the explorer's own note shows "it" reading "cat" most
    # the claim's arithmetic holds on every shipped tied head: the scores are symmetric, and a key beats the
    # query's own score only if that key scores itself higher still (q_i·q_j ≤ max(|q_i|², |q_j|²))
    for r in run["seeds"]:
        S = snapshot_head(r["snapshots"][-1], run["switches"]).scores
        assert np.allclose(S, S.T)
        assert (S <= np.maximum.outer(np.diag(S), np.diag(S)) + 1e-9).all()
    untied = ends("previous-token", 0)
    weaker = [t["previous_token"] <= 0.8 * u["previous_token"] for t, u in zip(ends("tied-qk", 0), untied)]
    assert held("tied-qk", "the tied head reads the token before less well") == weaker
    itself = [s["self_first"] >= 0.5 for s in ends("tied-qk", 0)]
    assert held("tied-qk", "most tokens read themselves most") == itself
    losses = [e["eval_loss"] for e in ends("tied-qk")]
    text = showed("tied-qk")
    assert "still solves the task" not in text
    if any(x >= 0.1 for x in losses):  # then it is not said to learn the task at every seed
        assert not re.search(r"it learns the task at seeds? [\d, ]+\.$", FINDINGS["tied-qk"]["showed"][-1])


def test_raw_scores_verdict_tests_something_a_softmax_head_fails():
    grows = [s["late_to_early_output"] >= 1.5 for s in ends("raw", 0)]
    assert held("raw", "later positions get larger outputs") == grows
    assert FINDINGS["raw"]["verdict"] == verdict_of(grows)
    # the same test on the softmax head fails at every seed: it tests the normaliser, not a tautology
    assert not any(s["late_to_early_output"] >= 1.5 for s in ends("previous-token", 0))
    assert not any("sum to 1" in c["says"] for c in FINDINGS["raw"]["checks"])


def steps_below_1(name: str) -> list:
    """Each seed's first step with the training loss below 1.0 (at the end of a window of `every` steps)."""
    out = []
    for r in SHIPPED[name]["seeds"]:
        every, losses = r["curve"]["every"], r["curve"]["loss"]
        out.append(next(((j + 1) * every for j, x in enumerate(losses) if x < 1.0), None))
    return out


@pytest.mark.parametrize(
    "name, reference, optimiser",
    [("no-scale", "wide-scaled", "Adam"), ("no-scale-sgd", "wide-scaled-sgd", "plain SGD")],
)
def test_no_scale_names_its_optimiser_and_counts_the_slowdown(name, reference, optimiser):
    assert SHIPPED[name]["optimiser"] == SHIPPED[reference]["optimiser"] == RUNS[name].optimiser
    assert optimiser in SHIPPED[name]["claim"] and f"With {optimiser}" in showed(name)
    mine, theirs = steps_below_1(name), steps_below_1(reference)
    later = [t is not None and (m is None or m >= 1.25 * t) for m, t in zip(mine, theirs)]
    assert held(name, "learns slower") == later
    assert ", ".join(map(str, mine)) in showed(name)
    one_hot = [r["start"]["scores"][0]["largest_weight"] >= 0.8 for r in SHIPPED[name]["seeds"]]
    assert held(name, "starts nearly one-hot") == one_hot
    assert held(name, "barely learns") == [e["eval_loss"] > 0.5 * math.log(16) for e in ends(name)]


def test_no_mask_is_counted_by_its_honest_loss():
    lnV = math.log(SHIPPED["no-mask"]["shape"]["V"])
    honest = [e["honest_loss"] for e in ends("no-mask")]
    assert held("no-mask", "generating one token at a time") == [h > lnV for h in honest]
    assert ", ".join(findings.small(h) for h in honest) in showed("no-mask")


def test_results_lab_is_written_from_the_files_it_describes():
    sys.path.insert(0, str(ROOT / "bench"))
    import lab_results

    assert lab_results.written() == lab_results.block()


def test_the_lab_and_readme_say_what_depends_on_the_seed():
    assert "seed" in LAB_INTRO and "depend" in LAB_INTRO
    payload = lab_payload()
    assert all(len(notes) == N for notes in payload["at_seed"].values())
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"each from {N} seeds" in readme
    assert f"(at {sum(formed_at())} of {N} seeds)" in readme
