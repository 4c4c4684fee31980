"""A test of the tests: plant known bugs, one at a time, and require the fast tests to catch each.

    .venv/bin/python -m tests.mutants               # every planted bug (~15 minutes on a busy 2-core machine)
    .venv/bin/python -m tests.mutants --list        # their names
    .venv/bin/python -m tests.mutants scaled-limit-doubled csv-header-js   # some of them
    .venv/bin/python -m tests.mutants --write       # and record the run in bench/RESULTS-mutants.md

Parity between the Python and the JavaScript runtimes cannot see a bug written the same way in both, so
most bugs below are planted in both (as a careless change to both would be); a few only in one runtime,
where only one holds the code (the page's downloads, its formatter). Each is a text replacement that must
match exactly once; the working tree is copied once (tracked and new files, with links to the shared .venv
and node_modules), each bug is written into the copy, FAST is run there with `-x`, and the file is put back.
A bug the tests let through, or one whose text no longer matches the code, fails the run (status 1).

Not part of README's test command (each bug costs a run of the fast tests, Python, Node and Bokeh started
again: 12 to 90 s in bench/RESULTS-mutants.md); tests/test_mutants.py checks, within the suite, that every
replacement still matches the code and that the recorded run caught every bug.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The fast tests (no browser, no server), oracles and parity first: the first failure ends a run.
FAST = (
    "tests/test_view_layout.py",
    "tests/test_downloads.py",
    "tests/test_options.py",
    "tests/test_attention.py",
    "tests/test_trace.py",
    "tests/test_presets.py",
    "tests/test_parity.py",
    "tests/test_claims.py",
    "tests/test_cli.py",
    "tests/test_state.py",
    "tests/test_a11y.py",
    "tests/test_lab_parity.py",
    "tests/test_actions.py",
)
TIMEOUT = 600  # seconds for one run of FAST


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str
    edits: tuple[tuple[str, str, str], ...]  # (file, text in the code, the planted text)


VIEWDATA, ATTENTION_JS, EXPLORER_JS = "widgets/viewdata.py", "static/attention.js", "static/explorer.js"
FIGURE_TEXT = "widgets/figure_text.py"
LESSONS = "core/lessons.py"  # (the hull: the blend's, and the questions' "inside the values' hull")

MUTANTS = (
    # --- issue 30's three, which got through before its oracles and the Node downloads test ---
    Mutant(
        "scaled-limit-doubled",
        "the scaled-scores heatmap's colour limit doubled, in both runtimes",
        (
            (VIEWDATA, 'limits["scaled"] = _symmetric(score_limit(head.masked))',
             'limits["scaled"] = _symmetric(2 * score_limit(head.masked))'),
            (ATTENTION_JS, "scaled: symmetric(scoreLimit(head.masked)),",
             "scaled: symmetric(2 * scoreLimit(head.masked)),"),
        ),
    ),
    Mutant(
        "blend-dims-swapped",
        "the blend plot's value points, hull and lines drawn with the two value coordinates swapped (the "
        "output point right), in both runtimes",
        (
            (VIEWDATA, "    vx = head.V[:, a]\n    vy = head.V[:, b] if b is not None else np.zeros(head.T)",
             "    vx = head.V[:, b] if b is not None else head.V[:, a]\n"
             "    vy = head.V[:, a] if b is not None else np.zeros(head.T)"),
            (ATTENTION_JS,
             "const vx = head.V.map((row) => row[a]);\n"
             "    const vy = head.V.map((row) => (b === null ? 0 : row[b]));",
             "const vx = head.V.map((row) => (b === null ? row[a] : row[b]));\n"
             "    const vy = head.V.map((row) => (b === null ? 0 : row[a]));"),
        ),
    ),
    Mutant(
        "csv-header-js",
        "the CSV download's header broken in JavaScript only",
        ((EXPLORER_JS, "const lines = ['matrix,row,column,value'];",
          "const lines = ['matrix,row,col,value'];"),),
    ),
    Mutant(
        "csv-first-label-js",
        "the CSV download's first token's label broken in JavaScript only",
        (
            (EXPLORER_JS, "lines.push([t.name, t.rows[i], t.cols[j], floatRepr(v)]",
             "lines.push([t.name, i === 0 ? t.rows[i].toLowerCase() : t.rows[i], t.cols[j], floatRepr(v)]"),
        ),
    ),
    # --- colour ranges and the blend plot, in both runtimes ---
    Mutant(
        "qkv-limit-wide",
        "the Q, K, V heatmaps' shared colour limit half as wide again",
        (
            (VIEWDATA, "qkv_limit = _symmetric(score_limit(np.concatenate([head.Q, head.K, head.V])))",
             "qkv_limit = _symmetric(1.5 * score_limit(np.concatenate([head.Q, head.K, head.V])))"),
            (ATTENTION_JS, "const qkv = symmetric(scoreLimit(head.Q.concat(head.K, head.V)));",
             "const qkv = symmetric(1.5 * scoreLimit(head.Q.concat(head.K, head.V)));"),
        ),
    ),
    Mutant(
        "weights-limit-not-widened",
        "the weights' colour range kept at 0..1 when raw scores are the weights",
        (
            (VIEWDATA, "return float(min(0.0, W.min())), float(max(1.0, W.max()))", "return 0.0, 1.0"),
            (ATTENTION_JS, "weights: [Math.min(0, minOf(W)), Math.max(1, maxOf(W))],", "weights: [0, 1],"),
        ),
    ),
    Mutant(
        "outline-one-row-off",
        "the frame around the query's row drawn one row lower",
        (
            (VIEWDATA, '"y": [float(i)], "width"', '"y": [float(i + 1)], "width"'),
            (ATTENTION_JS, "data.outline = { x: [(head.T - 1) / 2], y: [i],",
             "data.outline = { x: [(head.T - 1) / 2], y: [i + 1],"),
        ),
    ),
    Mutant(
        "cells-transposed",
        "each heatmap cell placed at (row, column) instead of (column, row)",
        (
            (VIEWDATA, "y, x = np.divmod(np.arange(rows * cols), cols)",
             "x, y = np.divmod(np.arange(rows * cols), cols)"),
            (ATTENTION_JS, "cells.x.push(j);\n        cells.y.push(i);",
             "cells.x.push(i);\n        cells.y.push(j);"),
        ),
    ),
    Mutant(
        "hull-keeps-collinear",
        "the hull keeps points in the middle of its edges",
        (
            (LESSONS, "cross(lower[-2], lower[-1], p) <= 0", "cross(lower[-2], lower[-1], p) < 0"),
            (LESSONS, "cross(upper[-2], upper[-1], p) <= 0", "cross(upper[-2], upper[-1], p) < 0"),
            (ATTENTION_JS, "cross(out[out.length - 2], out[out.length - 1], p) <= 0",
             "cross(out[out.length - 2], out[out.length - 1], p) < 0"),
        ),
    ),
    Mutant(
        "labels-leave-the-frame",
        "the blend plot's names may be placed partly outside the plot's frame",
        (
            (FIGURE_TEXT, "0 <= box[0] and box[2] <= BLEND_FRAME and 0 <= box[1] and box[3] <= BLEND_FRAME",
             "True"),
            (ATTENTION_JS, "0 <= r[0] && r[2] <= BLEND_FRAME && 0 <= r[1] && r[3] <= BLEND_FRAME", "true"),
        ),
    ),
    Mutant(
        "fewer-names-past-12",
        "past 12 tokens the blend plot names two of the largest weights' values, not three",
        (
            (FIGURE_TEXT, "BLEND_NAMED_TOP = 12, 3", "BLEND_NAMED_TOP = 12, 2"),
            (ATTENTION_JS, "const BLEND_NAMED_TOP = 3;", "const BLEND_NAMED_TOP = 2;"),
        ),
    ),
    # --- the head's arithmetic, in both runtimes ---
    Mutant(
        "divide-by-d",
        "the scores divided by d instead of √d",
        (
            ("core/attention.py", "return S / math.sqrt(d)", "return S / d"),
            (ATTENTION_JS, "const root = Math.sqrt(d);", "const root = d;"),
        ),
    ),
    Mutant(
        "mask-hides-the-diagonal",
        "the causal mask hiding each token from itself too",
        (
            ("core/attention.py", "np.triu(np.ones((T, T), dtype=bool), k=1)",
             "np.triu(np.ones((T, T), dtype=bool), k=0)"),
            (ATTENTION_JS, "(o.causal && j > i ? -Infinity : v)", "(o.causal && j >= i ? -Infinity : v)"),
        ),
    ),
    Mutant(
        "softmax-unshifted",
        "the softmax exponentiating the scores without subtracting the row's largest",
        (
            ("core/attention.py", "shifted = np.where(finite, S - row_max, -np.inf)",
             "shifted = np.where(finite, S, -np.inf)"),
            (ATTENTION_JS, "const e = s.map((v) => (Number.isFinite(v) ? exp(v - top) : 0));",
             "const e = s.map((v) => (Number.isFinite(v) ? exp(v) : 0));"),
        ),
    ),
    Mutant(
        "top1-last-of-ties",
        "top-1 giving a tie to the later key",
        (
            ("core/attention.py", "W[np.arange(S.shape[0]), np.argmax(S, axis=-1)] = 1.0",
             "W[np.arange(S.shape[0]), S.shape[-1] - 1 - np.argmax(S[:, ::-1], axis=-1)] = 1.0"),
            (ATTENTION_JS, "const j = argmax(s);\n      return s.map((_, k) => (k === j ? 1 : 0));",
             "const j = s.length - 1 - argmax(s.slice().reverse());\n"
             "      return s.map((_, k) => (k === j ? 1 : 0));"),
        ),
    ),
    Mutant(
        "tau-overflow-unchecked",
        "scores that overflow once divided by τ let through (issue 27)",
        (
            ("core/attention.py", "if not np.isfinite(scaled).all():", "if False:"),
            (ATTENTION_JS, "if (!allFinite(scaled)) {", "if (false) {"),
        ),
    ),
    Mutant(
        "rounded-sum-note-dropped",
        "the row check no longer saying why the rounded weights on screen may not add to 1",
        (
            (VIEWDATA, "if sums_to_one and c.shown_hundredths != 100:", "if False:"),
            (ATTENTION_JS, "if (sumsToOne && c.shown_hundredths !== 100) {", "if (false) {"),
        ),
    ),
    # --- one runtime only, where only one holds the code ---
    Mutant(
        "ties-rounded-up-js",
        "the page's formatter rounding exact ties up, as JavaScript's toFixed does (issue 27)",
        (("static/pyformat.js", "if (!comma && a < 1e21 && !Number.isInteger(a * 2 ** (places + 1))) {",
          "if (!comma && a < 1e21) {"),),
    ),
    Mutant(
        "tau-limits-ignored-js",
        "the JavaScript port accepting any τ above 0, not the table's 0.05 to 5 (issue 27)",
        ((ATTENTION_JS, "if (!(s.low <= x && x <= s.high)) {", "if (!(x > 0)) {"),),
    ),
    Mutant(
        "apostrophe-unescaped-js",
        "the page's escaper leaving apostrophes as they are",
        (("static/pyformat.js", ".replace(/'/g, '&#x27;');", ";"),),
    ),
    Mutant(
        "json-indent-js",
        "the page's JSON download indented by two spaces a level, not one",
        ((EXPLORER_JS, "const pad = (n) => '\\n' + ' '.repeat(n);",
          "const pad = (n) => '\\n' + ' '.repeat(2 * n);"),),
    ),
    Mutant(
        "panel-drops-a-switch",
        'the "What each switch shows" panel leaving out the last switch',
        (("widgets/controls.py", "for s in SWITCHES\n    )\n    return (",
          "for s in SWITCHES[:-1]\n    )\n    return ("),),
    ),
)


def text_count(root: Path, path: str, text: str) -> int:
    return (root / path).read_text().count(text)


def stale(root: Path = ROOT) -> list[str]:
    """The replacements whose text no longer occurs exactly once in its file (the code moved on)."""
    return [
        f"{m.name}: {path} holds its text {n} times"
        for m in MUTANTS
        for path, old, _ in m.edits
        if (n := text_count(root, path, old)) != 1
    ]


def copy_tree(to: Path) -> None:
    """The working tree's tracked and new files, and links to the shared installs."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    for link in (".venv", "tests/node/node_modules"):
        if (ROOT / link).exists():
            (to / link).parent.mkdir(parents=True, exist_ok=True)
            (to / link).symlink_to((ROOT / link).resolve())


