"""static/train.js against core/train.py and core/lab/: the page's trainer trains the numpy trainer's models.

numpy is the reference, and it does every sum and draw in an order a port can repeat (core/train.py); the
JavaScript trainer repeats it, with the same e^x (fdlibm's, core.attention.exp and its port), so training is
the same to the last bit: every parameter after every step is equal. Only the reported loss takes a
logarithm, and JavaScript's Math.log may differ from numpy's in the last bit, so the losses are held to
1e-12 (the issue asks 1e-6). Scores are means, added in another order than numpy's in places: 1e-9 (the
issue asks 1e-3).

Each shipped task is trained at seeds 0 and 1; a run too long for the suite is trained for its first steps
here, and whole when TRAIN_PARITY_FULL=1 (every shipped run at seeds 0 and 1, step by step;
bench/bench_train.py does the same while it times both).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.lab import cli, findings, store
from core.lab.runs import RUNS, final_line, train
from core.lab.store import run_json, seed_record
from core.lab.tasks import repeated_halves_task
from core.options import table_json
from core.rng import Draws
from core.train import Shape, Switches, init_params, loss_and_grads
from tests.node_batch import NODE, results, run_node, start_node
from tests.test_train import EVERY_SWITCH

pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")

DRIVER = Path(__file__).with_name("train_driver.js")
FULL = os.environ.get("TRAIN_PARITY_FULL") == "1"
SEEDS = (0, 1)


def described(run) -> dict:
    """A run as the lab's data files describe it (what the page hands the trainer)."""
    return run_json(run, [], run.steps)


# Every task at seeds 0 and 1, through its shipped run: whole where that is quick, else its first steps.
TASK_RUNS = {"previous-token": 200, "positional-lookup": 60, "triggers": 40}
# The other shipped runs (a switch, a width or an optimiser the tasks' runs do not use), and two runs a
# student might make (τ and X × on; the mask off, which brings the honest evaluation), at seed 0, for a few
# steps; the runs marked FULL_ONLY only whole, with TRAIN_PARITY_FULL=1 (each adds no code path the others
# leave untried: d = 64 is no-scale-sgd's, the honest evaluation previous-token-unmasked's).
VARIANTS = {
    "tied-qk": RUNS["tied-qk"],
    "top-1": RUNS["top-1"],
    "raw": RUNS["raw"],
    "wide-scaled": RUNS["wide-scaled"],
    "no-scale": RUNS["no-scale"],
    "wide-scaled-sgd": RUNS["wide-scaled-sgd"],
    "no-scale-sgd": RUNS["no-scale-sgd"],
    "no-mask": RUNS["no-mask"],
    "warm-and-scaled": replace(RUNS["previous-token"], switches=Switches(temperature=0.3, x_scale=1.5)),
    "previous-token-unmasked": replace(RUNS["previous-token"], switches=Switches(causal=False), honest=True),
}
FULL_ONLY = {"wide-scaled", "no-scale", "wide-scaled-sgd", "no-mask"}
VARIANT_STEPS = 20

# (label, run, seed, steps)
CASES = [
    (name, RUNS[name], seed, None if FULL else steps) for name, steps in TASK_RUNS.items() for seed in SEEDS
]
if FULL:  # every shipped run whole at seeds 0 and 1, and the students' runs for a few steps
    CASES += [(name, run, seed, None) for name, run in VARIANTS.items() if name in RUNS for seed in SEEDS]
    CASES += [(name, run, 0, VARIANT_STEPS) for name, run in VARIANTS.items() if name not in RUNS]
else:
    CASES += [(name, run, 0, VARIANT_STEPS) for name, run in VARIANTS.items() if name not in FULL_ONLY]


def case_id(case) -> str:
    label, _, seed, steps = case
    return f"{label}-seed{seed}-{steps or 'all'}"


def bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def close(a, b, tol) -> bool:
    """Numbers (nested in dicts and lists) equal within `tol`, NaN equal to NaN."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(a))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_javascript_trains_numpys_model_step_by_step(case):
    _, run, seed, steps = case
    job = {"train": described(run), "seed": seed, "steps": steps or run.steps}
    node = start_node(DRIVER, {"jobs": [job]})
    ref = train(run, seed=seed, steps=steps)  # numpy, while Node trains the same
    (ours,) = results(node, timeout=3600)["results"]
    losses = np.array(ours["losses"])
    assert len(losses) == len(ref["losses"])
    assert np.max(np.abs(losses - ref["losses"]) / np.maximum(1, np.abs(ref["losses"]))) <= 1e-12
    for k, v in ref["params"].items():  # every parameter after the last step, to the last bit
        assert (bits(ours["params"][k]) == bits(v.ravel())).all(), k
    assert len(ours["evals"]) == len(ref["evals"])
    for mine, theirs in zip(ours["evals"], ref["evals"]):
        assert close(mine, theirs, 1e-9), (mine, theirs)
    # the record the lab ships (and a student saves): the same, in the lab's format
    assert ours["record"] == json.loads(json.dumps(seed_record(ref, every_snapshot=True)))
    assert ours["line"] == final_line(ref)


def test_the_honest_evaluation_is_where_the_mask_is_off():
    """static/train.js evaluates honestly where a run's mask is off: so does every shipped run."""
    assert all(run.honest == (not run.switches.causal) for run in RUNS.values())


