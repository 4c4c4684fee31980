"""The explorer in a real JupyterLab, offline.

README's notebook cell (`pn.extension(inline=True)`, then `HeadExplorer()`) in JupyterLab, started
headless on a free local port with a token, driven by Chromium with every request that does not go to
that JupyterLab aborted (as on a laptop with no internet): the cells run, the explorer is drawn,
static/bokeh_seam.js is in force there too, and a keyboard move on a slider gives the core's weights.
Executing the notebook without a browser (tests/test_embed.py) passes even when nothing is drawn.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys

import numpy as np
import pytest

from app.serving import free_port, wait_for_http
from bench.common import block_all_but
from tests.conftest import ROOT
from widgets.state import HeadState

# README's cell, after a line that makes this checkout importable from the notebook's folder.
CELLS = [
    f"import sys\nsys.path.insert(0, {str(ROOT)!r})",
    "import panel as pn\npn.extension(inline=True)\n\n"
    "from widgets.explorer import HeadExplorer\nHeadExplorer()",
]


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """JupyterLab on loopback with a notebook holding README's cell; yields (base URL, token, notebook)."""
    import nbformat  # here, not at the top: its import takes most of a second in every pytest-xdist worker

    home = tmp_path_factory.mktemp("lab")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, home / "explorer.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        # settings, workspaces and runtime files of this run only, not the user's
        "JUPYTER_CONFIG_DIR": str(home / ".config"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / ".settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / ".workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / ".runtime"),
    }
    args = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
        "--allow-root", "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    log = open(home / "lab.log", "w")  # noqa: SIM115
    # its own process group, so the kernel is stopped together with the server (not after it, one by one)
    proc = subprocess.Popen(
        args, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/api/status?token={token}", timeout=60)
        yield base, token
    finally:
        # nothing of this run needs a graceful shutdown: ask, wait briefly, then end what is left
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


def test_readme_cell_draws_the_explorer_offline(jupyterlab, browser, artifacts, stock_bokeh):
    base, token = jupyterlab
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    blocked = block_all_but(context, (base, "data:", "blob:", "about:"))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/lab/tree/explorer.ipynb?token={token}")
    page.locator(".jp-Notebook").wait_for(timeout=60000)
    # the kernel is up and idle (the status bar says so)
    page.locator("#jp-bottom-panel, .jp-StatusBar-Widget").first.get_by_text("Idle").wait_for(timeout=60000)
    page.locator(".jp-Notebook").click()
    page.keyboard.press("Escape")
    page.get_by_text("Run", exact=True).first.click()
    page.get_by_text("Run All Cells", exact=True).click()

    # the explorer is drawn, with the chapter's numbers, and the BokehJS patch is in force
    page.wait_for_function(
        "() => window.Bokeh && Bokeh.documents.some(d => d.get_model_by_name('steps')"
        " && d.get_model_by_name('steps').text.includes('0.13, 0.56, 0.14, 0.18'))",
        timeout=120000,
    )
    handle = page.locator(".jp-OutputArea .x-slider").nth(3 * 3 + 0).locator(".noUi-handle")
    handle.wait_for(timeout=30000)
    if not stock_bokeh:
        page.wait_for_function("() => window.BokehSeam && BokehSeam.patches.styleSheets === true")
    doc = "Bokeh.documents.find(d => d.get_model_by_name('steps'))"

    # a keyboard move: the kernel computes, the page shows the core's weights
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"() => {doc}.get_model_by_name('x-3-0').value !== 0.2")
    state = HeadState()
    assert state.set_x(3, 0, page.evaluate(f"() => {doc}.get_model_by_name('x-3-0').value"))
    expected = np.where(state.head.future, np.nan, state.head.weights).ravel()
    page.wait_for_function(
        "([expected]) => { const v = Array.from(" + doc + ".get_model_by_name('weights-cells').data.value);"
        " return v.length === expected.length && v.every((x, k) => expected[k] === null"
        " ? (x === null || Number.isNaN(x)) : Math.abs(x - expected[k]) < 1e-9); }",
        arg=[json.loads(json.dumps([None if np.isnan(v) else float(v) for v in expected]))],
        timeout=30000,
    )
    page.screenshot(path=str(artifacts / "jupyterlab-offline.png"))
    assert blocked == [], blocked
    assert errors == [], errors
    context.close()
