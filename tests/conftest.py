"""Shared test fixtures: Debian's Chromium for pytest-playwright, a served app, artifacts.

Browser tests use pytest-playwright's `page` / `browser` / `context` fixtures; the launch arguments below
point them at /usr/bin/chromium (Playwright's own browser download is never used). `context` is one per
worker, kept warm and cleaned after each test (WarmContext); a test that needs browsers of its own (pages
that must not share cookies, a proxy) makes them with `browser.new_context`. `served_app` starts
`panel serve` on a free local port and stops it afterwards.

`--stock-bokeh` (or STOCK_BOKEH=1) runs every page of the session on a BokehJS that reports another
version than static/bokeh_seam.js was written for, so the seam installs nothing and the pages take
BokehJS's public way everywhere: every behaviour test must pass so (the seam buys speed, never
correctness); the tests of the seam itself (marked `seam`) are skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

# A run starts many Python processes (pytest-xdist's workers, servers, the launcher's): each compiles our
# sources, and pytest rewrites each test module's asserts, unless the bytecode is kept. Where the
# environment turns that off (PYTHONDONTWRITEBYTECODE), the run keeps it anyway, in __pycache__ as usual;
# the processes it starts read it (they write none).
sys.dont_write_bytecode = False

import pytest  # noqa: E402  (after the line above)

from app.serving import free_port, stop_process, wait_for_http  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Debian's nginx for the classroom tests (None when it is not installed: those tests are skipped).
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
# What a browser test counts as a problem in a page's console: an error or a warning (static/bokeh_seam.js
# says a missing piece as an error; BokehJS and Panel warn of what they could not do).
CONSOLE_PROBLEMS = ("error", "warning")

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


# Moves the slider `name` once and counts the <style> elements rewritten meanwhile, in the page and in
# every shadow root: with the same text they already held ("unchanged") or with new text ("changed").
# static/bokeh_seam.js (styleSheets) exists to keep "unchanged" at 0 (each such write costs a style
# recalculation).
STYLE_WRITES_DURING_A_MOVE = """async (name) => {
  const roots = [document];
  const walk = (root) => root.querySelectorAll("*").forEach((el) => {
    if (el.shadowRoot) { roots.push(el.shadowRoot); walk(el.shadowRoot); }
  });
  walk(document);
  const counts = {unchanged: 0, changed: 0};
  const count = (records) => {
    for (const r of records) {
      if (r.type !== "childList" || r.target.nodeName !== "STYLE") continue;
      const before = [...r.removedNodes].map((n) => n.textContent).join("");
      const after = [...r.addedNodes].map((n) => n.textContent).join("");
      counts[before === after ? "unchanged" : "changed"] += 1;
    }
  };
  const watch = new MutationObserver(count);
  roots.forEach((root) => watch.observe(root, {childList: true, subtree: true}));
  const doc = Bokeh.documents[0];
  const slider = doc.get_model_by_name(name);
  const source = doc.get_model_by_name("weights-cells");
  const updated = new Promise((done) => source.change.connect(() => done()));
  slider.value = slider.value < slider.end - 0.1 ? slider.value + 0.05 : slider.value - 0.05;
  await updated;
  for (let k = 0; k < 3; k++) await new Promise((r) => requestAnimationFrame(() => r()));
  count(watch.takeRecords());
  watch.disconnect();
  return counts;
}"""


# A served page's server draws every move from now on (widgets/channel.py `drawn_by`), as it does when the
# page's own drawing fails: what the server answers is what shows. Waits for the page's `follow` to have
# taken the drawing first (static/explorer_page.js).
SERVER_DRAWS = """() => new Promise((done) => {
  const check = () => {
    const doc = window.Bokeh && Bokeh.documents[0];
    const channel = doc && doc.get_model_by_name("head-channel");
    if (channel && channel.drawn_by === "page") {
      channel.drawn_by = "server";
      done();
    } else {
      setTimeout(check, 20);
    }
  };
  check();
})"""


def classroom_dry_run(*flags: str) -> str:
    """What `python -m app.classroom FLAGS --dry-run` prints."""
    return subprocess.run(
        [sys.executable, "-m", "app.classroom", *flags, "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout

# Run before any script of a page: window.Bokeh, once BokehJS sets it, reports another version (a Proxy of
# BokehJS's own object, the rest unchanged), as a page with another BokehJS would.
OTHER_BOKEH_VERSION = """(() => {
  let bokeh;
  Object.defineProperty(window, "Bokeh", {
    configurable: true,
    get() { return bokeh; },
    set(value) {
      bokeh = value && value.__bokeh__ && !value.__otherVersion ? new Proxy(value, {
        get(target, key, receiver) {
          if (key === "version") return target.version + "-other";
          if (key === "__otherVersion") return true;
          return Reflect.get(target, key, receiver);
        },
      }) : value;
    },
  });
})();"""
# The seam's one error about it, kept out of the console where every test would count it
# (tests/test_seam.py checks that it is said).
QUIET_SEAM_ERROR = """(() => {
  const error = console.error;
  console.error = function (...args) {
    if (!String(args[0]).startsWith("bokeh_seam.js: written for BokehJS")) error.apply(this, args);
  };
})();"""


def pytest_addoption(parser):
    parser.addoption(
        "--stock-bokeh",
        action="store_true",
        default=os.environ.get("STOCK_BOKEH") == "1",
        help="run every page on a BokehJS of another version: static/bokeh_seam.js installs nothing",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "seam: tests static/bokeh_seam.js itself (skipped with --stock-bokeh)")


# The slowest modules, slowest first (seconds of one run, tests/*.py alone): pytest-xdist hands a module
# to a worker as a whole (--dist loadfile, pyproject.toml), in the order collected, so these start at once
# instead of being left for the end, when the other workers would have nothing to do.
SLOW_FIRST = (
    "test_a11y_browser.py", "test_actions.py", "test_fault.py", "test_book_column.py", "test_class.py",
    "test_class_ask.py",
    "test_train_browser.py", "test_export.py", "test_classroom.py", "test_lessons_browser.py",
    "test_tiles_and_rows_browser.py", "test_served_app.py", "test_paint.py", "test_explorer_parity.py",
    "test_own_moves.py", "test_train_parity.py", "test_lab_browser.py", "test_cluster.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable: a module keeps its order
    if config.getoption("--stock-bokeh"):
        skip = pytest.mark.skip(reason="--stock-bokeh: static/bokeh_seam.js is off")
        pageless = pytest.mark.skip(reason="--stock-bokeh runs again what runs in a browser; this opens none")
        for item in items:
            if item.get_closest_marker("seam") is not None:
                item.add_marker(skip)
            elif "browser_name" not in getattr(getattr(item, "callspec", None), "params", {}):
                item.add_marker(pageless)


@pytest.fixture(scope="session", autouse=True)
def stock_bokeh(pytestconfig):
    """With --stock-bokeh, every browser context and page made in the session runs on BokehJS as it is."""
    if not pytestconfig.getoption("--stock-bokeh"):
        yield False
        return
    from playwright.sync_api import Browser

    script = OTHER_BOKEH_VERSION + "\n" + QUIET_SEAM_ERROR
    new_context, new_page = Browser.new_context, Browser.new_page

    def context_with(self, *args, **kwargs):
        context = new_context(self, *args, **kwargs)
        context.add_init_script(script)
        return context

    def page_with(self, *args, **kwargs):
        page = new_page(self, *args, **kwargs)
        page.add_init_script(script)
        return page

    Browser.new_context, Browser.new_page = context_with, page_with
    try:
        yield True
    finally:
        Browser.new_context, Browser.new_page = new_context, new_page


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS




@contextlib.contextmanager
def serve(app: str = "app/main.py", *extra: str, port: int | None = None, log: Path | None = None):
    """Run `panel serve APP` on loopback; yield its base URL (http://127.0.0.1:PORT)."""
    with serve_process(app, *extra, port=port, log=log) as (base, _):
        yield base


@contextlib.contextmanager
def serve_process(app: str = "app/main.py", *extra: str, port: int | None = None, log: Path | None = None):
    """As `serve`, yielding (base URL, the server's process)."""
    port = port or free_port()
    args = [sys.executable, "-m", "panel", "serve", str(ROOT / app), "--port", str(port),
            "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}",
            "--allow-websocket-origin", f"localhost:{port}", *extra]
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/{Path(app).stem}")
        yield base, proc
    finally:
        stop_process(proc)
        if log:
            out.close()


@pytest.fixture(scope="session")
def built_export(tmp_path_factory) -> Path:
    """A folder holding the export (head.html, made by app/export.py's command line) and its fragment
    (fragment.html), built once for the whole run and shared by every pytest-xdist worker: a build costs
    seconds of CPU, and many modules open it. Tests copy what they change (`export_copy`)."""
    from app.export import export, main

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the workers' common folder
    folder = shared / "built-export"
    with open(shared / "built-export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker builds; the others wait for it, then read
        if not (folder / "built").exists():
            folder.mkdir(exist_ok=True)
            assert main([str(folder / "head.html")]) == 0
            export(folder / "fragment.html", fragment=True)
            (folder / "built").touch()
    return folder


@pytest.fixture(scope="module")
def export_copy(built_export, tmp_path_factory) -> Path:
    """The module's own folder with a copy of the shared export and fragment, to write beside or change."""
    folder = tmp_path_factory.mktemp("export")
    for name in ("head.html", "fragment.html"):
        shutil.copyfile(built_export / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def served_app(tmp_path_factory):
    """The explorer served for the whole run (one server for each pytest-xdist worker: a start costs seconds
    of CPU); yields the URL of /main. Each page opens its own session, so tests share nothing else."""
    log = tmp_path_factory.mktemp("serve") / "panel.log"
    with serve(log=log) as base:
        yield f"{base}/main"
    text = log.read_text()
    assert "Traceback" not in text, f"the server logged an exception:\n{text[-3000:]}"


class WarmContext:
    """One browser context per pytest-xdist worker, kept open between tests, that each test gets clean.

    A page opened in a context that already exists costs Chromium about a third less CPU than the same page in
    a new context (measured on the export: ~1.0 against ~1.6 CPU-s a load), and the suite opens ~200 pages.
    Each test still gets a page of its own; after it, its pages are closed, its routes removed, cookies, web
    storage and permissions cleared. What cannot be undone (an init script, an exposed function, extra
    headers, offline, a geolocation) marks the context spent: it is closed, and the next test gets a new one.
    A blank page stays open in it: without one, the next page costs what it would in a new context."""

    SPENDING = (
        "add_init_script", "expose_binding", "expose_function", "set_extra_http_headers", "set_offline",
        "set_geolocation", "route_from_har", "route_web_socket",
    )  # fmt: skip

    def __init__(self, browser, args: dict):
        self.browser, self.args, self.context, self.spent = browser, args, None, False

    def open(self):
        if self.context is None or self.context.is_closed():
            self.context = self.browser.new_context(**self.args)
            self.context.new_page()  # the blank page kept open
            self.spent = False
            for name in self.SPENDING:
                setattr(self.context, name, self._spending(getattr(self.context, name)))
        return self.context

    def _spending(self, method):
        def call(*args, **kwargs):
            self.spent = True
            return method(*args, **kwargs)
        return call

    def clean(self, kept: list) -> None:
        context = self.context
        if context is None or context.is_closed():
            return
        if self.spent:
            context.close()
            return
        for page in context.pages:
            if page not in kept:
                page.close()
        context.unroute_all(behavior="ignoreErrors")
        context.set_storage_state({"cookies": [], "origins": []})
        context.clear_permissions()

    def close(self) -> None:
        if self.context is not None and not self.context.is_closed():
            self.context.close()


@pytest.fixture(scope="session")
def warm_context(browser, browser_context_args, stock_bokeh):
    warm = WarmContext(browser, browser_context_args)  # made after stock_bokeh: its context has its script
    yield warm
    warm.close()


@pytest.fixture
def context(warm_context):
    """pytest-playwright's `context` (and so its `page`), from the worker's warm context (WarmContext)."""
    context = warm_context.open()
    kept = list(context.pages)
    yield context
    warm_context.clean(kept)
