"""What static/explorer.js needs to run the head's logic in the browser, as one JSON-ready dict.

The same facts the Python side reads from core.options (the switches table), core.presets and
widgets.state (limits), so the two runtimes cannot drift apart: the export writes this into the page,
and tests/test_actions.py hands the same dict to Node.
"""

from __future__ import annotations

import json

from core.lessons import ESTIMATE_SLIDER, QUESTIONS
from core.options import table_json
from core.presets import CUSTOM, PRESETS, Preset
from widgets import url_state
from widgets.lesson_state import LESSON_PARAMS
from widgets.state import EDIT_MAX_TOKENS, MAX_LABEL, MAX_TOKENS, MAX_WIDTH, HeadState
from widgets.viewdata import preset_note


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


def logic_config(
    start: HeadState | None = None, presets: dict[str, Preset] | None = None, notes: bool = False
) -> dict:
    """Switches, limits, presets, the lesson's questions and the starting state (the chapter's unless
    given); with `notes`, every preset's note as HTML (the export's note panel shows them, and the lesson's
    answers quote them from there)."""
    start = start or HeadState()
    presets = PRESETS if presets is None else presets
    config = {
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
        "lessons": lessons_json(presets, with_notes=not notes),
        "start": {k: v for k, v in start.as_data().items() if k != "message"},
    }
    if notes:
        config["notes"] = {name: preset_note(name) for name in [*PRESETS, ""]}
    return config


def lessons_json(presets: dict[str, Preset], with_notes: bool = True) -> dict:
    """The bank of questions (core.lessons.QUESTIONS) for static/lessons.js: each question's two heads, by
    name when they are one of `presets` as it stands (the config carries those), else as setups of their own,
    each once; the notes shown with an answer (unless the config carries every note); the preset names (a
    question's head that is one loads under its name); the lesson's state keys, link keys and slider."""
    setups: dict[str, dict] = {}
    ids: dict[str, str] = {}

    def ref(p: Preset) -> dict:
        data = preset_json(p)
        if p.name in presets and preset_json(presets[p.name]) == data:
            return {"preset": p.name}
        text = json.dumps(data, sort_keys=True)
        ids.setdefault(text, str(len(ids)))
        setups[ids[text]] = data
        return {"setup": ids[text]}

    questions = [
        {
            "name": q.name,
            "title": q.title,
            "kind": q.kind,
            "before": ref(q.before),
            "after": ref(q.after),
            "key": q.key,
            "context": q.context,
        }
        for q in QUESTIONS.values()
    ]
    answers = {q.after.name for q in QUESTIONS.values()} & set(PRESETS)
    return {
        "questions": questions,
        "setups": setups,
        **({"notes": {name: preset_note(name) for name in sorted(answers)}} if with_notes else {}),
        "presets": list(PRESETS),
        "params": list(LESSON_PARAMS),
        "link": url_state.LESSON_KEYS,
        "estimate": list(ESTIMATE_SLIDER),
    }