def test_every_check_is_pythons_on_every_shipped_seed_and_beside_it():
    """The checks the page puts a student's run to (static/train.js CHECKS) are core/lab/findings.py's: the
    same answer on every seed of every shipped run, and on the same records with their numbers scaled (so
    each check is seen both holding and failing)."""
    runs = store.read_runs()

    def scaled(record, factor):
        def walk(v, key=""):
            if isinstance(v, dict):
                return {k: walk(x, k) for k, x in v.items()}
            if isinstance(v, list):
                return [walk(x, key) for x in v]
            if isinstance(v, float) and key not in ("step", "every"):
                return v * factor
            return v

        return walk(record)

    jobs, expected = [], []
    for name, checks in findings.CHECKS.items():
        run = runs[name]
        refs = {r["seed"]: r for r in runs[run["compare"]]["seeds"]} if run["compare"] else {}
        for record in run["seeds"]:
            for factor in (1.0, 0.5, 0.9, 1.1, 2.0):
                mine, ref = scaled(record, factor), refs.get(record["seed"])
                jobs.append({"checks": name, "record": mine, "ref": ref, "run": run})
                expected.append([bool(c.test(mine, ref, run)) for c in checks])
    results = run_node(DRIVER, {"jobs": jobs})["results"]
    assert results == expected
    flips = [{tuple(results[i + k]) for k in range(5)} for i in range(0, len(results), 5)]
    # the scaling moves checks across their lines
    assert sum(len(f) > 1 for f in flips) >= len(findings.CHECKS)


SMALL = Shape(V=5, T=4, C=3, d=2, layers=2)


def grads_job(sw: Switches) -> tuple[dict, tuple]:
    p = init_params(SMALL, 0)
    tokens, targets = repeated_halves_task(Draws(100), 2, SMALL.V, SMALL.T)
    job = {
        "grads": {
            "shape": SMALL.__dict__,
            "switches": sw.as_dict(),
            "params": {k: v.ravel() for k, v in p.items()},
            "tokens": tokens.ravel(),
            "targets": targets.ravel(),
        },
        "eps": 1e-6,
    }
    return job, loss_and_grads(p, tokens, targets, sw)


def test_javascript_backward_matches_finite_differences_and_numpy():
    """For every combination of the switches (tests/test_train.py's): the JavaScript backward against
    central differences of the JavaScript loss (≤ 1e-6 relative), and against numpy's backward (every
    gradient to the last bit)."""
    jobs = [grads_job(sw) for sw in EVERY_SWITCH]
    results = run_node(DRIVER, {"jobs": [j for j, _ in jobs]})["results"]
    for sw, (_, (loss, g)), out in zip(EVERY_SWITCH, jobs, results):
        assert out["worst"] <= 1e-6, sw
        assert abs(out["loss"] - loss) <= 1e-12 * max(1, abs(loss)), sw
        for k, v in g.items():
            assert (bits(out["grads"][k]) == bits(v.ravel())).all(), (sw, k)


# A student's runs as the lab's form gives them (values as typed): the page says which command trains each in
# numpy, and prints that command's last line.
FORMS = [
    ("tied-qk", 3, {}),
    ("tied-qk", 3, {"tied_qk": False}),  # said as the untied run it is set against
    ("no-mask", 2, {"causal": True, "temperature": "0.3"}),
    ("previous-token", 4294967295, {"normaliser": "raw", "x_scale": "1.5", "scaling": False}),
    ("no-scale-sgd", 1, {"normaliser": "top1"}),
]


def test_the_page_prints_the_command_lines_last_line_for_a_students_run(capsys):
    runs = store.read_runs()
    lab = {"runs": runs, "order": list(runs), "switches": table_json()}
    jobs = []
    for start, seed, changed in FORMS:
        switches = {**runs[start]["switches"], **changed}
        form = {"from": start, "seed": str(seed), "steps": "12", "switches": switches}
        jobs.append({"student": form, "lab": lab})
    for (_, seed, _), out in zip(FORMS, run_node(DRIVER, {"jobs": jobs})["results"]):
        words = out["command"].split()
        assert words[:3] == ["python", "-m", "core.train"] and f"--seed {seed}" in out["command"]
        assert cli.main(words[3:]) == 0
        assert capsys.readouterr().out.splitlines()[-1] == out["line"], out["command"]


DAMAGES = {  # tests/train_driver.js DAMAGE: what is wrong with a file, and what the page says of it
    "none": None,
    "not JSON": "it is not JSON",
    "another lab": "it names no run of this lab to compare with",
    "a bad switch": "temperature is 99; expected a number from 0.05 to 5",
    "a matrix cut short": "a snapshot is damaged",
    "a huge matrix": "a snapshot is damaged",
    "no snapshots": "its record is incomplete",
}


def test_a_saved_run_reads_back_and_a_damaged_file_is_refused_in_words():
    runs = store.read_runs()
    lab = {"runs": runs, "order": list(runs), "switches": table_json()}
    switches = runs["previous-token"]["switches"]
    form = {"from": "previous-token", "seed": "3", "steps": "12", "switches": switches}
    jobs = [{"saved": form, "lab": lab, "damage": kind} for kind in DAMAGES]
    for (kind, said), out in zip(DAMAGES.items(), run_node(DRIVER, {"jobs": jobs})["results"]):
        if said is None:
            assert out["line"].startswith("previous-token: loss "), out
        else:
            assert out["error"].startswith("this file is not a run saved by the lab: "), kind
            assert said in out["error"], (kind, out["error"])


@pytest.mark.parametrize(
    "argv, said",
    [
        (["previous-token", "--temperature", "9"], "temperature is 9; expected a number from 0.05 to 5"),
        (["previous-token", "--x-scale", "nan"], "x_scale is nan; expected a finite number"),
        (["--all", "--no-mask"], "switches train and print one run only"),
        (["tied-qk", "--write", "--tied-qk"], "switches train and print one run only"),
    ],
)
def test_the_command_line_refuses_switches_it_cannot_use(argv, said, capsys):
    with pytest.raises(SystemExit) as out:
        cli.main(argv)
    assert out.value.code == 2 and said in capsys.readouterr().err
