"""The floor with as many figures as the explorer repaints on a move: one slider and five 4 × 4 heatmaps,
all five rewritten on every move (bench/floor_app.py's page otherwise). Served by bench/bench_latency.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.floor_app import serve_floor  # noqa: E402

serve_floor(figures=5)