def run_fast(root: Path) -> tuple[bool, str, float]:
    """(passed, the first failure's name, seconds) for FAST run in `root`."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # a planted file and its pyc may share a second
    python = str(root / ".venv" / "bin" / "python")
    command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--hypothesis-seed=0", *FAST]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"(no answer in {TIMEOUT} s)", time.monotonic() - start
    seconds = time.monotonic() - start
    first = re.search(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, re.MULTILINE)
    return proc.returncode == 0, first.group(1) if first else proc.stdout[-300:], seconds


def plant(root: Path, mutant: Mutant) -> dict[str, str]:
    """Write the mutant's edits into the copy; the files as they were, to put back."""
    originals: dict[str, str] = {}
    for path, old, new in mutant.edits:
        current = (root / path).read_text()
        originals.setdefault(path, current)
        (root / path).write_text(current.replace(old, new))
    return originals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Plant known bugs one by one; the fast tests catch each.")
    parser.add_argument("names", nargs="*", help="mutants to plant (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without a planted bug")
    parser.add_argument("--write", action="store_true", help="record the run in bench/RESULTS-mutants.md")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:28} {m.what}")
        return 0
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"no mutant called {', '.join(sorted(unknown))}")
    problems = stale()
    if problems:
        print("\n".join(problems))
        return 1
    rows, survived, baseline = [], [], None
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        root = Path(tmp)
        copy_tree(root)
        if not args.no_baseline:
            passed, first, seconds = run_fast(root)
            verdict = "passes" if passed else f"FAILS: {first}"
            print(f"{'(no bug planted)':28} {verdict}  {seconds:.0f} s", flush=True)
            if not passed:
                return 1
            baseline = seconds
        for m in chosen:
            originals = plant(root, m)
            try:
                passed, first, seconds = run_fast(root)
            finally:
                for path, text in originals.items():
                    (root / path).write_text(text)
            verdict = "SURVIVED" if passed else f"caught by {first}"
            print(f"{m.name:28} {verdict}  {seconds:.0f} s", flush=True)
            rows.append((m, passed, first, seconds))
            if passed:
                survived.append(m.name)
    if args.write:
        write_results(rows, load, os.getloadavg(), baseline)
    caught = f"{len(rows) - len(survived)} of {len(rows)} planted bugs caught"
    print(caught + (f"; survived: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


def write_results(rows, load_before, load_after, baseline: float | None) -> None:
    lines = [
        "# Planted bugs: does the fast suite catch each? (`python -m tests.mutants --write`)",
        "",
        f"Run {date.today().isoformat()} on the project's 2-core machine; load average "
        f"{load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end. Each bug is planted alone in a "
        "copy of the tree and the fast tests (tests/mutants.py FAST, in that order, `-x`) are run; the time "
        "is that run's, to the first failure"
        + (f"; with no bug planted they all pass, in {baseline:.0f} s." if baseline is not None else "."),
        "",
        "| bug | planted in | caught by | seconds |",
        "| --- | --- | --- | --- |",
    ]
    for m, passed, first, seconds in rows:
        where = ", ".join(sorted({path for path, _, _ in m.edits}))
        lines.append(f"| {m.what} (`{m.name}`) | {where} | {'**not caught**' if passed else f'`{first}`'} | "
                     f"{seconds:.0f} |")
    (ROOT / "bench" / "RESULTS-mutants.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
