"""What a screen reader, a keyboard and a magnifier get from the page, declared as data.

Bokeh 3.9 has no property for an accessible name, and its widgets live in shadow DOM, so
static/a11y.js (loaded by the served page and the export) applies what is declared here:

* `accessible_names`: model name -> accessible name, for controls whose visible text does not
  say what they change (a slider titled "it[0]" is "it, component 0"; a grid box with no title
  is "W_Q row 1 column 0"). A control missing from the map is named by its own title. A text panel
  named here that scrolls becomes a named region the Tab key reaches.
* `FIGURE_TABLES`: which figures get a table of their numbers, and from which source (and which one
  a screen reader hears, its query's row, in a polite status line once a change settles). The tables
  are built in the browser from the figures' own ColumnDataSources, so they follow every move
  without another message from the server; `cells_table` and `blend_table` are the reference
  for what they hold (static/a11y.js builds the same data; tests/test_a11y.py holds them equal).

The names reach the browser as a declared model in the document (`A11yNames`, a root of its own), so
they change with the tokens; which figures get tables never changes, and goes to the page once, as JSON
(`figures_declared`, in a `<script type="application/json" id="a11y-figures">` of each page's template).
"""

from __future__ import annotations

import math

from bokeh.core.properties import Dict, String
from bokeh.model import DataModel

from core.lessons import inside_convex
from core.saturation import STUCK
from core.trace import fmt
from widgets.editor import WEIGHTS

NAMES_ROOT = "a11y-names"  # the A11yNames model's name in a document
FIGURES_SCRIPT = "a11y-figures"  # the id of the <script> element that holds figures_declared
MASKED = "masked"

# Controls whose title alone would not say what they change, or that have no title. Every other
# control is named by its title (or its own text: buttons, checkboxes).
ACCESSIBLE_NAMES = {
    "x_scale": "Multiply X by (every token vector is scaled by this number)",
    "normaliser": "Turn scores into weights with",
    "dim-x": "Blend plot: x shows value component",
    "dim-y": "Blend plot: y shows value component",
    "choices": "Your prediction",  # the open question's answers (widgets/lesson_view.py)
}

# figure model name -> (kind, the source its numbers come from, what the table's summary says, whether a
# screen reader hears the query's row of it once a change settles)
FIGURE_TABLES = {
    "weights": ("cells", "weights-cells", "The weights as a table", True),
    "blend": ("blend", "blend", "The blend as text", False),
    "scores": ("cells", "scores-cells", "The scores as a table", False),
    "scaled": ("cells", "scaled-cells", "The scaled and masked scores as a table", False),
    "qkv": ("cells", "qkv-cells", "Q, K and V as a table", False),
    # the teacher's page (widgets/class_view.py): how many students' query rows peak at each key
    "class-chart": ("bars", "class-top-keys", "The class as a table", False),
    # the further explorers (widgets/saturation_page.py, widgets/cost_page.py): a row per point of the curves
    "saturation-spread": ("series", "saturation-curve", "The spread against d as a table", False),
    "saturation-weight": ("series", "saturation-curve", "The largest weight against d as a table", False),
    "saturation-gradient": ("series", "saturation-curve", "The gradient against d as a table", False),
    "saturation-entropy": ("series", "saturation-curve", "The entropy against d as a table", False),
    "cost-figure": ("series", "cost-lines", "The FLOPs against T as a table", False),
    "tiles-figure": ("series", "tiles-scores", "The row in tiles as a table", False),
}
# A "series" table's columns: (source column, header), the first one heading the rows.
SERIES_COLUMNS = {
    "saturation-spread": (
        ("d", "d"),
        ("score_std", "spread, raw q·k"),
        ("scaled_score_std", "spread, q·k ÷ √d"),
    ),
    "saturation-weight": (
        ("d", "d"),
        ("max_weight_raw", "largest weight, without ÷√d"),
        ("max_weight_scaled", "largest weight, with ÷√d"),
    ),
    "saturation-gradient": (
        ("d", "d"),
        ("gradient_raw", "mean ‖∂w/∂z‖, without ÷√d"),
        ("stuck_raw", f"share of rows below {STUCK:g}, without ÷√d"),
        ("gradient_scaled", "mean ‖∂w/∂z‖, with ÷√d"),
        ("stuck_scaled", f"share of rows below {STUCK:g}, with ÷√d"),
    ),
    "saturation-entropy": (
        ("d", "d"),
        ("entropy_raw", "entropy, without ÷√d"),
        ("entropy_scaled", "entropy, with ÷√d"),
    ),
    "tiles-figure": (
        ("key", "key"),
        ("score_text", "score"),
        ("weight_text", "weight so far"),
    ),
    "cost-figure": (
        ("T_text", "T"),
        ("qk_text", "Q·Kᵀ FLOPs"),
        ("proj_text", "projection FLOPs"),
        ("proj_mha_text", "projection FLOPs without K/V sharing"),
        ("attn_text", "Q·Kᵀ + A·V FLOPs"),
        ("proj_all_text", "Q, K, V and output projection FLOPs"),
    ),
}


