"""What the training lab shows for (run, snapshot, query), as plain dicts: no Bokeh, no Panel.

The shipped runs (static/lab/*.json, written by `python -m core.train --all`) hold, at ~20 snapshots, the
shown head's input on a probe sequence and its learned W_Q, W_K, W_V; the head is recomputed here with
the core (`core.attend`) and drawn with the main head's view data (`widgets.viewdata`), so the lab's
figures and steps are the explorer's own. static/lab.js does the same in the exported page.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np

from core.attention import attend, causal_mask
from core.trace import trace
from core.train import LAB_DIR, unf16
from widgets.viewdata import checks_html, matrix_cells, row_outline, steps_html, weight_limits

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
# The lab's introduction, the same in the served page and the export.
LAB_INTRO = (
    "<p>Tiny attention-only transformers trained in numpy (<code>python -m core.train</code>) on tasks where "
    "one of the chapter's claims should show. Pick a run, slide through its snapshots to watch the head's "
    "pattern form on a probe sequence, and compare its loss with the full head's. Tokens are shown as "
    "letters.</p>"
)
VERDICT_TEXT = {
    "reproduced": "Reproduced at this size.",
    "partly": "Partly reproduced at this size.",
    "not reproduced": "Not reproduced at this size.",
}


@lru_cache(maxsize=1)
def load_lab() -> dict:
    """Every shipped run and the index (read once per process; the files do not change while serving)."""
    index = json.loads((LAB_DIR / "index.json").read_text())
    runs = {name: json.loads((LAB_DIR / f"{name}.json").read_text()) for name in index["runs"]}
    return {"index": index, "runs": runs}


def token_labels(probe) -> list[str]:
    """Tokens as letters, so repeats are easy to spot on the axes."""
    return [ALPHABET[t] for t in probe]


def has_head(run: dict) -> bool:
    return "W_Q" in run["snapshots"][0]


def head_at(run: dict, k: int):
    """The shown head at snapshot k, recomputed by the core from the shipped X, W_Q, W_K, W_V."""
    s, sw = run["snapshots"][k], run["switches"]
    return attend(
        unf16(s["X"]),
        unf16(s["W_Q"]),
        unf16(s["W_K"]),
        unf16(s["W_V"]),
        scaling=sw["scaling"],
        causal=sw["causal"],
        tied_qk=sw["tied_qk"],
        normaliser=sw["normaliser"],
    )


def lab_view_data(run: dict, k: int, i: int) -> dict:
    """Cells, limits, outline and text for the lab's figures at snapshot k, query i."""
    labels = token_labels(run["probe"])
    T = len(labels)
    snap = run["snapshots"][k]
    out = {"labels": labels, "step": snap["step"], "outline": row_outline(i, T)}
    if has_head(run):
        head = head_at(run, k)
        # The main head's own cells and steps (widgets.viewdata), only those the lab shows: a move's
        # Python is half what view_data's every heatmap and the blend would cost.
        t = trace(head, i, labels)
        out["weights"] = matrix_cells(head.weights, labels, labels, head.future, hidden_text="0")
        out["weights_limits"] = list(weight_limits(head.weights))
        out["steps"] = steps_html(t) + checks_html(t, labels)
        stream = [str(c) for c in range(head.C)]
        dims = [str(c) for c in range(head.d)]
        W = {"W_Q": head.W_Q, "W_K": head.W_K}
        lim = max(1.0, max(float(np.abs(m).max()) for m in W.values()))
        out["W"] = {n: matrix_cells(m, stream, dims) for n, m in W.items()}
        out["W_limits"] = [-lim, lim]
        out["W_shape"] = [head.C, head.d]
    else:
        A = unf16(snap["maps"][str(run["shown_layer"])])
        future = causal_mask(T) if run["switches"]["causal"] else np.zeros((T, T), dtype=bool)
        out["weights"] = matrix_cells(A, labels, labels, future, hidden_text="0")
        out["weights_limits"] = list(weight_limits(A))
        shape = run["shape"]
        out["steps"] = (
            f"<p>This head is {shape['d']} wide: its W_Q and W_K ({shape['C']} × {shape['d']}) are not "
            "shipped "
            f"(too large to read or to inline), only its weights on the probe. Row {i} ({labels[i]}): "
            + ", ".join(f"{w:.2f}" for w in A[i][: i + 1 if run["switches"]["causal"] else T])
            + ".</p>"
        )
        out["W"], out["W_shape"], out["W_limits"] = None, None, [-1.0, 1.0]
    if run["shape"]["layers"] > 1:
        A0 = unf16(snap["maps"]["0"])
        future = causal_mask(T) if run["switches"]["causal"] else np.zeros((T, T), dtype=bool)
        out["layer0"] = matrix_cells(A0, labels, labels, future, hidden_text="0")
    else:
        out["layer0"] = None
    return out


def curves(run: dict, runs: dict) -> dict:
    """Loss lines for the curves figure: this run, the full head it is set against, ln V."""

    def lines(r, prefix):
        return {
            f"{prefix}train": {"x": r["curve"]["step"], "y": r["curve"]["loss"]},
            f"{prefix}eval": {
                "x": [e["step"] for e in r["evals"]],
                "y": [e["eval_loss"] for e in r["evals"]],
            },
        }

    out = lines(run, "")
    other = runs.get(run["compare"])
    out |= (
        lines(other, "full ")
        if other
        else {"full train": {"x": [], "y": []}, "full eval": {"x": [], "y": []}}
    )
    honest = [e.get("honest_loss") for e in run["evals"]]
    out["honest"] = (
        {"x": [e["step"] for e in run["evals"]], "y": honest} if honest[0] is not None else {"x": [], "y": []}
    )
    lnV = math.log(run["shape"]["V"])
    out["uniform"] = {"x": [0, run["steps"]], "y": [lnV, lnV]}
    return out


def describe(run: dict, index: dict) -> str:
    """The run's claim, its setup and what it showed (sentences built from its numbers by core.train)."""
    f = index["findings"].get(run["name"], {"verdict": "", "showed": []})
    sw, sh = run["switches"], run["shape"]
    changes = [
        name
        for name, on in (
            ("no ÷√d", not sw["scaling"]),
            ("no mask", not sw["causal"]),
            ("W_K = W_Q", sw["tied_qk"]),
            (sw["normaliser"], sw["normaliser"] != "softmax"),
        )
        if on
    ]
    setup = (
        f"Task: {run['task']}; {sh['layers']} layer{'s' if sh['layers'] > 1 else ''}, vocabulary {sh['V']}, "
        f"{sh['T']} positions, stream width {sh['C']}, head width {sh['d']}; {run['steps']} steps of Adam "
        f"(lr {run['lr']:g}, {run['batch']} sequences a step), seed {run['seed']}"
        + (f"; changed: {', '.join(changes)}" if changes else "")
        + (f"; set against the run '{run['compare']}'" if run["compare"] else "")
        + ". The head drawn is layer "
        + str(run["shown_layer"])
        + "."
    )
    import html

    showed = "".join(f"<li>{html.escape(s)}</li>" for s in f["showed"])
    return (
        f'<p class="claim"><b>The claim:</b> {html.escape(run["claim"])}</p>'
        f'<p class="verdict"><b>{html.escape(VERDICT_TEXT.get(f["verdict"], ""))}</b> What this run '
        "showed:</p>"
        f'<ul>{showed}</ul><p class="setup">{html.escape(setup)}</p>'
    )


__all__ = [
    "load_lab",
    "lab_view_data",
    "curves",
    "describe",
    "token_labels",
    "has_head",
    "head_at",
    "steps_html",
]
