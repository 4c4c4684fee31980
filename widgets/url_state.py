"""The explorer's settings as URL query parameters, and back.

A teacher sets a case up, copies the link, and every student who opens it
sees the same head.  Format (all optional; anything missing takes the
preset's value):

    preset=chapter            a preset to start from (core.presets.PRESETS)
    tokens=The,cat,sat,it     labels, comma-separated (each percent-encoded)
    X=1,0,0;0,1,0;...         rows separated by ';', entries by ','
    WQ=… WK=… WV=…            the weight matrices, same form
    query=it                  the query token, by label or index
    scale=1 mask=1 tied=0     the toggles (1/0, true/false, on/off)
    norm=softmax              softmax | raw | top1
    xscale=1                  the X multiplier
    temp=1                    the softmax temperature τ
    (the switches' keys come from core.options.SWITCHES)
    dims=0,1                  the value coordinates in the blend plot
    walk=2                    the walk through the six steps, open at this step (1 to 6)
    exercise=no-mask          a question of core.lessons.QUESTIONS, asked: the head before its change,
                              the answer hidden until a prediction (preset=no-mask opens the answer)

A malformed parameter is reported and left at its default; it never breaks
the page.  Pure functions, no Panel: the explorer does the reading and writing.
"""

from __future__ import annotations

import math
import re
from urllib.parse import quote, unquote

import numpy as np

from core.lessons import QUESTIONS, STEPS
from core.options import SWITCHES
from core.presets import CUSTOM, PRESETS

MATRICES = {"X": "X", "WQ": "W_Q", "WK": "W_K", "WV": "W_V"}
TRUE, FALSE = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
X_STEP = 0.05  # the token sliders' step (widgets/controls.py)
MAX_PARAM = 4000  # characters; far more than 16 tokens × 6 numbers need
# The lesson's keys (static/explorer.js gets them from widgets/logic_config.py): the walk's step on show,
# and the question asked, while its answer is hidden.
LESSON_KEYS = {"walk": "walk", "question": "exercise"}


# How far a value may lie from the grid of its slider's step, in steps, and still be that grid point: a slider
# that adds steps lands a few float roundings off them (0.25 + 0.2 = 0.45000000000000001 + 2e-16).
STEP_NOISE = 1e-6


def number(x: float, step: float | None = None) -> str:
    """Shortest text that reads back as the same float (repr), without a trailing '.0'. Given a slider's
    `step`, a value within float noise of the step's grid is written as that grid point: 0.45, not
    0.4500000000000002 (static/explorer.js numberAtStep writes the same)."""
    x = float(x)
    if step:
        snapped = round(x, decimals(step))
        if abs(snapped - x) <= STEP_NOISE * step:
            x = snapped + 0.0  # (no "-0")
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def decimals(step: float) -> int:
    """The decimal places of a step as written: 0.05 → 2, 1 → 0."""
    text = repr(float(step))
    return 0 if text.endswith(".0") or "e" in text else len(text.split(".")[1])


def encode_matrix(M, step: float | None = None) -> str:
    return ";".join(",".join(number(v, step) for v in row) for row in np.asarray(M, dtype=float))


def decode_matrix(text: str) -> np.ndarray:
    rows = [[_checked_float(v) for v in row.split(",")] for row in text.split(";")]
    if len({len(r) for r in rows}) != 1:
        raise ValueError("rows of different lengths")
    M = np.array(rows, dtype=float)
    if not np.isfinite(M).all():
        raise ValueError("not every entry is a finite number")
    return M


def _checked_float(text: str) -> float:
    x = _float(text)
    if x is None:
        raise ValueError(f"not a finite number: {text!r}")
    return x


def encode(state) -> dict[str, str]:
    """Every setting of a HeadState (or anything with the same attributes) as query parameters."""
    params = {
        "preset": state.preset or CUSTOM,
        "tokens": ",".join(quote(t, safe="") for t in state.tokens),
        "query": state.tokens[state.query],
    }
    for s in SWITCHES:
        v = getattr(state, s.name)
        step = s.slider[2] if s.slider else None
        text = ("1" if v else "0") if s.kind == "toggle" else v if s.kind == "choice" else number(v, step)
        params[s.url_key] = text
    params["dims"] = ",".join(str(k) for k in state.dims)
    for key, name in MATRICES.items():  # X is set by the token sliders, the W entries are typed
        params[key] = encode_matrix(getattr(state, name), X_STEP if name == "X" else None)
    if getattr(state, "walk", 0):
        params[LESSON_KEYS["walk"]] = str(state.walk)
    if getattr(state, "question", "") and not state.revealed:
        params[LESSON_KEYS["question"]] = state.question
    return params


