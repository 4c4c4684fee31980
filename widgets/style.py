"""Small shared helpers for the explorer's Bokeh models: its text panels' stylesheet, lean glyphs, labels."""

from pathlib import Path

from bokeh.layouts import row
from bokeh.models import Div, GlyphRenderer, Grid, InlineStyleSheet, Plot

from widgets.figure_text import AXIS_LABEL_CHARS, short_label  # noqa: F401  (the views' one way of cutting a label)

CSS = (Path(__file__).resolve().parents[1] / "static" / "explorer.css").read_text()


def text_panel(text: str = "", sheet: InlineStyleSheet | None = None, **kw) -> Div:
    """A Div styled by static/explorer.css (each document gets its own sheet model; Divs of one part may
    share theirs, `sheet`)."""
    return Div(text=text, stylesheets=[sheet or InlineStyleSheet(css=CSS)], **kw)




def draw(fig, source, glyph) -> GlyphRenderer:
    """Add a glyph to a figure without the selection, non-selection and muted copies that
    bokeh.plotting adds to each renderer: nothing here is selected or muted, and every model left
    out is one less for each session to build, send and mirror in the browser."""
    return fig.add_glyph(source, glyph, selection_glyph=None, nonselection_glyph=None, muted_glyph=None)


def drop_grid(fig) -> None:
    """Take the grid lines out of a figure altogether (a hidden grid is still two models per figure)."""
    fig.center = [r for r in fig.center if not isinstance(r, Grid)]


def wrapping_row(*children, name: str):
    """A Bokeh row whose children wrap onto the next line when the container is too narrow for them.

    Its figures do not align their frames with each other: Bokeh aligns the figures of a row as one
    line, and once they wrap that alignment widens and clips them.
    """
    for child in children:
        if isinstance(child, Plot):
            child.frame_align = False
        if isinstance(child, Plot) and child.frame_width is not None:
            # Bokeh lets a figure sized by its frame grow with a row wider than its children ("fit");
            # keep the size its cells give it
            child.update(width_policy="min", height_policy="min")
    wrap = {"flex-wrap": "wrap", "gap": "8px 18px"}
    return row(*children, name=name, sizing_mode="stretch_width", styles=wrap)


# The narrowest a line figure of the further explorers gets: a 320 px phone less the page's margins.
FIGURE_MIN_WIDTH = 280


def fluid_figure(width: int, height: int) -> dict:
    """figure() sizes for a figure that takes the width it is given, from FIGURE_MIN_WIDTH up to `width`
    (its titles and legends must fit the narrowest)."""
    return {
        "sizing_mode": "stretch_width",
        "min_width": FIGURE_MIN_WIDTH,
        "max_width": width,
        "height": height,
    }
