"""Bench-only: the served explorer on 64 tokens (seeded random X, C = 3, the chapter's W, d = 2).

Serve with `panel serve bench/app_t64.py` (the same page as app/main.py); the query is the last token, t63,
and its first slider is named x-63-0.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import panel as pn  # noqa: E402

from app.served_page import serve_page  # noqa: E402
from app.serving import tune_server  # noqa: E402
from core.presets import PRESETS  # noqa: E402
from widgets.explorer import HeadExplorer  # noqa: E402
from widgets.state import HeadState  # noqa: E402

T = 64


def state_t64(seed: int = 3) -> HeadState:
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-1.0, 1.0, size=(T, 3)), 2)
    p = PRESETS["chapter"]
    return HeadState(
        tokens=[f"t{k}" for k in range(T)], X=X, W_Q=np.array(p.W_Q), W_K=np.array(p.W_K),
        W_V=np.array(p.W_V), query=T - 1, preset="",
    )


tune_server()  # as app/main.py does
pn.extension()
serve_page(HeadExplorer(state=state_t64()), title="One attention head, 64 tokens")  # the app's own page
