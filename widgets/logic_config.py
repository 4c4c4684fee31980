"""What static/explorer.js needs to run the head's logic in the browser, as one JSON-ready dict.

The same facts the Python side reads from core.options (the switches table), core.presets and
widgets.state (limits), so the two runtimes cannot drift apart: the export writes this into the page,
and tests/test_actions.py hands the same dict to Node.
"""

from __future__ import annotations

from core.options import table_json
from core.presets import CUSTOM, PRESETS, Preset
from widgets import url_state
from widgets.state import EDIT_MAX_TOKENS, MAX_LABEL, MAX_TOKENS, MAX_WIDTH, HeadState


def preset_json(p: Preset) -> dict:
    return {
        "name": p.name,
        "title": p.title,
        "tokens": list(p.tokens),
        "X": [list(r) for r in p.X],
        "W_Q": [list(r) for r in p.W_Q],
        "W_K": [list(r) for r in p.W_K],
        "W_V": [list(r) for r in p.W_V],
        "query": p.query,
        "options": p.options.as_dict(),
    }


def logic_config(start: HeadState | None = None, presets: dict[str, Preset] | None = None) -> dict:
    """Switches, limits, presets and the starting state (the chapter's unless given)."""
    start = start or HeadState()
    presets = PRESETS if presets is None else presets
    return {
        "switches": table_json(),
        "limits": {
            "max_tokens": MAX_TOKENS,
            "edit_max_tokens": EDIT_MAX_TOKENS,
            "max_width": MAX_WIDTH,
            "max_label": MAX_LABEL,
            "max_param": url_state.MAX_PARAM,
            "x_step": url_state.X_STEP,
        },
        "presets": {name: preset_json(p) for name, p in presets.items()},
        "custom": CUSTOM,
        "start": {k: v for k, v in start.as_data().items() if k != "message"},
    }
