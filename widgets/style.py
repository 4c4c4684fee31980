"""The explorer's one stylesheet, for the Divs that carry text (Bokeh renders them in shadow DOM)."""

from pathlib import Path

from bokeh.models import Div, InlineStyleSheet

CSS = (Path(__file__).resolve().parents[1] / "static" / "explorer.css").read_text()


def text_panel(text: str = "", **kw) -> Div:
    """A Div styled by static/explorer.css (each document gets its own sheet model)."""
    return Div(text=text, stylesheets=[InlineStyleSheet(css=CSS)], **kw)


def short_label(label: str, width: int = 10) -> str:
    """A token label cut to fit an axis or a slider title; the full label stays in hovers and the steps."""
    label = str(label)
    return label if len(label) <= width else label[: width - 1] + "…"