def decode(params: dict) -> tuple[dict, list[str]]:
    """Changes for HeadState.apply (plus 'preset' and a query label), and one problem per bad parameter.

    `params` maps names to a string or a list of strings (as Panel gives them); the last value wins.
    """
    changes: dict = {}
    problems: list[str] = []

    def value(key):
        v = params.get(key)
        if isinstance(v, (list, tuple)):
            v = v[-1] if v else ""
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        return None if v is None else str(v)

    def bad(key, why):
        problems.append(f"the link's '{key}' {why}, so it was left at its default")

    raw = {key: value(key) for key in params}
    for key, text in raw.items():
        if text is not None and len(text) > MAX_PARAM:
            bad(key, f"is over {MAX_PARAM} characters long")
            raw[key] = None

    preset = raw.get("preset")
    if preset and preset != CUSTOM:
        if preset in PRESETS:
            changes["preset"] = preset
        else:
            bad("preset", f"names no preset ('{preset[:40]}')")
    if raw.get("tokens"):
        changes["tokens"] = [unquote(t) for t in raw["tokens"].split(",")]
    for key, name in MATRICES.items():
        if raw.get(key):
            try:
                changes[name] = decode_matrix(raw[key])
            except ValueError:
                bad(key, "is not a matrix of finite numbers (rows split by ';', entries by ',')")
    for s in SWITCHES:
        key, text = s.url_key, raw.get(s.url_key)
        if s.kind == "toggle":
            text = (text or "").strip().lower()
            if text in TRUE:
                changes[s.name] = True
            elif text in FALSE:
                changes[s.name] = False
            elif text:
                bad(key, "should be 1 or 0")
        elif not text:
            continue
        elif s.kind == "choice":
            if text in s.choices:
                changes[s.name] = text
            else:
                bad(key, f"should be one of {', '.join(s.choices)}")
        else:
            x = _float(text)
            if x is None:
                bad(key, "is not a finite number")
            elif not s.low <= x <= s.high:
                bad(key, f"should lie from {s.low:g} to {s.high:g}")
            else:
                changes[s.name] = x
    if raw.get("dims"):
        try:
            a, b = (int(k) for k in raw["dims"].split(","))
            changes["dims"] = [a, b]
        except ValueError:
            bad("dims", "should be two whole numbers like 0,1")
    if raw.get("query"):
        changes["query_label"] = raw["query"]
    walk, asked = raw.get(LESSON_KEYS["walk"]), raw.get(LESSON_KEYS["question"])
    if walk:
        if re.fullmatch(r"[+-]?\d+", walk.strip()) and 1 <= int(walk) <= STEPS:
            changes["walk"] = int(walk)
        else:
            bad(LESSON_KEYS["walk"], f"should be a step from 1 to {STEPS}")
    if asked:
        if asked in QUESTIONS:
            changes["question"] = asked
        else:
            bad(LESSON_KEYS["question"], f"names no question ('{asked[:40]}')")
    return changes, problems


def _float(text: str) -> float | None:
    """A finite number written in a link, or None.  Only plain decimal forms count, so that the
    page's JavaScript reads exactly the same links (Python would also take '1_0' or 'nan')."""
    if not NUMBER.fullmatch(text.strip()):
        return None
    x = float(text)
    return x if math.isfinite(x) else None


def resolve_query(query_label: str, labels) -> int | None:
    """A query given by label (preferred) or by index; None if it matches neither."""
    labels = list(labels)
    if query_label in labels:
        return labels.index(query_label)
    try:
        i = int(query_label)
    except ValueError:
        return None
    return i if 0 <= i < len(labels) else None


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


def apply_params(state, params: dict) -> list[str]:
    """Load a link's settings into `state`; return what could not be used (also shown as its message).

    A preset is loaded first, then the rest on top of it.  If the rest does not fit together (say X has
    more rows than there are labels) each part is tried alone, so every usable part still counts. Then
    the question is asked (its head before the change) and the walk opened.
    """
    changes, problems = decode(params)
    lesson = {k: changes.pop(k) for k in ("question", "walk") if k in changes}
    _apply_head(state, changes, problems)
    if "question" in lesson:
        state.ask(lesson["question"])
    if "walk" in lesson:
        state.walk_to(lesson["walk"])
    state.message = "; ".join(problems)
    return problems


def _apply_head(state, changes: dict, problems: list[str]) -> None:
    whole = _as_one_change(state, changes)
    if whole is not None and (not whole or state.apply(**whole)):
        return
    if "preset" in changes:
        state.load(changes.pop("preset"))
        # (issue 15) what the preset already holds is not applied again, so a link that matches it keeps
        # the preset's name: sending a head to a class and going back leaves the student where they were
        changes = {k: v for k, v in changes.items() if not _same(getattr(state, k, None), v)}
    query_label = changes.pop("query_label", None)
    if changes and not state.apply(**changes):
        for key, v in changes.items():
            if not state.apply(**{key: v}):
                problems.append(f"the link's setting for {key} was refused: {state.message}")
    if query_label is not None:
        i = resolve_query(query_label, state.tokens)
        if i is None:
            problems.append(f"the link's 'query' names no token ('{query_label[:40]}'), so it was left as is")
        else:
            state.apply(query=i)


def _as_one_change(state, changes: dict) -> dict | None:
    """What `apply_params` makes of a link's decoded settings when every part of them fits, as one change
    for HeadState.apply: the head is computed once, not once per step (a classroom send applies a whole
    head to every student's page).  The state it leads to is the one the steps below lead to; None when
    the query label names no token, so that the steps say so.
    """
    from widgets.state import preset_changes  # url_state reads HeadState's inputs, not the reverse

    rest = {k: v for k, v in changes.items() if k not in ("preset", "query_label")}
    whole = dict(rest)
    if "preset" in changes:
        base = preset_changes(PRESETS[changes["preset"]])
        edited = any(k != "dims" and not _same(base.get(k), v) for k, v in rest.items())
        whole = {**base, **rest, "preset": "" if edited else base["preset"]}
        T, d = len(whole["tokens"]), np.shape(whole["W_Q"])[-1]
        whole["query"] = min(whole["query"], T - 1)  # (the query the preset's load leaves, as apply would)
        if "dims" not in rest and np.shape(base["W_Q"])[-1] != state.head.d:
            whole["dims"] = [0, 1 if d > 1 else 0]  # loading the preset reset them
    if changes.get("query_label") is not None:
        i = resolve_query(changes["query_label"], whole.get("tokens", state.tokens))
        if i is None:
            return None
        whole["query"] = i
    return whole
