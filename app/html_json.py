"""Scripts and JSON inside a page's <script> elements: how the pages carry static/'s programs, as they are,
and hand them data and configuration.

A <script type="application/json"> ends at the first "</script" in it, and "<!--" in it changes how the
HTML parser reads what follows; both can only occur inside JSON strings, where "\\/" and "\\u003c" mean the
same characters, so escaping them keeps the JSON the same for JSON.parse.
"""

from __future__ import annotations

import html
import json


def script_json(value) -> str:
    """`value` as JSON that is safe inside an HTML <script> element."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


def json_script(value, *, id: str | None = None, css_class: str | None = None) -> str:  # noqa: A002
    """A <script type="application/json"> holding `value`, found by its `id` or its `css_class`."""
    attrs = "".join(
        f' {name}="{html.escape(v)}"' for name, v in (("id", id), ("class", css_class)) if v is not None
    )
    return f'<script type="application/json"{attrs}>{script_json(value)}</script>'


def script_element(text: str) -> str:
    """A <script> holding the program `text` (a file of static/); a "</script" in it is split so it cannot
    end the element."""
    return "<script>\n" + text.replace("</script", "<\\/script") + "\n</script>"
