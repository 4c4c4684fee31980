"""Where a served slider move's server CPU goes: per-function CPU time and the garbage collector's passes.

    .venv/bin/python bench/profile_server.py [ours|shape|t64|floor5] [--moves 60] [--windows 3]

Serves the app as bench/bench_latency.py does (`panel serve`), but through this file, which wraps a few
functions of Tornado, Bokeh, Panel and the explorer with a process-CPU timer (time.process_time, inclusive,
outermost call only) and counts the collector's passes by generation. Then a headless Chromium opens the
page, makes 5 warm-up moves and `--windows` windows of `--moves` timed moves; each window prints ms a move
per function next to the process's whole CPU (psutil), so what is not inside a wrapped function shows as
the difference. A profiler's own overhead is small here: a few wrapped calls a move, no tracing.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WRAPPED = (  # (module, function): the path of one move through the server, outermost first
    ("asyncio.events", "Handle._run"),  # every callback of the event loop
    ("bokeh.document.document", "Document.apply_json_patch"),  # the browser's change applied
    ("bokeh.core.serialization", "Deserializer.__init__"),
    ("widgets.state", "HeadState.set_x"),  # the explorer's move: the core once, then the views
    ("widgets.explorer", "HeadExplorer._redraw"),
    ("widgets.page", "HeadPage.update"),
    ("panel.io.document", "write_events"),  # the reply: serialised and written
    ("bokeh.protocol", "Protocol.create"),
    ("bokeh.core.serialization", "Serializer.__init__"),
    ("tornado.websocket", "WebSocketHandler.write_message"),
    ("app.serving", "_return_freed_memory"),
)


def serve_wrapped(out: str, argv: list[str]) -> None:
    """Run `panel serve ARGV` with WRAPPED timed; SIGUSR1 starts a window, SIGUSR2 writes it to OUT."""
    sys.path.insert(0, str(ROOT))
    acc: dict[str, list] = {}
    clock = time.process_time

    def wrap(modname: str, qual: str) -> None:
        owner, _, attr = qual.rpartition(".")
        obj = importlib.import_module(modname)
        for part in owner.split(".") if owner else []:
            obj = getattr(obj, part)
        f, key = getattr(obj, attr), f"{modname}.{qual}"
        acc[key] = [0.0, 0, 0]  # seconds, calls, depth

        @functools.wraps(f)
        def timed(*a, **k):
            rec = acc[key]
            rec[2] += 1
            t = clock() if rec[2] == 1 else None
            try:
                return f(*a, **k)
            finally:
                rec[2] -= 1
                if t is not None:
                    rec[0] += clock() - t
                    rec[1] += 1

        setattr(obj, attr, timed)

    for modname, qual in WRAPPED:
        wrap(modname, qual)
    for g in range(3):
        acc[f"GC pass, generation {g}"] = [0.0, 0, 0]
    started: dict = {}

    def on_gc(phase, info):
        if phase == "start":
            started["t"] = clock()
        else:
            rec = acc[f"GC pass, generation {info['generation']}"]
            rec[0] += clock() - started.get("t", clock())
            rec[1] += 1

    gc.callbacks.append(on_gc)
    window: dict = {}

    def begin(*_):
        for rec in acc.values():
            rec[0], rec[1] = 0.0, 0
        window["t0"] = clock()

    def end(*_):
        res = {k: (v[0], v[1]) for k, v in acc.items()}
        res["the whole process"] = (clock() - window["t0"], 1)
        Path(out).write_text(json.dumps(res))

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)
    from panel.command import main

    sys.argv = ["panel", *argv]
    main()


def drive(key: str, n: int, windows: int) -> None:
    import tempfile

    import psutil
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import CHROMIUM, CHROMIUM_FLAGS

    from app.serving import free_port, stop_process, wait_for_http
    from bench.bench_latency import APPS, cpu_seconds, moves, open_page

    script, slider, wait_text = APPS[key]
    port = free_port()
    out = Path(tempfile.gettempdir()) / f"profile-server-{key}.json"
    log = open(Path(tempfile.gettempdir()) / f"profile-server-{key}.log", "w")  # noqa: SIM115
    argv = ["serve", str(ROOT / script), "--port", str(port), "--address", "127.0.0.1",
            "--allow-websocket-origin", f"127.0.0.1:{port}"]
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(out), *argv], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/{Path(script).stem}", timeout=120)
        server = psutil.Process(proc.pid)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page, _ = open_page(browser, f"http://127.0.0.1:{port}/{Path(script).stem}", wait_text)
            moves(page, slider, 5)
            for w in range(windows):
                proc.send_signal(signal.SIGUSR1)
                time.sleep(0.05)
                c0 = cpu_seconds(server)
                moves(page, slider, n)
                cpu = (cpu_seconds(server) - c0) * 1000 / n
                proc.send_signal(signal.SIGUSR2)
                time.sleep(0.3)
                print(f"{key}, window {w + 1}: {cpu:.2f} ms of the process's CPU a move (psutil)")
                for name, (t, calls) in sorted(json.loads(out.read_text()).items(), key=lambda kv: -kv[1][0]):
                    if calls:
                        print(f"  {t * 1000 / n:6.2f} ms  {calls / n:6.2f} calls a move  {name}")
            browser.close()
    finally:
        stop_process(proc)
        log.close()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_wrapped(sys.argv[2], sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("app", nargs="?", default="ours", choices=["ours", "shape", "t64", "floor5", "floor"])
    ap.add_argument("--moves", type=int, default=60)
    ap.add_argument("--windows", type=int, default=3)
    args = ap.parse_args()
    drive(args.app, args.moves, args.windows)


if __name__ == "__main__":
    main()
