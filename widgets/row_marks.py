"""The weights heatmap's marks for what a token slider's move did to each row (issue 31 item 3).

A dashed frame around each run of rows the move left unchanged to the last bit, a purple frame around
each run it changed (widgets/viewdata.py `row_marks`): with the mask on, moving a token leaves every
earlier row alone, because no earlier query can see it. Built once beside the weights' own glyphs;
`update` rewrites the two sources, and static/explorer_page.js writes the same ones in the browser.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, Rect

from widgets.style import draw

UNCHANGED_COLOUR = "#1a1a1a"  # dashed: reads on the palest and the darkest blue
CHANGED_COLOUR = "#CC79A7"  # Okabe–Ito reddish purple, apart from the query's orange outline


class RowMarks:
    """Two frame glyphs in the weights figure, one source each ("weights-unchanged", "weights-changed")."""

    def __init__(self, fig, marks: dict):
        self.unchanged = ColumnDataSource(marks["unchanged"], name="weights-unchanged")
        self.changed = ColumnDataSource(marks["changed"], name="weights-changed")
        frame = {"x": "x", "y": "y", "width": "width", "height": "height", "fill_alpha": 0}
        dashed = {"line_width": 2.5, "line_dash": "dashed"}
        draw(fig, self.unchanged, Rect(**frame, line_color=UNCHANGED_COLOUR, **dashed))
        draw(fig, self.changed, Rect(**frame, line_color=CHANGED_COLOUR, line_width=3))

    def update(self, marks: dict) -> None:
        for source, data in ((self.unchanged, marks["unchanged"]), (self.changed, marks["changed"])):
            if source.data != data:
                source.data = data
