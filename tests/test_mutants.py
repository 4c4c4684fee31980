"""The planted bugs of tests/mutants.py still fit the code (the full run, a separate command, plants each
and requires the fast tests to catch it; see its docstring)."""

from __future__ import annotations

from tests.mutants import FAST, MUTANTS, ROOT, stale


def test_every_planted_bug_still_matches_the_code_exactly_once():
    assert stale() == []


def test_the_last_recorded_run_caught_every_planted_bug():
    """README: the fast tests catch each planted bug (bench/RESULTS-mutants.md, `python -m tests.mutants
    --write`); a bug added since must be run and recorded too."""
    results = (ROOT / "bench" / "RESULTS-mutants.md").read_text()
    assert "not caught" not in results
    for m in MUTANTS:
        assert f"(`{m.name}`)" in results, f"{m.name} was never run: python -m tests.mutants --write"


def test_the_planted_bugs_are_real_changes_and_the_fast_tests_exist():
    assert len({m.name for m in MUTANTS}) == len(MUTANTS) >= 20
    assert all(old != new for m in MUTANTS for _, old, new in m.edits)
    assert all((ROOT / path).exists() for path in FAST)
