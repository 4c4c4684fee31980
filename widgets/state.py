"""The user's selections for one head, and the head they produce.

`HeadState` holds everything a user can choose and computes the head once
per change.  It knows nothing about Panel or Bokeh, so it runs headless in
tests and scripts.  A change that the core refuses (NaN, a wrong shape, a
duplicate label) leaves every input as it was and explains itself in
`message`: the last good state is always the one on show.
"""

from __future__ import annotations

import math

import numpy as np
import param

from core.attention import AttentionError, Head, as_finite_number, attend
from core.options import OPTION_NAMES, SWITCH, Options, check_option
from core.presets import PRESETS, Preset
from widgets.lesson_state import LESSON_ACTIONS, LESSON_PARAMS, Lessons
from widgets.refusal import Refusing

MAX_TOKENS = 64  # presets may go this far; the editor stops at EDIT_MAX_TOKENS
EDIT_MAX_TOKENS = 16
MAX_WIDTH = 6  # C and d in the editor
MAX_LABEL = 40

INPUTS = ("tokens", "X", "W_Q", "W_K", "W_V", *OPTION_NAMES)


def _option_param(name: str) -> param.Parameter:
    """A HeadState parameter for one option, made from its row in core.options.SWITCHES."""
    s = SWITCH[name]
    if s.kind == "toggle":
        return param.Boolean(default=s.default, doc=s.label)
    if s.kind == "choice":
        return param.Selector(default=s.default, objects=list(s.choices), doc=s.label)
    return param.Number(default=s.default, doc=s.label)


def check_labels(tokens) -> tuple[str, ...]:
    """Token labels as a tuple, or AttentionError if one is empty, too long or repeated."""
    if isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
        raise AttentionError("tokens must be a list of labels")
    labels = tuple(str(t) for t in tokens)
    if not labels:
        raise AttentionError("tokens is empty; a head needs at least one token")
    if len(labels) > MAX_TOKENS:
        raise AttentionError(f"tokens has {len(labels)} labels; at most {MAX_TOKENS} are allowed")
    for k, label in enumerate(labels):
        if not label.strip():
            raise AttentionError(f"token {k}'s label is empty")
        if len(label) > MAX_LABEL:
            raise AttentionError(f"token {k}'s label is {len(label)} characters long; at most {MAX_LABEL}")
        if label in labels[:k]:
            raise AttentionError(f"the label '{label}' is used twice; each token needs its own")
    return labels


def _as_width(name: str, value) -> int:
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise AttentionError(f"{name} is {value!r}; expected a whole number from 1 to {MAX_WIDTH}") from None
    if not (math.isfinite(n) and n == int(n) and 1 <= n <= MAX_WIDTH):
        raise AttentionError(f"{name} is {value!r}; expected a whole number from 1 to {MAX_WIDTH}")
    return int(n)


