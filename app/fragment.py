"""The export as one block to paste into another page: the whole exported page, in a frame of its own.

    python -m app.export snippet.html --fragment

A chapter's page often has scripts and styles of its own, sometimes another BokehJS (an older one for
the chapter's own figures). Pasted straight into such a page, the explorer's BokehJS and the page's would
share one `window.Bokeh`, and whichever came second would break the other. So the fragment is a <div>
holding an <iframe> and a <script>: the script puts the exported page (the same file `app.export` writes)
into the frame through `srcdoc`, where it has a window, a BokehJS and styles of its own. Nothing leaks
either way.

The frame takes the width of the column it is pasted into (the page inside lays itself out for that
width, static/page.css) and the height of its content: the page inside reports its height with
`postMessage` whenever a ResizeObserver sees it change (the layout wraps differently at another width,
a details element opens), and the script outside sets the frame's height to it. Messages from any other
window are ignored, so several fragments can share a page.

The page travels as a JSON string in a <script type="application/json"> ("</" and "<!--" escaped so the
HTML parser cannot end it early): ~2 % larger than the file, where an HTML-escaped `srcdoc` attribute would
be ~13 %. The two scripts are static/fragment_height.js (inside) and static/fragment_frame.js (outside),
as they are; the key of their messages is each one's data-key.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from app.html_json import json_script

STATIC = Path(__file__).resolve().parents[1] / "static"
MESSAGE_KEY = "attentionHeadHeight"  # the messages' key, given to both scripts as their data-key
START_HEIGHT_PX = 1500  # until the page inside has said how tall it is
PAGE_CLASS = "attention-head-page"  # the <script type="application/json"> holding the page


def _script(name: str) -> str:
    """static/NAME as a <script> that knows the messages' key."""
    return f'<script data-key="{MESSAGE_KEY}">' + (STATIC / name).read_text() + "</script>"


def with_height_reports(page_html: str) -> str:
    """The exported page, telling its embedding window how tall it is (static/fragment_height.js)."""
    head, sep, tail = page_html.rpartition("</body>")
    if not sep:
        raise ValueError("the exported page has no </body>")
    return head + _script("fragment_height.js") + sep + tail


def fragment_html(page_html: str, title: str = "One attention head") -> str:
    """One block to paste into a page's <body>: a frame that shows `page_html` and fits its column."""
    frame_style = f"display:block;width:100%;height:{START_HEIGHT_PX}px;border:0;margin:0;padding:0"
    return "\n".join(
        [
            "<!-- An interactive explorer of one attention head. Paste this whole block into a page's",
            "     <body>: it runs in a frame of its own (its own BokehJS and styles), as wide as the column",
            "     and as tall as its content. -->",
            '<div class="attention-head-embed" style="width:100%;max-width:100%;margin:1em 0">',
            f'<iframe title="{html.escape(title)}" style="{frame_style}"></iframe>',
            json_script(with_height_reports(page_html), css_class=PAGE_CLASS),
            _script("fragment_frame.js"),
            "</div>",
        ]
    )


def page_in(fragment: str) -> str:
    """The page a fragment puts into its frame (what `fragment_html` was given, with the height reports)."""
    found = re.search(f'<script type="application/json" class="{PAGE_CLASS}">(.*?)</script>', fragment, re.S)
    return json.loads(found.group(1))