def slider_name(label: str, component: int) -> str:
    """What a token's slider changes: one component of that token's vector."""
    return f"{label}, component {component}"


def weight_name(matrix: str, row: int, column: int) -> str:
    return f"{matrix} row {row} column {column}"


def accessible_names(labels, C: int, d: int, weights=WEIGHTS) -> dict[str, str]:
    """Every declared name for a head with these tokens and widths (sliders x-t-c, grid boxes W-r-c)."""
    names = dict(ACCESSIBLE_NAMES)
    for t, label in enumerate(labels):
        for c in range(C):
            names[f"x-{t}-{c}"] = slider_name(str(label), c)
    for matrix in weights:
        for r in range(C):
            for c in range(d):
                names[f"{matrix}-{r}-{c}"] = weight_name(matrix, r, c)
    return names


class A11yNames(DataModel):
    """The controls' declared names in a page's document: a root of its own (named NAMES_ROOT), which
    static/a11y.js reads and follows. The server writes new names for new tokens or widths; the export's
    page writes them itself (static/a11y.js renameControls)."""

    names = Dict(String, String, help="model name -> accessible name (accessible_names)")

    def __init__(self, **kwargs):
        kwargs.setdefault("name", NAMES_ROOT)
        super().__init__(**kwargs)


def figures_declared(figures: dict = FIGURE_TABLES) -> dict:
    """Which figures get a table, as static/a11y.js reads it (the pages carry it as JSON, FIGURES_SCRIPT):
    figure name -> kind, source, summary, whether it is announced, and a series table's columns."""
    return {
        name: {
            "kind": kind,
            "source": source,
            "summary": summary,
            "announce": announce,
            "columns": SERIES_COLUMNS.get(name, []),
        }
        for name, (kind, source, summary, announce) in figures.items()
    }


# -- the tables' data: the reference for static/a11y.js ------------------------------------------


def _query_row(outline: dict | None) -> int | None:
    ys = (outline or {}).get("y") or []
    return int(ys[0]) if len(ys) else None


def cells_table(cells: dict, outline: dict | None = None) -> dict:
    """A heatmap's numbers as a table: a header row of keys (or matrix components), a row per token.

    `cells` holds a MatrixPlot source's columns (x, y, value, row, col and, for several matrices side by
    side, matrix). Masked cells (NaN) read "masked"; the query's row, from the outline, says so.
    """
    n = len(cells["value"])
    blocks = cells.get("matrix") or [""] * n
    several = len(set(blocks)) > 1
    keys = [(blocks[k], str(cells["col"][k])) for k in range(n)]
    column_of = {key: j for j, key in enumerate(dict.fromkeys(keys))}  # first-seen order
    row_of: dict[int, str] = {}
    for k in range(n):
        row_of.setdefault(int(cells["y"][k]), str(cells["row"][k]))
    rows = [row_of[y] for y in sorted(row_of)]
    body = [["" for _ in column_of] for _ in rows]
    masked = 0
    for k in range(n):
        value = float(cells["value"][k])
        masked += math.isnan(value)
        body[int(cells["y"][k])][column_of[keys[k]]] = MASKED if math.isnan(value) else fmt(value)
    query = _query_row(outline)
    return {
        "columns": [f"{m}[{c}]" if several else c for m, c in column_of],
        "rows": [f"{r} (the query)" if i == query else r for i, r in enumerate(rows)],
        "body": body,
        "note": _cells_note(rows, query, masked),
    }


def _cells_note(rows, query, masked: int) -> str:
    parts = [f"Rows are tokens; the query is '{rows[query]}'." if query is not None else "Rows are tokens."]
    if masked:
        are = "s are" if masked != 1 else " is"
        parts.append(f"{masked} cell{are} masked: a key after its query, which gets no weight.")
    return " ".join(parts)


