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
from core.lab.runs import DEFAULT_SEED, RUNS, SEEDS, Run, final_line, train

LAB_DIR = Path(__file__).resolve().parents[2] / "static" / "lab"


def head_is_drawn(run: Run) -> bool:
    """Whether snapshots carry the shown head's matrices (a 16 × 64 W_Q is too big to ship or to read)."""
    return run.shape.d <= 8


def numbers(evaluation: dict) -> dict:
    """An evaluation (core.lab.runs.evaluate) with its numbers rounded to 3 significant digits."""
    return {
        k: [numbers(x) for x in v] if isinstance(v, list) else sig3([v])[0] for k, v in evaluation.items()
    }


def seed_record(result: dict, every_snapshot: bool) -> dict:
    """One seed of a run as the lab ships it: the probe, the training curve, the held-out loss at each
    evaluation, the first and last evaluations in full, and snapshots of the shown head on the probe (every
    one, or only the trained head's, to keep the export small)."""
    run = result["run"]
    snaps = []
    for s in result["snapshots"] if every_snapshot else result["snapshots"][-1:]:
        # The drawn head's weights are recomputed from its matrices; the other layers' are shipped.
        shipped = [n for n in range(len(s["maps"])) if n != run.shown_layer or not head_is_drawn(run)]
        snap = {"step": s["step"], "maps": {str(n): f16(s["maps"][n]) for n in shipped}}
        if head_is_drawn(run):
            snap |= {k: f16(s[k]) for k in ("X", "W_Q", "W_K", "W_V")}
        snaps.append(snap)
    evals = result["evals"]
    held_out = {"step": [e["step"] for e in evals], "loss": sig3([e["eval_loss"] for e in evals])}
    if run.honest:
        held_out["honest"] = sig3([e["honest_loss"] for e in evals])
    return {
        "seed": result["seed"],
        "probe": [int(t) for t in result["probe"]],
        "curve": curve(result["losses"]),
        "held_out": held_out,
        "start": numbers({k: v for k, v in evals[0].items() if k != "step"}),
        "end": numbers({k: v for k, v in evals[-1].items() if k != "step"}),
        "snapshots": snaps,
    }


def run_json(run: Run, records: list[dict], steps: int) -> dict:
    """A run's data file: what it is (its model, switches and training) and one record per seed."""
    return {
        "name": run.name,
        "claim": run.claim,
        "task": run.task,
        "shape": asdict(run.shape),
        "switches": asdict(run.switches),
        "steps": steps,
        "optimiser": run.optimiser,
        "lr": run.lr,
        "batch": run.batch,
        "compare": run.compare,
        "shown_layer": run.shown_layer,
        "seeds": records,
    }


def write_run(name: str, seeds=SEEDS, steps: int | None = None, directory: Path = LAB_DIR, echo=None) -> dict:
    """Train `name` at every seed and write its data file; `echo` (e.g. print) gets each seed's last line."""
    run = RUNS[name]
    records = []
    for seed in seeds:
        result = train(run, seed=seed, steps=steps)
        records.append(seed_record(result, every_snapshot=seed == DEFAULT_SEED))
        if echo:
            echo(f"seed {seed}: " + final_line(result))
    data = run_json(run, records, result["steps"])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(
        json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n"
    )
    return data


def read_runs(directory: Path = LAB_DIR) -> dict:
    """Every run's data file in `directory`, by name, in the order RUNS declares them."""
    return {
        n: json.loads((directory / f"{n}.json").read_text())
        for n in RUNS
        if (directory / f"{n}.json").exists()
    }


def write_index(directory: Path = LAB_DIR) -> dict:
    """The lab's index: the runs in order and what each showed (core/lab/findings.py)."""
    runs = read_runs(directory)
    index = {"runs": list(runs), "findings": findings(runs)}
    (directory / "index.json").write_text(json.dumps(index, separators=(",", ":"), ensure_ascii=False) + "\n")
    return index