def _resize(M: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """M cut or zero-padded to [rows, cols]."""
    out = np.zeros((rows, cols))
    r, c = min(rows, M.shape[0]), min(cols, M.shape[1])
    out[:r, :c] = np.asarray(M)[:r, :c]
    return out


# The last heads computed in this server process, by their inputs. A Head is read-only (its arrays too), so
# sessions may share one: a head the teacher sends is computed once per process, not once per student.
RECENT_HEADS = 8
_RECENT_HEADS: dict[tuple, Head] = {}


def _inputs_key(labels: tuple[str, ...], values: dict) -> tuple | None:
    """Every input that makes the head, as a dict key (None for inputs attend will refuse anyway)."""
    try:
        key: list = [labels]
        for name in ("X", "W_Q", "W_K", "W_V"):
            M = values[name]
            if not isinstance(M, np.ndarray) or M.dtype != np.float64:
                return None
            key += [M.shape, M.tobytes()]
        key += [values[name] for name in OPTION_NAMES]
        hash(tuple(key))
    except TypeError:
        return None
    return tuple(key)


def preset_changes(preset: Preset) -> dict:
    """Every input of a preset, as one change for HeadState.apply."""
    return dict(
        tokens=list(preset.tokens),
        X=np.array(preset.X),
        W_Q=np.array(preset.W_Q),
        W_K=np.array(preset.W_K),
        W_V=np.array(preset.W_V),
        query=preset.tokens.index(preset.query),
        preset=preset.name,
        **preset.options.as_dict(),
    )


# One parameter per option (scaling, causal, tied_qk, normaliser, x_scale, temperature), each made from its
# row of core.options.SWITCHES: HeadState inherits them, so a new switch needs no line in this file.
SwitchParams = param.parameterized_class(
    "SwitchParams", {name: _option_param(name) for name in OPTION_NAMES}, bases=Refusing
)


class HeadState(SwitchParams, Lessons):
    """One head's inputs, the query being inspected, the resulting Head, (from SwitchParams) the head's
    switches and (from Lessons) the walk and the open question."""

    tokens = param.List(default=list(PRESETS["chapter"].tokens), item_type=str)
    X = param.Array(default=np.array(PRESETS["chapter"].X))
    W_Q = param.Array(default=np.array(PRESETS["chapter"].W_Q))
    W_K = param.Array(default=np.array(PRESETS["chapter"].W_K))
    W_V = param.Array(default=np.array(PRESETS["chapter"].W_V))
    query = param.Integer(default=3, bounds=(0, None), doc="Index of the token being inspected")
    dims = param.List(default=[0, 1], item_type=int, doc="The two value coordinates the blend plot shows")
    preset = param.String(default="chapter", doc="The preset last loaded, or '' once edited")
    moved = param.Parameter(
        default=None,
        doc="After a token slider's move: (token, component, its value before the move); None after any "
        "other change. The head before the move (`before`) is this head with that one value back.",
    )

    head = param.Parameter(default=None, constant=True, doc="The computed head, recomputed once per change")
    # message (why the last change was refused, or ''): from Refusing, shared with the other explorers

    def __init__(self, **params):
        super().__init__(**params)
        self._set_head(self._compute(self._inputs()))

    # -- reading -------------------------------------------------------------

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.tokens)

    @property
    def options(self) -> Options:
        return Options(**{name: getattr(self, name) for name in OPTION_NAMES})

    def _inputs(self, **changes) -> dict:
        values = {name: getattr(self, name) for name in INPUTS}
        values.update(changes)
        return values

    @staticmethod
    def _compute(values: dict) -> Head:
        labels = check_labels(values["tokens"])
        key = _inputs_key(labels, values)
        if key in _RECENT_HEADS:  # (a classroom send gives every student of the process the same head)
            return _RECENT_HEADS[key]
        head = attend(
            values["X"],
            values["W_Q"],
            values["W_K"],
            values["W_V"],
            options=Options(**{name: values[name] for name in OPTION_NAMES}),
        )
        if head.T != len(labels):
            raise AttentionError(f"X has {head.T} rows but there are {len(labels)} token labels")
        if key is not None:
            _RECENT_HEADS[key] = head
            while len(_RECENT_HEADS) > RECENT_HEADS:
                del _RECENT_HEADS[next(iter(_RECENT_HEADS))]
        return head

    def _set_head(self, head: Head) -> None:
        with param.edit_constant(self):
            self.param.update(head=head)

    # -- changing ------------------------------------------------------------

    def apply(self, **changes) -> bool:
        """Change any inputs together; compute once; refuse (and say why) if the core does.

        Returns True when the change was taken.
        """
        unknown = set(changes) - set(INPUTS) - {"query", "preset", "dims", "moved", *LESSON_PARAMS}
        if unknown:
            raise TypeError(f"not an input of HeadState: {', '.join(sorted(unknown))}")
        try:
            for name in OPTION_NAMES:
                if name in changes:
                    changes[name] = check_option(name, changes[name])
            for name in ("X", "W_Q", "W_K", "W_V"):
                if name in changes:
                    changes[name] = np.array(changes[name], dtype=float)
            if "tokens" in changes:
                changes["tokens"] = list(check_labels(changes["tokens"]))
            head = self._compute(self._inputs(**changes))
            query = changes.get("query", self.query)
            if not isinstance(query, (int, np.integer)) or not 0 <= query < head.T:
                if "query" in changes:
                    raise AttentionError(f"query is {query!r}; expected a token index from 0 to {head.T - 1}")
                query = head.T - 1  # the old query fell off the end when tokens were removed
            changes["query"] = int(query)
            if "dims" in changes:
                changes["dims"] = self._check_dims(changes["dims"], head.d)
            elif head.d != self.head.d:
                changes["dims"] = [0, 1 if head.d > 1 else 0]
        except (AttentionError, ValueError, TypeError) as exc:
            self.message = str(exc)
            return False
        edits = set(changes) - {"query", "dims", *LESSON_PARAMS}
        if "preset" not in changes and edits:
            changes["preset"] = ""
        if edits and self.revealed and "question" not in changes:  # the answer was about another head
            changes.update(question="", prediction=None, revealed=False)
        changes.setdefault("moved", None)  # any change but a slider's move ends what `moved` says
        with param.parameterized.batch_call_watchers(self), param.edit_constant(self):
            self.param.update(**changes, message="", head=head)  # one update: one pass of param's checks
        return True

    @staticmethod
    def _check_dims(dims, d: int) -> list[int]:
        try:
            a, b = (int(k) for k in dims)
        except (TypeError, ValueError):
            raise AttentionError("dims must be two value coordinates") from None
        for k in (a, b):
            if not 0 <= k < d:
                raise AttentionError(f"value coordinate {k} does not exist; d is {d}")
        if a == b and d > 1:
            raise AttentionError("pick two different value coordinates for the blend plot")
        return [a, b]

    # -- editing -------------------------------------------------------------

    def set_labels(self, text: str) -> bool:
        """Labels typed as one comma-separated line; the count must stay the same."""
        labels = [part.strip() for part in str(text).split(",")]
        if len(labels) != len(self.tokens):
            self.message = (
                f"that gives {len(labels)} labels for {len(self.tokens)} tokens; "
                "use Add or Remove to change the count (labels cannot contain commas)"
            )
            return False
        return self.apply(tokens=labels)

    def add_token(self) -> bool:
        """Append a token with a zero vector and a fresh label."""
        if len(self.tokens) >= EDIT_MAX_TOKENS:
            self.message = f"the editor stops at {EDIT_MAX_TOKENS} tokens"
            return False
        n = len(self.tokens) + 1
        label = next(f"t{k}" for k in range(n, n + EDIT_MAX_TOKENS + 2) if f"t{k}" not in self.tokens)
        X = np.vstack([self.X, np.zeros((1, self.X.shape[1]))])
        return self.apply(tokens=[*self.tokens, label], X=X)

    def remove_token(self, index: int | None = None) -> bool:
        """Remove one token (the last by default); at least one stays."""
        if len(self.tokens) <= 1:
            self.message = "a head needs at least one token"
            return False
        index = len(self.tokens) - 1 if index is None else int(index)
        keep = [k for k in range(len(self.tokens)) if k != index]
        query = self.query - (self.query > index)
        return self.apply(
            tokens=[self.tokens[k] for k in keep],
            X=np.array(self.X)[keep],
            query=min(max(query, 0), len(keep) - 1),
        )

    def set_widths(self, C: int | None = None, d: int | None = None) -> bool:
        """Change the token width C or the head width d; new entries are 0, dropped ones go."""
        try:
            C = self.X.shape[1] if C is None else _as_width("C", C)
            d = self.W_Q.shape[1] if d is None else _as_width("d", d)
        except AttentionError as exc:
            self.message = str(exc)
            return False
        return self.apply(
            X=_resize(self.X, self.X.shape[0], C),
            W_Q=_resize(self.W_Q, C, d),
            W_K=_resize(self.W_K, C, d),
            W_V=_resize(self.W_V, C, d),
        )

    def set_weight(self, name: str, row: int, col: int, value) -> bool:
        """One entry of W_Q, W_K or W_V, typed as an exact number."""
        if name not in ("W_Q", "W_K", "W_V"):
            raise TypeError(f"not a weight matrix: {name}")
        try:
            v = as_finite_number(f"{name}[{row}, {col}]", value)
        except AttentionError as exc:
            self.message = str(exc)
            return False
        W = np.array(getattr(self, name), dtype=float)
        W[row, col] = v
        return self.apply(**{name: W})

    def set_x(self, token: int, component: int, value) -> bool:
        """One slider's worth of change: X[token, component] = value."""
        try:
            v = as_finite_number(f"{self.labels[token]}[{component}]", value)
        except (AttentionError, IndexError) as exc:
            self.message = str(exc)
            return False
        X = np.array(self.X, dtype=float)
        before = float(X[token, component])
        X[token, component] = v
        return self.apply(X=X, moved=(token, component, before))

    @property
    def before(self) -> Head | None:
        """The head before the last slider move (None unless `moved`): this head with that one value back.

        Found in the recent heads (the one on screen a move ago) rather than computed again."""
        if self.moved is None:
            return None
        token, component, value = self.moved
        X = np.array(self.X, dtype=float)
        X[token, component] = value
        return self._compute(self._inputs(X=X))

    def load(self, preset: Preset | str) -> bool:
        """Load a preset by object or name."""
        if isinstance(preset, str):
            if preset not in PRESETS:
                self.message = f"there is no preset called '{preset}'; try one of {', '.join(PRESETS)}"
                return False
            preset = PRESETS[preset]
        return self.apply(**preset_changes(preset))

    def reset(self) -> bool:
        return self.load("chapter")

    # -- one user action ---------------------------------------------------------

    def act(self, action: dict) -> bool:
        """One user action given as data, as the page's controls send it; static/explorer.js's
        `apply(state, action)` takes the same actions (tests/test_actions.py holds the two equal).

        {"do": "x", "token", "component", "value"}, {"do": "query", "index"}, {"do": "option", "name",
        "value"}, {"do": "preset", "name"}, {"do": "reset"}, {"do": "labels", "text"}, {"do": "add"},
        {"do": "remove"} (the query token), {"do": "widths", "C"?, "d"?}, {"do": "weight", "name", "row",
        "col", "value"}, {"do": "dims", "value"}, {"do": "link", "params"}, and the lesson's
        (widgets/lesson_state.py LESSON_ACTIONS).
        """
        from widgets.url_state import apply_params  # url_state reads HeadState's inputs, not the reverse

        do = action["do"]
        if do == "x":
            return self.set_x(action["token"], action["component"], action["value"])
        if do == "weight":
            return self.set_weight(action["name"], action["row"], action["col"], action["value"])
        if do == "query":
            return self.apply(query=action["index"])
        if do == "option":
            return self.apply(**{action["name"]: action["value"]})
        if do == "preset":
            return self.load(action["name"])
        if do == "reset":
            return self.reset()
        if do == "labels":
            return self.set_labels(action["text"])
        if do == "add":
            return self.add_token()
        if do == "remove":
            return self.remove_token(self.query)
        if do == "widths":
            return self.set_widths(C=action.get("C"), d=action.get("d"))
        if do == "dims":
            return self.apply(dims=action["value"])
        if do == "link":
            return not apply_params(self, action["params"])
        if do in LESSON_ACTIONS:
            return self.lesson_act(action)
        raise ValueError(f"unknown action {do!r}")

    def as_data(self) -> dict:
        """The selections as plain data (what static/explorer.js keeps as its state)."""
        out = {"tokens": list(self.tokens)}
        out.update({name: getattr(self, name).tolist() for name in ("X", "W_Q", "W_K", "W_V")})
        out.update(self.options.as_dict())
        out.update(query=self.query, dims=list(self.dims), preset=self.preset, message=self.message)
        out.update({name: getattr(self, name) for name in LESSON_PARAMS})
        out["moved"] = list(self.moved) if self.moved is not None else None
        return out
