"""static/when_bokeh.js, the one loader of the scripts that patch BokehJS (static/bokeh_patch.js,
static/send_latest.js), in Node with a stand-in window and document: each of the ways BokehJS can arrive
installs the patch once. (In the pages themselves: tests/test_served_app.py, tests/test_export.py,
tests/test_notebook_offline.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.node_batch import NODE

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

STATIC = Path(__file__).resolve().parents[1] / "static"

# Four pages: BokehJS there already; a page still loading (BokehJS comes before DOMContentLoaded); a
# notebook (the page loaded, BokehJS arrives 120 ms later); the loader's file run twice.
DRIVER = """
const fs = require('fs'), vm = require('vm');
const loader = fs.readFileSync(process.argv[1], 'utf8');
const bokeh = {require: () => ({})};
function page(readyState, bokehNow) {
  const listeners = [];
  const window = {Bokeh: bokehNow ? bokeh : undefined};
  const document = {readyState, addEventListener: (name, f) => listeners.push([name, f])};
  const context = vm.createContext({window, document, setInterval, clearInterval, Date});
  vm.runInContext(loader, context);
  const calls = [];
  window.whenBokeh(() => calls.push(window.Bokeh === bokeh));
  return {window, document, listeners, calls, context};
}
(async () => {
  const out = {};
  out.present = page('complete', true).calls;
  const loading = page('loading', false);
  const before = loading.calls.slice();
  loading.window.Bokeh = bokeh;
  loading.listeners.filter(([n]) => n === 'DOMContentLoaded').forEach(([, f]) => f());
  out.loading = [before, loading.calls];
  const notebook = page('complete', false);
  setTimeout(() => { notebook.window.Bokeh = bokeh; }, 120);
  await new Promise((r) => setTimeout(r, 400));
  out.notebook = notebook.calls;
  const twice = page('complete', true);
  const first = twice.window.whenBokeh;
  vm.runInContext(loader, twice.context);
  out.defined_once = twice.window.whenBokeh === first;
  console.log(JSON.stringify(out));
})();
"""


def test_every_way_bokehjs_arrives_installs_once():
    proc = subprocess.run([NODE, "-e", DRIVER, str(STATIC / "when_bokeh.js")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["present"] == [True]  # at once
    assert out["loading"] == [[], [True]]  # not before DOMContentLoaded, then with BokehJS there
    assert out["notebook"] == [True]  # found by looking again
    assert out["defined_once"] is True


def test_the_patches_install_through_the_shared_loader():
    for name in ("bokeh_patch.js", "send_latest.js"):
        text = (STATIC / name).read_text()
        assert "whenBokeh(install)" in text and "DOMContentLoaded" not in text and "setInterval" not in text
