"""The explorer's one stylesheet, for the Divs that carry text (Bokeh renders them in shadow DOM)."""

from pathlib import Path

from bokeh.models import Div, InlineStyleSheet

CSS = (Path(__file__).resolve().parents[1] / "static" / "explorer.css").read_text()


def text_panel(text: str = "", **kw) -> Div:
    """A Div styled by static/explorer.css (each document gets its own sheet model)."""
    return Div(text=text, stylesheets=[InlineStyleSheet(css=CSS)], **kw)
