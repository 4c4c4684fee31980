"""Writing new columns into an existing ColumnDataSource so that only what changed is sent."""

from __future__ import annotations

from bokeh.models import ColumnDataSource


def write_changed(source: ColumnDataSource, columns: dict) -> None:
    """Put `columns` (some or all of the source's columns) into `source`. When each keeps its length, only
    those whose values differ are written: one event naming just them, or none. Otherwise (new columns, or
    a new length) the source's data is replaced by `columns` whole.

    A move changes the numbers but rarely the names, sides or labels beside them, and each column sent
    costs the server its encoding and the browser its decoding. (A column holding NaN never equals itself,
    so it is always sent: never wrongly kept.)
    """
    old = source.data
    if not columns.keys() <= old.keys() or any(len(old[k]) != len(v) for k, v in columns.items()):
        source.data = columns
        return
    changed = {k: v for k, v in columns.items() if not _same(old[k], v)}
    if changed:
        old.update(changed)


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return a == b
    return False  # an array (a long column, sent binary): written, not compared
