"""The training lab's data, as plain dicts: no Bokeh, no Panel.

The shipped runs (static/lab/*.json, written by `python -m core.train --all`) hold each run at every seed of
core.lab.runs.SEEDS: its curves, its numbers at the start and end, and snapshots of the shown head (its
input on a probe sequence and its learned W_Q, W_K, W_V): every one for the first seed, the trained head alone
for the others. Both pages draw the lab with static/lab.js from `lab_payload()` (the runs, the
introduction and the text made here: each run's claim, verdicts counted over the seeds and findings, and a
line for each seed); it recomputes the head with the JavaScript port of the core. `head_at` is the numpy
core's head at a snapshot, which tests/test_lab_parity.py holds the JavaScript lab equal to.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache

from core.lab.encoding import snapshot_head
from core.lab.findings import seeds_of
from core.lab.store import LAB_DIR
from core.options import SWITCHES, table_json

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
# The lab's introduction, the same in the served page and the export.
LAB_INTRO = (
    "<h2>Training lab</h2><p>Tiny attention-only transformers trained in numpy "
    "(<code>python -m core.train</code>) on tasks where one of the chapter's claims should show. Pick a run, "
    "slide through its snapshots to watch the head's pattern form on a probe sequence, and compare its loss "
    "with the run it is set against. Every run was trained from several seeds (its starting weights and its "
    "data): what a run learns can depend on the seed, so each verdict counts the seeds where the claim held, "
    "and the seed picker shows any one of them. Tokens are shown as letters.</p>"
)
VERDICT_TEXT = {
    "reproduced": "Reproduced at every seed.",
    "partly": "Partly reproduced.",
    "not reproduced": "Not reproduced at any seed.",
}


@lru_cache(maxsize=1)
def load_lab() -> dict:
    """Every shipped run and the index (read once per process; the files do not change while serving)."""
    index = json.loads((LAB_DIR / "index.json").read_text())
    runs = {name: json.loads((LAB_DIR / f"{name}.json").read_text()) for name in index["runs"]}
    return {"index": index, "runs": runs}


def lab_payload() -> dict:
    """What static/lab.js draws the lab from, in the export and the served page alike."""
    lab = load_lab()
    runs, index = lab["runs"], lab["index"]
    return {
        "intro": LAB_INTRO,
        "order": index["runs"],
        "runs": runs,
        "described": {n: describe(r, index) for n, r in runs.items()},
        "at_seed": {n: [seed_note(r, index, k) for k in range(len(r["seeds"]))] for n, r in runs.items()},
        "switches": table_json(),  # the table static/attention.js reads the head's options by
        # each run's checks counted over its seeds (core/lab/findings.py): static/lab_train.js puts a
        # student's run to the same checks and shows them beside these
        "checks": {n: {"verdict": f["verdict"], "checks": f["checks"]} for n, f in index["findings"].items()},
    }


@lru_cache(maxsize=1)
def lab_json() -> str:
    """lab_payload() as JSON text (made once per process: the shipped runs do not change while serving)."""
    return json.dumps(lab_payload(), separators=(",", ":"), ensure_ascii=False)


def token_labels(probe) -> list[str]:
    """Tokens as letters, so repeats are easy to spot on the axes."""
    return [ALPHABET[t] for t in probe]


def has_head(run: dict) -> bool:
    return "W_Q" in run["seeds"][0]["snapshots"][0]


def head_at(run: dict, seed: int, k: int):
    """The shown head at seed record `seed` (an index into the run's seeds), snapshot k, recomputed by the
    core from the shipped X, W_Q, W_K, W_V."""
    return snapshot_head(run["seeds"][seed]["snapshots"][k], run["switches"])


def changed_switches(switches: dict) -> list[str]:
    """The switches a run sets away from the explorer's defaults, named as the notes name them."""
    out = []
    for s in SWITCHES:
        v = switches[s.name]
        if v != s.default:
            if s.kind == "toggle":
                out.append(s.flipped)
            elif s.kind == "choice":
                out.append(s.choice_labels[s.choices.index(v)])
            else:
                out.append(f"{s.flipped} {v:g}")
    return out


def describe(run: dict, index: dict) -> str:
    """The run's claim, its verdict and checks counted over its seeds, what it showed (sentences built from
    its numbers by core/lab/findings.py) and how it was trained."""
    f = index["findings"].get(run["name"])
    sw, sh = run["switches"], run["shape"]
    changes = changed_switches(sw)
    optimiser = {"adam": "Adam", "sgd": "plain SGD"}[run["optimiser"]]
    setup = (
        f"Task: {run['task']}; {sh['layers']} layer{'s' if sh['layers'] > 1 else ''}, vocabulary {sh['V']}, "
        f"{sh['T']} positions, stream width {sh['C']}, head width {sh['d']}; {run['steps']} steps of "
        f"{optimiser} (lr {run['lr']:g}, {run['batch']} sequences a step), at {seeds_of(run)}"
        + (f"; changed: {', '.join(changes)}" if changes else "")
        + (f"; set against the run '{run['compare']}'" if run["compare"] else "")
        + ". The head drawn is layer "
        + str(run["shown_layer"])
        + "."
    )
    parts = [f'<p class="claim"><b>The claim:</b> {html.escape(run["claim"])}</p>']
    if f:
        n = len(f["seeds"])
        checks = "".join(
            f"<li>{html.escape(c['says'])}: at {sum(c['held'])} of {n} seeds"
            + ("" if c["claim"] else " (not the chapter's claim: what else happened)")
            + "</li>"
            for c in f["checks"]
        )
        showed = "".join(f"<li>{html.escape(s)}</li>" for s in f["showed"])
        parts.append(
            f'<p class="verdict"><b>{html.escape(VERDICT_TEXT[f["verdict"]])}</b> Counted over the seeds:</p>'
            f'<ul class="verdicts">{checks}</ul><p>What the runs showed:</p><ul>{showed}</ul>'
        )
    parts.append(f'<p class="setup">{html.escape(setup)}</p>')
    return "".join(parts)


def seed_note(run: dict, index: dict, k: int) -> str:
    """A line for the seed drawn (seed record k): which seed, what it ships, and whether each check held."""
    record, first = run["seeds"][k], run["seeds"][0]
    f = index["findings"].get(run["name"])
    ships = (
        "every snapshot of training"
        if len(record["snapshots"]) > 1
        else f"the trained head only; seed {first['seed']} has {len(first['snapshots'])} snapshots"
    )
    here = (
        " At this seed: "
        + "; ".join(f"{c['name']} {'✓' if c['held'][k] else '✗'}" for c in f["checks"])
        + "."
        if f
        else ""
    )
    drawn = f"<b>Drawn: seed {record['seed']}</b> ({html.escape(ships)})."
    return f'<p class="seed-note">{drawn}{html.escape(here)}</p>'


__all__ = [
    "load_lab",
    "lab_payload",
    "lab_json",
    "describe",
    "seed_note",
    "token_labels",
    "has_head",
    "head_at",
]