def blend_table(values: dict, output: dict, hull: dict, axes: dict) -> dict:
    """The blend plot in words: where the output lies, then each value with the weight on it."""
    ox, oy = float(output["x"][0]), float(output["y"][0])
    label = str(output["label"][0])
    one_line = axes["y"] == "(d = 1)"
    where = f"({fmt(ox)}, {fmt(oy)})" if not one_line else fmt(ox)
    weights = [float(w) for w in values["weight"]]
    top = max(range(len(weights)), key=lambda k: (weights[k], -k))
    inside = inside_convex([float(v) for v in hull["x"]], [float(v) for v in hull["y"]], ox, oy)
    note = (
        f"{label[:1].upper()}{label[1:]}: {output['text'][0]}. In the plot ({axes['x']}"
        + ("" if one_line else f", {axes['y']}")
        + f") it lies at {where}, "
        + ("inside" if inside else "outside")
        + f" the values' hull; the largest weight, {fmt(weights[top])}, is on the value of "
        + f"'{values['label'][top]}'."
    )
    columns = ["weight", axes["x"]] + ([] if one_line else [axes["y"]])
    body = [
        [fmt(float(w)), fmt(float(x))] + ([] if one_line else [fmt(float(y))])
        for w, x, y in zip(values["weight"], values["x"], values["y"])
    ]
    return {
        "columns": columns,
        "rows": [f"value of {v}" for v in values["label"]],
        "body": body,
        "note": note,
    }


def bars_table(bars: dict) -> dict:
    """The class chart in words: for each key, how many students' query rows weigh it most."""
    keys, counts = [str(k) for k in bars["key"]], [int(n) for n in bars["students"]]
    total = sum(counts)
    note = (
        f"{total} student{'s' if total != 1 else ''} counted; each is counted under the key their query row "
        "weights most."
        if total
        else "No student's row yet."
    )
    return {"columns": ["students"], "rows": keys, "body": [[str(n)] for n in counts], "note": note}


def _series_cell(value, heads_row: bool) -> str:
    if isinstance(value, str):
        return value
    return str(round(float(value))) if heads_row else fmt(float(value))


def series_table(data: dict, columns) -> dict:
    """A line plot's points as a table: a row per point, headed by its first column (d, or T)."""
    (x, x_header), rest = columns[0], columns[1:]
    n = len(data[x])
    return {
        "columns": [header for _, header in rest],
        "rows": [_series_cell(v, True) for v in data[x]],
        "body": [[_series_cell(data[c][i], False) for c, _ in rest] for i in range(n)],
        "note": f"A row per point of the curves, {n} in all; the rows are headed by {x_header}.",
    }


def figure_sources(data: dict) -> dict[str, tuple[dict, dict | None]]:
    """Each heatmap's source columns and query outline, as the page's figures hold them for `data`."""
    from widgets.matrix_plot import MatrixPlot, side_by_side
    from widgets.page import MATRIX_FIGURES, SQUARE

    out = {}
    for name, _, _, blocks in MATRIX_FIGURES:
        n_cols = int(max(data["cells"][blocks[0]]["x"])) + 1
        cells = side_by_side({b: data["cells"][b] for b in blocks}, n_cols, MatrixPlot.GAP)
        out[name] = ({k: list(v) for k, v in cells.items()}, data["outline"] if name in SQUARE else None)
    return out


def figure_tables(data: dict) -> dict[str, dict]:
    """Every figure's table for one view_data dict (widgets.viewdata.view_data), by figure name."""
    tables = {name: cells_table(cells, outline) for name, (cells, outline) in figure_sources(data).items()}
    b = data["blend"]
    tables["blend"] = blend_table(b["values"], b["output"], b["hull"], b["axes"])
    return tables


# -- contrast (WCAG 2.1): text needs 4.5 : 1 against what is behind it, lines and shapes 3 : 1 ----------

TEXT_CONTRAST, GRAPHICS_CONTRAST = 4.5, 3.0


def luminance(colour: str) -> float:
    """Relative luminance of a #rrggbb colour."""
    rgb = [int(colour.lstrip("#")[k : k + 2], 16) / 255 for k in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def ink_for(palette, dark: str = "#1a1a1a", light: str = "#ffffff") -> tuple[str, ...]:
    """For each cell colour, the text colour (dark or light) that reads best on it."""
    return tuple(dark if contrast(c, dark) >= contrast(c, light) else light for c in palette)
