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

The page travels as a JavaScript string (JSON, with "</" and "<!--" escaped so the HTML parser cannot
end the script early): ~2 % larger than the file, where an HTML-escaped `srcdoc` attribute would be ~13 %.
"""

from __future__ import annotations

import html
import json

MESSAGE_KEY = "attentionHeadHeight"
START_HEIGHT_PX = 1500  # until the page inside has said how tall it is

# Runs inside the frame: tell the embedding window how tall the page is, now and after every change.
REPORT_HEIGHT_JS = """
(function reportHeight() {
  if (window.parent === window) return;  // opened on its own: nobody to tell
  let last = -1;
  // How far down the content reaches (the body itself may be as tall as the frame, whatever it holds).
  function contentHeight() {
    let bottom = 0;
    for (const child of document.body.children) {
      bottom = Math.max(bottom, child.getBoundingClientRect().bottom + window.scrollY);
    }
    return Math.ceil(bottom + parseFloat(getComputedStyle(document.body).marginBottom));
  }
  function send() {
    const height = contentHeight();
    if (height !== last) {
      last = height;
      window.parent.postMessage({__KEY__: height}, "*");
    }
  }
  const watch = new ResizeObserver(send);
  for (const child of document.body.children) watch.observe(child);
  window.addEventListener("load", send);
})();
"""

# Runs in the embedding page: fill the frame, then follow the heights it reports.
EMBED_JS = """
(function embedAttentionHead() {
  const host = document.currentScript.parentElement;
  const frame = host.querySelector("iframe");
  window.addEventListener("message", function (event) {
    if (event.source !== frame.contentWindow || !event.data) return;
    const height = event.data.__KEY__;
    if (typeof height === "number" && height > 0) frame.style.height = height + "px";
  });
  frame.srcdoc = __PAGE__;
})();
"""


def script_string(text: str) -> str:
    """`text` as a JavaScript string literal that is safe inside an HTML <script> element."""
    return json.dumps(text, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "\\u003c!--")


def with_height_reports(page_html: str) -> str:
    """The exported page, telling its embedding window how tall it is."""
    script = "<script>" + REPORT_HEIGHT_JS.replace("__KEY__", MESSAGE_KEY) + "</script>"
    head, sep, tail = page_html.rpartition("</body>")
    if not sep:
        raise ValueError("the exported page has no </body>")
    return head + script + sep + tail


def fragment_html(page_html: str, title: str = "One attention head") -> str:
    """One block to paste into a page's <body>: a frame that shows `page_html` and fits its column."""
    page = script_string(with_height_reports(page_html))
    embed = EMBED_JS.replace("__KEY__", MESSAGE_KEY).replace("__PAGE__", page)
    frame_style = f"display:block;width:100%;height:{START_HEIGHT_PX}px;border:0;margin:0;padding:0"
    return "\n".join(
        [
            "<!-- An interactive explorer of one attention head. Paste this whole block into a page's",
            "     <body>: it runs in a frame of its own (its own BokehJS and styles), as wide as the column",
            "     and as tall as its content. -->",
            '<div class="attention-head-embed" style="width:100%;max-width:100%;margin:1em 0">',
            f'<iframe title="{html.escape(title)}" style="{frame_style}"></iframe>',
            "<script>" + embed + "</script>",
            "</div>",
        ]
    )


def page_in(fragment: str) -> str:
    """The page a fragment puts into its frame (what `fragment_html` was given, with the height reports)."""
    start = fragment.index("frame.srcdoc = ") + len("frame.srcdoc = ")
    end = fragment.index(";\n})();\n</script>", start)
    return json.loads(fragment[start:end])
