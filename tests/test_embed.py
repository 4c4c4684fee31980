"""The served explorer embedded in another site's page, and the explorer in a notebook.

(a) A plain page on another local port embeds the served app twice: with
    `bokeh.embed.server_document` (autoload script) and with an <iframe>.
(b) A small notebook runs headless through nbclient and shows the explorer.
"""

from __future__ import annotations

import html
import json
import shutil
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from bokeh.embed import server_document

from core.trace import trace
from tests.conftest import ROOT, free_port, serve
from widgets.state import HeadState
from widgets.viewdata import step_line_html

CHAPTER_WEIGHTS = "weights = [0.13, 0.56, 0.14, 0.18]"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def host_page(tmp_path_factory):
    """The served app on one port and a plain page that embeds it on another; yields the page's URL."""
    site = tmp_path_factory.mktemp("site")
    embed_port = free_port()
    log = site / "panel.log"
    origin = f"127.0.0.1:{embed_port}"
    with serve("app/main.py", "--allow-websocket-origin", origin, log=log) as base:
        script = server_document(f"{base}/main")
        (site / "index.html").write_text(
            '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Chapter 3</title>'
            '<link rel="icon" href="data:,"></head><body>'
            "<h1>Chapter 3: attention</h1><p>Now do it live.</p>"
            f'<div id="embedded">{script}</div>'
            "<h2>The same, in an iframe</h2>"
            f'<iframe src="{html.escape(base)}/main" title="explorer" width="1400" height="1500"></iframe>'
            "</body></html>"
        )
        httpd = ThreadingHTTPServer(("127.0.0.1", embed_port), partial(QuietHandler, directory=str(site)))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{origin}/index.html"
        finally:
            httpd.shutdown()
            httpd.server_close()
    text = log.read_text()
    assert "Traceback" not in text, f"the server logged an exception:\n{text[-3000:]}"


def steps(target) -> str:
    return target.evaluate("() => Bokeh.documents[0].get_model_by_name('steps').text")


def move_and_check(target, t: int, c: int) -> None:
    """Press ArrowRight on token t's component c and wait for the core's new weights line."""
    handle = target.locator(".x-slider").nth(t * 3 + c).locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    name = f"x-{t}-{c}"
    target.wait_for_function(
        f"() => Bokeh.documents[0].get_model_by_name({name!r}).value !== {HeadState().X[t][c]}"
    )
    value = target.evaluate(f"() => Bokeh.documents[0].get_model_by_name({name!r}).value")
    state = HeadState()
    assert state.set_x(t, c, value)
    line = trace(state.head, state.query, state.labels).steps[4].lines[-1]
    line = step_line_html(line)  # as the steps panel holds it
    assert line != CHAPTER_WEIGHTS
    target.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('steps').text.includes(" + json.dumps(line) + ")",
        timeout=20000,
    )


def test_server_document_and_iframe_embeds(host_page, page, artifacts):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(host_page)
    page.locator("#embedded").get_by_text(CHAPTER_WEIGHTS).wait_for(timeout=60000)
    frame = page.frame_locator("iframe")
    frame.get_by_text(CHAPTER_WEIGHTS).wait_for(timeout=60000)
    page.get_by_text("Now do it live.").wait_for()

    move_and_check(page, 3, 0)  # the server_document embed
    inner = next(f for f in page.frames if f != page.main_frame)
    move_and_check(inner, 3, 1)  # the iframe: its own session
    assert CHAPTER_WEIGHTS.replace(" ", "") not in steps(page).replace(" ", "")
    page.screenshot(path=str(artifacts / "embed-server.png"), full_page=True)
    assert errors == []


NOTEBOOK_CELLS = [
    "import sys\nsys.path.insert(0, {root!r})",
    "import panel as pn\npn.extension(inline=True)",  # README's cell: no CDN (tests/test_notebook_offline.py)
    "from widgets.explorer import HeadExplorer\nexplorer = HeadExplorer()\nexplorer",
    "assert 'weights = <span class=\"vec\">[0.13, 0.56, 0.14, 0.18]</span>' in explorer.page.steps.text\n"
    "print('explorer ok')",
]


def test_notebook_runs_the_explorer(tmp_path):
    """Executes a small notebook with the venv's Python as the kernel (no kernelspec install needed)."""
    import nbformat  # here, not at the top: its import takes most of a second in every pytest-xdist worker
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src.format(root=str(ROOT))) for src in NOTEBOOK_CELLS]
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    # The kernel is this interpreter, whatever "python3" points to on PATH.
    client.kernel_manager_class = _venv_kernel_manager()
    client.execute()
    nbformat.write(nb, tmp_path / "notebook_smoke.ipynb")

    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = nb.cells[2]["outputs"]
    mimetypes = {m for o in shown if o.get("output_type") == "execute_result" for m in o["data"]}
    assert any("bokeh" in m or "holoviews" in m or "panel" in m for m in mimetypes), mimetypes
    streams = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "explorer ok" in streams


def _venv_kernel_manager():
    from jupyter_client.manager import KernelManager

    class VenvKernelManager(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            if cmd and Path(cmd[0]).name.startswith("python"):
                cmd[0] = sys.executable
            return cmd

    assert shutil.which(sys.executable)
    return VenvKernelManager
