"""The lab's data files (static/lab/): runs as compact JSON, matrices as half-precision floats.

Both pages inline these files (the export must stay small), so numbers are rounded before they are
written and matrices travel as base64 of float16: readers (widgets/lab_data.py, static/lab.js) decode
them exactly.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from core.lab.encoding import curve, f16, sig3
from core.lab.findings import findings
from core.lab.runs import RUNS, Run, final_line, train

LAB_DIR = Path(__file__).resolve().parents[2] / "static" / "lab"


def head_is_drawn(run: Run) -> bool:
    """Whether snapshots carry the shown head's matrices (a 16 × 64 W_Q is too big to ship or to read)."""
    return run.shape.d <= 8


def to_json(result: dict) -> dict:
    run = result["run"]
    evals = [
        {k: (sig3([v])[0] if isinstance(v, float) else v) for k, v in e.items() if k != "scores"}
        | {"scores": [{k: round(v, 4) for k, v in s.items()} for s in e["scores"]]}
        for e in result["evals"]
    ]
    snaps = []
    for s in result["snapshots"]:
        # The drawn head's weights are recomputed from its matrices; the other layers' are shipped.
        shipped = [n for n in range(len(s["maps"])) if n != run.shown_layer or not head_is_drawn(run)]
        snap = {"step": s["step"], "maps": {str(n): f16(s["maps"][n]) for n in shipped}}
        if head_is_drawn(run):
            snap |= {k: f16(s[k]) for k in ("X", "W_Q", "W_K", "W_V")}
        snaps.append(snap)
    return {
        "name": run.name,
        "claim": run.claim,
        "task": run.task,
        "shape": asdict(run.shape),
        "switches": asdict(run.switches),
        "seed": result["seed"],
        "steps": result["steps"],
        "lr": run.lr,
        "batch": run.batch,
        "compare": run.compare,
        "shown_layer": run.shown_layer,
        "about": list(run.about),
        "probe": [int(t) for t in result["probe"]],
        "curve": curve(result["losses"]),
        "evals": evals,
        "snapshots": snaps,
    }


def seeds_summary(run: Run, seeds=(0, 1, 2), steps: int | None = None) -> list[dict]:
    """Final numbers of the run over several seeds (no snapshots), for the claims that need them."""
    out = []
    for s in seeds:
        r = train(run, seed=s, steps=steps, record=False)
        e = r["evals"][-1]
        out.append(
            {
                "seed": s,
                "eval_loss": sig3([e["eval_loss"]])[0],
                "scores": [{k: round(v, 4) for k, v in sc.items()} for sc in e["scores"]],
            }
        )
    return out


SEEDED = ("previous-token", "tied-qk")  # the claim compares these two over three seeds


def write_run(
    name: str, seed: int = 0, steps: int | None = None, directory: Path = LAB_DIR
) -> tuple[dict, str]:
    run = RUNS[name]
    result = train(run, seed=seed, steps=steps)
    data = to_json(result)
    if name in SEEDED:
        data["seeds"] = seeds_summary(run, steps=steps)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return data, final_line(result)


def write_index(directory: Path = LAB_DIR) -> dict:
    runs = {
        n: json.loads((directory / f"{n}.json").read_text())
        for n in RUNS
        if (directory / f"{n}.json").exists()
    }
    index = {"runs": [n for n in RUNS if n in runs], "findings": findings(runs)}
    (directory / "index.json").write_text(json.dumps(index, separators=(",", ":"), ensure_ascii=False) + "\n")
    return index
