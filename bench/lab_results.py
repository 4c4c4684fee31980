"""The claims part of bench/RESULTS-lab.md, written from the shipped runs (static/lab/) and nothing else.

Each run's checks (core/lab/findings.py) seed by seed, the counts, what the runs showed (the sentences the
lab prints) and the data's size. tests/test_lab_findings.py requires the file's block to be what this
writes, so the results cannot drift from the files they describe.

    python bench/lab_results.py          # rewrite the block in bench/RESULTS-lab.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.lab.store import LAB_DIR, read_runs  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS-lab.md"
BEGIN = "<!-- written by bench/lab_results.py from static/lab/: do not edit by hand -->"
END = "<!-- end of bench/lab_results.py -->"


def block(directory: Path = LAB_DIR) -> str:
    runs = read_runs(directory)
    index = json.loads((directory / "index.json").read_text())
    seeds = [r["seed"] for r in next(iter(runs.values()))["seeds"]]
    lines = [
        BEGIN,
        "",
        f"## The claims, counted over seeds {', '.join(map(str, seeds))} (`python -m core.train --all`)",
        "",
        "Every shipped run is trained at each seed (its starting weights and its data); the lab's"
        " verdicts count the seeds where each check held. ✓ held, ✗ did not; a check marked \"also\" tests"
        " what else happened, not the chapter's claim.",
        "",
        "| run | check | " + " | ".join(f"seed {s}" for s in seeds) + " | count | verdict |",
        "| --- | --- | " + " | ".join("---" for _ in seeds) + " | --- | --- |",
    ]
    for name, found in index["findings"].items():
        for k, check in enumerate(found["checks"]):
            marks = " | ".join("✓" if h else "✗" for h in check["held"])
            says = check["says"] if check["claim"] else f"also: {check['says']}"
            verdict = found["verdict"] if k == 0 else ""
            count = f"{sum(check['held'])} of {len(seeds)}"
            lines.append(f"| {name if k == 0 else ''} | {says} | {marks} | {count} | {verdict} |")
    references = [n for n in runs if n not in index["findings"]]
    lines += [
        "",
        f"References, with no claim of their own: {', '.join(references)}.",
        "",
        "### What the runs showed",
        "",
    ]
    for name, found in index["findings"].items():
        lines.append(f"* **{name}** ({runs[name]['steps']} steps, {runs[name]['optimiser']}):")
        lines += [f"  * {s}" for s in found["showed"]]
    files = sorted(directory.glob("*.json"))
    total = sum(f.stat().st_size for f in files)
    snapshots = sum(len(r["snapshots"]) for run in runs.values() for r in run["seeds"])
    lines += [
        "",
        "### Shipped size",
        "",
        f"`static/lab/`: {len(runs)} runs at {len(seeds)} seeds and the index, {total:,} bytes; {snapshots} "
        f"snapshots in all (every one for seed {seeds[0]}, the trained head alone for the others).",
        "",
        END,
    ]
    return "\n".join(lines)


def rewrite(results: Path = RESULTS) -> None:
    text = results.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    results.write_text(head + block() + tail)


def written(results: Path = RESULTS) -> str:
    """The block as it stands in the results file."""
    text = results.read_text()
    return BEGIN + text.split(BEGIN, 1)[1].split(END, 1)[0] + END


if __name__ == "__main__":
    rewrite()
