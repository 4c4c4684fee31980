"""Every matrix of the current head, labelled by token, as JSON or CSV for download."""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from core.attention import Head

# (name in the file, Head attribute, what the rows are, what the columns are)
TABLES = (
    ("X", "X", "token", "component"),
    ("W_Q", "W_Q", "component", "dimension"),
    ("W_K", "W_K", "component", "dimension"),
    ("W_V", "W_V", "component", "dimension"),
    ("Q", "Q", "token", "dimension"),
    ("K", "K", "token", "dimension"),
    ("V", "V", "token", "dimension"),
    ("scores", "scores", "query", "key"),
    ("scaled_masked", "masked", "query", "key"),
    ("weights", "weights", "query", "key"),
    ("output", "output", "token", "dimension"),
)


def _labels(kind: str, head: Head, tokens) -> list[str]:
    if kind in ("token", "query", "key"):
        return list(tokens)
    n = head.C if kind == "component" else head.d
    return [str(k) for k in range(n)]


def _number(v: float):
    """JSON has no infinities: a masked score is written as the string "-inf"."""
    return float(v) if np.isfinite(v) else ("-inf" if v < 0 else "inf")


def tables(head: Head, tokens):
    for name, attr, rows, cols in TABLES:
        yield name, getattr(head, attr), _labels(rows, head, tokens), _labels(cols, head, tokens), rows, cols


def as_json(head: Head, tokens) -> str:
    out = {
        "tokens": list(tokens),
        "options": head.options.as_dict(),  # every switch of core.options.SWITCHES, by name
        "matrices": {
            name: {
                "rows": rows,
                "columns": cols,
                "row_kind": rk,
                "column_kind": ck,
                "values": [[_number(v) for v in line] for line in M],
            }
            for name, M, rows, cols, rk, ck in tables(head, tokens)
        },
    }
    return json.dumps(out, indent=1, ensure_ascii=False)


def as_csv(head: Head, tokens) -> str:
    """Long form, one entry per line: matrix, row, column, value."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["matrix", "row", "column", "value"])
    for name, M, rows, cols, _, _ in tables(head, tokens):
        for i, line in enumerate(M):
            for j, v in enumerate(line):
                writer.writerow([name, rows[i], cols[j], repr(float(v))])
    return buf.getvalue()
