"""Classroom load bench: N real websocket sessions (bokeh.client) + a few Chromium pages.

    python bench/load_test.py --sessions 50 --duration 60            # starts its own server
    python bench/load_test.py --sessions 50 --duration 60 --through-nginx --processes 2
    python bench/load_test.py --target http://127.0.0.1:5006/main    # an already running server
    python bench/load_test.py --rounds 3 --floor bench/floor_app.py   # interleaved: app, floor, app, ...

Each session moves slider x-3-0 four times a second and times move → the
server's new 'weights-cells' data arriving back on its client document.
Reports latency percentiles, errors, cross-session leaks, server CPU and
RSS (idle, with N sessions, across 1000 moves per session, 60 s after
close), and two faults: a client killed mid-drag (SIGKILL, no close) and a
client flooding moves while the others keep going.  With --floor, whole runs
alternate between the app and the floor page (a server of its own each run)
for --rounds rounds, and the report gives each round's ratios (p50, p95, CPU
and memory per session, app / floor), their medians and the load average of
every run; the floor's weights are not the head's, so its "wrong" count means
nothing.  A bench, not a test.  Only loopback is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MOVE_TIMEOUT = 10.0
SLIDER = "x-3-0"
SOURCE = "weights-cells"


# -- the Bokeh protocol, spoken directly over a websocket ---------------------------
#
# Why not bokeh.client?  Panel only sends a session's changes once the page has
# announced itself with Bokeh's `document_ready` event (BokehJS sends it after the
# first render; panel/io/state.py `_on_load` then sets `state._connected[doc]`).
# Until then panel/io/document.py `hold()` drops every model change of a callback
# (`_drain_unconnected_events`: "the Document is serialized in full once the
# session connects").  `bokeh.client.pull_session` never sends `document_ready`,
# so the server computed every move and sent nothing back.  `Client` below (a
# real bokeh.client document, used by the tests) sends it; `Wire` (used by the
# load) speaks the same protocol with one asyncio loop for many sessions, so that
# a client process spends ~nothing per message and the server gets the CPU.


def encode_number(v):
    """A value as Bokeh puts it on the wire (NaN and ±inf are tagged, not bare JSON)."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"type": "number", "value": "nan" if v != v else ("+inf" if v > 0 else "-inf")}
    return v


def decode_numbers(col, buffers) -> list[float]:
    """A column of numbers from a ColumnDataChanged event: a list (tagged NaN) or an ndarray."""
    import base64

    import numpy as np

    if isinstance(col, dict) and col.get("type") == "ndarray":
        arr = col["array"]
        if isinstance(arr, dict) and arr.get("type") == "bytes":
            data = arr["data"]
            raw = buffers[data["id"]] if isinstance(data, dict) else base64.b64decode(data)
            return np.frombuffer(raw, dtype=col["dtype"]).astype(float).tolist()
        if isinstance(arr, dict) and arr.get("type") == "ref":
            return np.frombuffer(buffers[arr["id"]], dtype=col["dtype"]).astype(float).tolist()
        col = arr
    return [
        float(x["value"]) if isinstance(x, dict) else float("nan") if x is None else float(x) for x in col
    ]


def entries(data) -> dict:
    if isinstance(data, dict) and data.get("type") == "map":
        return dict(data.get("entries", []))
    return dict(data)


def find_models(doc_json, names) -> dict:
    """{name: (id, attributes)} for the named models in a PULL-DOC-REPLY."""
    found: dict = {}
    todo = [doc_json]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            attrs = x.get("attributes")
            if x.get("type") == "object" and isinstance(attrs, dict) and attrs.get("name") in names:
                found.setdefault(attrs["name"], (x["id"], attrs))
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return found


_EXPECTED: dict = {}


def expected_weights(value: float):
    """The weights a fresh session shows after x-3-0 := value (the chapter preset otherwise)."""
    import numpy as np

    from widgets.state import HeadState

    if value not in _EXPECTED:
        s = HeadState()
        s.set_x(3, 0, value)
        _EXPECTED[value] = np.asarray(s.head.weights, dtype=float).ravel()
    return _EXPECTED[value]


def shows(weights, value: float) -> bool:
    import numpy as np

    exp = expected_weights(value)
    got = np.nan_to_num(np.asarray(weights, dtype=float), nan=0.0)  # masked cells are NaN on screen
    return got.shape == exp.shape and bool(np.allclose(got, exp, atol=1e-9))


class Wire:
    """One browser-like session: websocket, ACK, PULL-DOC, document_ready; then moves and replies."""

    NAMES = (SLIDER, SOURCE, "message", "x_scale", "labels")

    def __init__(self, url: str, names=(), cookie: str | None = None, args: str = ""):
        self.url = url
        self.names = tuple(self.NAMES) + tuple(names)
        self.cookie = cookie  # e.g. nginx's attn_backend=HOST:PORT, to reach one backend behind it
        self.backend = None  # the backend nginx says answered (X-Attn-Backend), behind nginx
        self.args = args  # the session's link parameters (a query string), as a page's address gives them
        self.ids: dict[str, str] = {}
        self.attrs: dict[str, dict] = {}
        self.weights: list[float] = []
        self.updates = 0  # ColumnDataChanged events on weights-cells received
        self.t_update = 0.0
        self.message = ""
        self.foreign = 0  # server writes to our slider of a value we never sent
        self.server_errors: list[str] = []
        self.messages_in = 0
        self.sent_values: set = set()
        self.closed = False
        self._n = 0
        self._replies: dict[str, asyncio.Future] = {}
        self._updated: asyncio.Event | None = None
        self._reader: asyncio.Task | None = None
        self.ws = None

    # wire format: header, metadata, content, then (ref, bytes) per buffer
    async def _recv(self):
        frag = await self.ws.read_message()
        if frag is None:
            return None
        header = json.loads(frag)
        json.loads(await self.ws.read_message())  # metadata
        content = json.loads(await self.ws.read_message())
        buffers = {}
        for _ in range(header.get("num_buffers", 0)):
            ref = json.loads(await self.ws.read_message())
            buffers[ref["id"]] = await self.ws.read_message()
        return header, content, buffers

    async def send(self, msgtype: str, content: dict) -> str:
        self._n += 1
        msgid = f"{id(self):x}-{self._n}"
        await self.ws.write_message(json.dumps({"msgid": msgid, "msgtype": msgtype}))
        await self.ws.write_message("{}")
        await self.ws.write_message(json.dumps(content, allow_nan=False))
        return msgid

    async def request(self, msgtype: str, content: dict, timeout: float = MOVE_TIMEOUT):
        fut = asyncio.get_running_loop().create_future()
        msgid = await self.send(msgtype, content)
        self._replies[msgid] = fut
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._replies.pop(msgid, None)

    async def open(self, timeout: float = 120.0, token: str | None = None) -> Wire:
        """Connect and pull the document; `token`: a page's (its session built by the page's GET), else a
        new session is made at the websocket."""
        from bokeh.util.token import generate_jwt_token, generate_session_id
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        self._updated = asyncio.Event()
        host, _, path = self.url.split("://", 1)[1].partition("/")
        req = HTTPRequest(
            f"ws://{host}/{path}/ws" + (f"?{self.args}" if self.args else ""),
            headers={"Origin": f"http://{host}", **({"Cookie": self.cookie} if self.cookie else {})},
            connect_timeout=timeout,
            request_timeout=timeout,
        )
        token = token or generate_jwt_token(generate_session_id())
        self.ws = await asyncio.wait_for(
            websocket_connect(req, subprotocols=["bokeh", token], max_message_size=1 << 30), timeout
        )
        self.ws.protocol.set_nodelay(True)  # as browsers do
        self.backend = self.ws.headers.get("X-Attn-Backend")
        ack = await asyncio.wait_for(self._recv(), timeout)
        if not ack or ack[0].get("msgtype") != "ACK":
            raise RuntimeError(f"expected ACK, got {ack and ack[0]}")
        await self.send("PULL-DOC-REQ", {})
        while True:
            msg = await asyncio.wait_for(self._recv(), timeout)
            if msg is None:
                raise RuntimeError("closed before PULL-DOC-REPLY")
            if msg[0].get("msgtype") == "PULL-DOC-REPLY":
                break
            if msg[0].get("msgtype") == "ERROR":
                raise RuntimeError(f"server error: {msg[1]}")
        found = find_models(msg[1]["doc"], self.names)
        if SLIDER not in found or SOURCE not in found:
            raise RuntimeError(f"{SLIDER} or {SOURCE} is not in the served document")
        self.ids = {k: v[0] for k, v in found.items()}
        self.attrs = {k: v[1] for k, v in found.items()}
        self.weights = decode_numbers(entries(self.attrs[SOURCE]["data"])["value"], msg[2])
        self.sent_values.add(self.attrs[SLIDER].get("value"))
        self._reader = asyncio.ensure_future(self._read_loop())
        ready = {"type": "event", "name": "document_ready", "values": {"type": "map"}}
        await self.request(
            "PATCH-DOC",
            {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": ready}]},
            timeout,
        )
        return self

    async def _read_loop(self) -> None:
        try:
            while True:
                msg = await self._recv()
                if msg is None:
                    break
                self._dispatch(*msg)
        except Exception as exc:  # a protocol error is an error of the run, not a crash of the client
            self.server_errors.append(f"client reader: {exc!r}")
        finally:
            self.closed = True
            self._updated.set()
            for fut in self._replies.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("websocket closed"))

    def _dispatch(self, header, content, buffers) -> None:
        self.messages_in += 1
        reqid = header.get("reqid")
        if header.get("msgtype") == "ERROR":
            self.server_errors.append(str(content.get("text", content))[:300])
        if reqid in self._replies and not self._replies[reqid].done():
            self._replies[reqid].set_result((header, content))
        if header.get("msgtype") != "PATCH-DOC":
            return
        src, slider, message = self.ids[SOURCE], self.ids[SLIDER], self.ids.get("message")
        for ev in content.get("events", []):
            mid = (ev.get("model") or {}).get("id")
            kind = ev.get("kind")
            if mid == src and (
                kind == "ColumnDataChanged" or (kind == "ModelChanged" and ev.get("attr") == "data")
            ):
                data = entries(ev.get("data", ev.get("new")))
                if "value" in data:
                    self.weights = decode_numbers(data["value"], buffers)
                    self.updates += 1
                    self.t_update = time.perf_counter()
                    self._updated.set()
            elif mid == slider and kind == "ModelChanged" and ev.get("attr") == "value":
                if ev.get("new") not in self.sent_values:
                    self.foreign += 1
            elif mid == message and kind == "ModelChanged" and ev.get("attr") == "text":
                self.message = ev.get("new") or ""

    async def set(self, name: str, attr: str, value) -> None:
        """Send one property change (as a browser widget would), without waiting."""
        if name == SLIDER and attr == "value":
            self.sent_values.add(value)
        await self.send(
            "PATCH-DOC",
            {
                "events": [
                    {
                        "kind": "ModelChanged",
                        "model": {"id": self.ids[name]},
                        "attr": attr,
                        "new": encode_number(value),
                    }
                ]
            },
        )

    async def sync(self, timeout: float = MOVE_TIMEOUT) -> None:
        """A request/reply after everything sent so far: the server has handled it all."""
        await self.request("SERVER-INFO-REQ", {}, timeout)

    async def move(self, value: float, timeout: float = MOVE_TIMEOUT) -> float:
        """x-3-0 := value; seconds until the new weights arrive (TimeoutError if they do not)."""
        before = self.updates
        self._updated.clear()
        t0 = time.perf_counter()
        await self.set(SLIDER, "value", value)
        deadline = t0 + timeout
        while self.updates == before:
            if self.closed:
                raise ConnectionError("websocket closed")
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no weights from the server within {timeout} s")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._updated.wait(), left)
            self._updated.clear()
        return self.t_update - t0

    async def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)


class Client:
    """A real bokeh.client document (the tests use it): pull, announce document_ready, move, wait.

    Two more traps of bokeh.client, avoided here: ``force_roundtrip()`` parks the
    connection in WAITING_FOR_REPLY, whose ``run`` pops and DROPS every message that
    is not the reply (bokeh/client/states.py), so the PATCH-DOCs that arrive before
    the SERVER-INFO-REPLY are lost; and stopping the loop while a read is pending,
    then starting ``_loop_until`` again, puts two readers on one socket, which
    interleave fragments ("No 'msgtype' in header").  So: no force_roundtrip while
    waiting for patches, and a timed-out wait is the end of that client.
    """

    def __init__(self, url: str):
        import panel.models  # noqa: F401  (registers Panel's models in this process)
        from bokeh.client import pull_session
        from bokeh.events import DocumentReady

        import widgets.explorer  # noqa: F401  (and ours, HeadChannel, A11yNames…: the document holds them)

        self.session = pull_session(url=url)
        self.doc = self.session.document
        self.src = self.doc.get_model_by_name(SOURCE)
        self.slider = self.doc.get_model_by_name(SLIDER)
        if self.src is None or self.slider is None:
            raise RuntimeError(f"{SOURCE} or {SLIDER} is not in the served document")
        self.updates = 0
        self.doc.on_change(self._on_change)
        self.doc.callbacks.send_event(DocumentReady())  # what BokehJS sends after the first render
        self.session._connection.force_roundtrip()  # nothing to lose yet: no change is in flight

    def _on_change(self, event) -> None:
        if getattr(event, "model", None) is self.src:
            self.updates += 1

    def spin(self, predicate, timeout: float) -> bool:
        """Run the client's IO loop until predicate() or timeout; False on timeout (then close)."""
        conn = self.session._connection
        loop = conn._loop
        timed_out = []

        def give_up():
            timed_out.append(True)
            loop.stop()

        handle = loop.call_later(timeout, give_up)
        conn._loop_until(predicate)
        loop.remove_timeout(handle)
        return not timed_out

    def move(self, value: float, timeout: float = MOVE_TIMEOUT) -> float:
        """Set the slider; seconds until the server's weights arrive (TimeoutError if they do not)."""
        before = self.updates
        t0 = time.perf_counter()
        self.slider.value = value
        if not self.spin(lambda: self.updates > before, timeout):
            raise TimeoutError("no update from the server")
        return time.perf_counter() - t0

    def shows_own_state(self) -> bool:
        return shows(self.src.data["value"], self.slider.value)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.close()


def values_for(k: int):
    """A zig-zag of distinct slider values, offset per session so neighbours differ."""
    n = 0
    while True:
        yield round(-1.5 + ((k * 7 + n) % 61) * 0.05, 2)
        n += 1


async def one_move(url: str, value: float) -> float:
    w = await Wire(url).open()
    try:
        return await w.move(value)
    finally:
        await w.close()


async def run_session(url, k, start_at, stop_at, rate, moves, out):
    """One session: connect, wait for start_at, move at `rate`/s (0: back to back) to stop_at or `moves`."""
    out.setdefault("opened_at", None)
    out.update(k=k, lat=[], errors=[], foreign=0, wrong=0, sent=0, connected=False)
    w = Wire(url)
    try:
        await w.open()
        out["connected"] = True
        out["opened_at"] = time.time()
    except Exception as exc:
        out["errors"].append(f"connect: {exc!r}")
        await w.close()
        return
    try:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        vals = values_for(k)
        period = 1.0 / rate if rate else 0.0
        nxt = time.time()
        n = 0
        while time.time() < stop_at and (moves is None or n < moves):
            v = next(vals)
            try:
                out["lat"].append((time.time(), await w.move(v)))
            except Exception as exc:
                out["errors"].append(f"move: {exc!r}")
                break
            if not shows(w.weights, v):
                out["wrong"] += 1  # another session's weights, or stale ones
            out["sent"] += 1
            n += 1
            nxt += period
            await asyncio.sleep(max(0.0, nxt - time.time()))
    except Exception as exc:
        out["errors"].append(f"session: {exc!r}")
    finally:
        out["foreign"] = w.foreign
        out["errors"] += [f"server: {e}" for e in w.server_errors]
        await w.close()


async def run_flooder(url, start_at, stop_at, rate, out):
    """Send `rate` moves a second without waiting for answers; count what comes back."""
    out.update(k=-1, lat=[], errors=[], foreign=0, wrong=0, sent=0, received=0, connected=False)
    w = Wire(url)
    try:
        await w.open()
        out["connected"] = True
        await asyncio.sleep(max(0.0, start_at - time.time()))
        vals = values_for(10_000)
        t0 = time.time()
        while time.time() < stop_at:
            due = int((time.time() - t0) * rate) - out["sent"]
            for _ in range(max(0, min(due, 200))):
                await w.set(SLIDER, "value", next(vals))
                out["sent"] += 1
            await asyncio.sleep(0.005)
        out["received"] = w.updates
    except Exception as exc:
        out["errors"].append(f"flood: {exc!r}")
    finally:
        await w.close()


def client_process(url, ks, start_at, stop_at, rate, moves, queue, stagger=0.0, flood=False):
    """A process holding several sessions on one asyncio loop."""

    async def main():
        outs = [{} for _ in ks]
        tasks = []
        for k, out in zip(ks, outs):
            if flood:
                tasks.append(asyncio.ensure_future(run_flooder(url, start_at, stop_at, rate, out)))
            else:
                tasks.append(asyncio.ensure_future(run_session(url, k, start_at, stop_at, rate, moves, out)))
            await asyncio.sleep(stagger)
        _, pending = await asyncio.wait(tasks, timeout=max(1.0, stop_at - time.time() + 30))
        for t in pending:  # e.g. a session still opening at the end of the run: report what there is
            t.cancel()
            with contextlib.suppress(BaseException):
                await t
        return outs

    queue.put(asyncio.run(main()))


def vanishing_client(url, seconds):
    """Connect, drag back to back, then die with SIGKILL mid-drag: the socket is never closed."""

    async def main():
        w = await Wire(url).open()
        vals = values_for(999)
        t_end = time.time() + seconds
        while time.time() < t_end:
            await w.set(SLIDER, "value", next(vals))
            await asyncio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())


# -- Chromium pages -------------------------------------------------------------

BROWSER_SETUP = """() => {
  const doc = Bokeh.documents[0];
  const src = doc.get_model_by_name('weights-cells');
  window.__lt = {src, slider: doc.get_model_by_name('x-3-0'), res: null, t0: 0};
  const hit = () => {
    const r = window.__lt.res;
    if (r) { window.__lt.res = null; r(performance.now() - window.__lt.t0); }
  };
  src.connect(src.change, hit);
  src.connect(src.properties.data.change, hit);
  return true;
}"""
BROWSER_MOVE = """(v) => new Promise((resolve) => {
  const lt = window.__lt; lt.res = resolve; lt.t0 = performance.now();
  setTimeout(() => { if (lt.res === resolve) { lt.res = null; resolve(-1); } }, 10000);
  lt.slider.value = v;
})"""


def browser_process(url, pages, start_at, stop_at, rate, queue):
    out = {"lat": [], "errors": [], "pages": pages}
    try:
        from playwright.sync_api import sync_playwright

        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import CHROMIUM, CHROMIUM_FLAGS

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            tabs = []
            for _ in range(pages):
                page = browser.new_context().new_page()
                page.goto(url, timeout=120_000)
                page.wait_for_function(
                    "() => window.Bokeh && Bokeh.documents.length && "
                    "Bokeh.documents[0].get_model_by_name('weights-cells')",
                    timeout=120_000,
                )
                page.evaluate(BROWSER_SETUP)
                tabs.append(page)
            while time.time() < start_at:
                time.sleep(0.05)
            vals = [values_for(500 + i) for i in range(pages)]
            nxt = time.time()
            while time.time() < stop_at:
                for i, page in enumerate(tabs):
                    ms = page.evaluate(BROWSER_MOVE, next(vals[i]))
                    if ms < 0:
                        out["errors"].append("browser: no update within 10 s")
                    else:
                        out["lat"].append((time.time(), ms / 1000))
                nxt += 1.0 / rate
                time.sleep(max(0.0, nxt - time.time()))
            browser.close()
    except Exception as exc:
        out["errors"].append(f"browser: {exc!r}")
    queue.put(out)


# -- server metrics -------------------------------------------------------------

CLK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int) -> tuple[float, int]:
    """(cpu seconds, rss bytes) of one process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def tree(pids: list[int]) -> list[int]:
    """The pids and all their descendants (panel --num-procs forks)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


class Monitor:
    def __init__(self, pids: list[int]):
        self.pids = pids
        self.samples: list[tuple[float, float, int]] = []  # (time, cpu seconds, rss bytes), summed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> tuple[float, float, int]:
        cpu = rss = 0
        for pid in tree(self.pids):
            with contextlib.suppress(OSError):
                c, r = proc_stat(pid)
                cpu += c
                rss += r
        return time.time(), cpu, rss

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self.sample())
            self._stop.wait(1.0)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def cpu_percent(self, t0: float, t1: float) -> float:
        pts = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(pts) < 2:
            return float("nan")
        return 100 * (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])

    def rss_at(self, t: float) -> int:
        return min(self.samples, key=lambda s: abs(s[0] - t))[2]


# -- orchestration --------------------------------------------------------------


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


@contextlib.contextmanager
def server(args, logdir: Path):
    """Yield (url of /main, [server pids])."""
    if args.target:
        yield args.target, [int(p) for p in args.server_pid]
        return
    from app.run_cluster import cluster

    if args.through_nginx:
        with cluster(
            args.processes, args.port, session_lifetime_min=args.session_lifetime, log_dir=logdir
        ) as c:
            yield f"{c['url']}/main", [p.pid for _, p in c["backends"]]
    else:
        import subprocess

        from app.classroom import build_argv
        from app.serving import free_port, stop_process, wait_for_http

        port = args.port or free_port()
        app = ROOT / (getattr(args, "app", None) or "app/main.py")
        argv = build_argv(
            port,
            "127.0.0.1",
            [],
            args.processes,
            session_lifetime_min=args.session_lifetime,
            admin=False,
            teacher=app.stem == "main",
            app=app,
        )
        log = open(logdir / f"server-{port}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/{app.stem}")
            yield f"http://127.0.0.1:{port}/{app.stem}", [proc.pid]
        finally:
            stop_process(proc, timeout=15)
            log.close()


def spawn_clients(ctx, url, ks, start_at, stop_at, rate, moves, per_proc, stagger, flood=False):
    queue = ctx.Queue()
    procs = []
    for i in range(0, len(ks), per_proc):
        p = ctx.Process(
            target=client_process,
            args=(url, ks[i : i + per_proc], start_at, stop_at, rate, moves, queue, stagger, flood),
        )
        p.start()
        procs.append(p)
    return queue, procs


def collect(queue, procs, timeout):
    results = []
    deadline = time.time() + timeout
    for _ in procs:
        with contextlib.suppress(Exception):
            results += queue.get(timeout=max(1.0, deadline - time.time()))
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
    return results


def run(args) -> dict:
    ctx = mp.get_context("spawn")
    logdir = Path(args.logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    report: dict = {"args": vars(args), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    linger = args.session_lifetime * 60 + 12  # lifetime + one unused-session check
    with server(args, logdir) as (url, pids):
        report["url"] = url
        mon = Monitor(pids).start()
        # warm up (first session imports everything), then let its session expire: the idle baseline
        asyncio.run(one_move(url, 0.5))
        time.sleep(linger)
        t_idle = time.time()
        report["rss_idle_mb"] = mon.sample()[2] / 2**20

        # the classroom: N sessions + a few Chromium pages
        n = args.sessions
        connect_budget = args.connect_budget
        start_at = time.time() + connect_budget
        stop_at = start_at + args.duration
        queue, procs = spawn_clients(
            ctx,
            url,
            list(range(n)),
            start_at,
            stop_at,
            args.rate,
            None,
            args.per_process,
            connect_budget * 0.8 / max(1, args.per_process),
        )
        bqueue = ctx.Queue()
        bproc = None
        if args.browsers:
            bproc = ctx.Process(
                target=browser_process, args=(url, args.browsers, start_at, stop_at, args.rate, bqueue)
            )
            bproc.start()
        # faults, inside the run: a client killed mid-drag at 1/3, a flooder at 2/3
        t_vanish = start_at + args.duration / 3
        t_flood = start_at + 2 * args.duration / 3
        while time.time() < t_vanish:
            time.sleep(0.1)
        vanish = ctx.Process(target=vanishing_client, args=(url, 3.0))  # connects, drags 3 s, SIGKILL
        vanish.start()
        while time.time() < t_flood:
            time.sleep(0.1)
        flood_window = (time.time() + 10, time.time() + 10 + args.flood_seconds)  # 10 s to spawn + connect
        fq, fprocs = spawn_clients(
            ctx, url, [10_000], *flood_window, args.flood_rate, None, 1, 0.0, flood=True
        )
        results = collect(queue, procs, stop_at - time.time() + 60)
        flood = collect(fq, fprocs, 30)
        vanish.join(timeout=30)
        bres = bqueue.get(timeout=120) if bproc else {"lat": [], "errors": [], "pages": 0}
        if bproc:
            bproc.join(timeout=10)
        t_end = time.time()

        lat_all = [l for r in results for (_, l) in r["lat"]]
        base = [l for r in results for (t, l) in r["lat"] if start_at + 5 <= t < t_vanish]
        during = [l for r in results for (t, l) in r["lat"] if flood_window[0] <= t <= flood_window[1]]
        steady = [l for r in results for (t, l) in r["lat"] if start_at + 5 <= t < flood_window[0]]
        after_flood = [l for r in results for (t, l) in r["lat"] if t > flood_window[1]]
        errors = [e for r in results for e in r["errors"]]
        connected = [r for r in results if r.get("connected")]
        report.update(
            sessions=n,
            sessions_connected=len(connected),
            sessions_open_at_start=sum(
                1 for r in connected if r.get("opened_at") and r["opened_at"] <= start_at
            ),
            moves=len(lat_all),
            moves_per_s=len(lat_all) / args.duration,
            p50_ms=1000 * pct(lat_all, 50),
            p95_ms=1000 * pct(lat_all, 95),
            p99_ms=1000 * pct(lat_all, 99),
            max_ms=1000 * max(lat_all, default=float("nan")),
            errors=len(errors) + len(bres["errors"]),
            error_samples=(errors + bres["errors"])[:5],
            foreign_writes=sum(r["foreign"] for r in results),
            wrong_weights=sum(r["wrong"] for r in results),  # not the weights of this session's own move
            browser_pages=bres["pages"],
            browser_moves=len(bres["lat"]),
            browser_p50_ms=1000 * pct([l for _, l in bres["lat"]], 50),
            browser_p95_ms=1000 * pct([l for _, l in bres["lat"]], 95),
            cpu_percent=mon.cpu_percent(start_at, stop_at),
            rss_with_n_mb=mon.rss_at(start_at) / 2**20,
            rss_end_of_run_mb=mon.rss_at(stop_at) / 2**20,
            baseline_p95_ms=1000 * pct(base, 95),
            steady_moves=len(steady),
            steady_moves_per_s=len(steady) / max(1e-9, flood_window[0] - start_at - 5),
            steady_p50_ms=1000 * pct(steady, 50),
            steady_p95_ms=1000 * pct(steady, 95),
            after_flood_p95_ms=1000 * pct(after_flood, 95),
            after_flood_moves_per_s=len(after_flood) / max(1e-9, stop_at - flood_window[1]),
            flood_p95_ms=1000 * pct(during, 95),
            flood_p50_ms=1000 * pct(during, 50),
            baseline_p50_ms=1000 * pct(base, 50),
            flood_sent=sum(r["sent"] for r in flood),
            flood_updates_received=sum(r.get("received", 0) for r in flood),
            flood_rate_achieved=sum(r["sent"] for r in flood) / args.flood_seconds,
            flood_errors=[e for r in flood for e in r["errors"]][:3],
            vanish_exitcode=vanish.exitcode,
        )
        report["rss_per_session_kb"] = (report["rss_with_n_mb"] - report["rss_idle_mb"]) * 1024 / max(1, n)

        # RSS across 1000 moves per session (a few sessions, moving as fast as answers come)
        m = args.moves_sessions
        t0 = time.time() + 15
        queue, procs = spawn_clients(
            ctx, url, list(range(20_000, 20_000 + m)), t0, t0 + 240, 0, args.moves, m, 0.0
        )
        mres = collect(queue, procs, 400)
        t1 = time.time()
        report.update(
            moves_phase_sessions=m,
            moves_phase_moves=sum(len(r["lat"]) for r in mres),
            moves_phase_errors=sum(len(r["errors"]) for r in mres),
            moves_phase_wrong=sum(r["wrong"] for r in mres),
            rss_moves_start_mb=mon.rss_at(t0 + 2) / 2**20,
            rss_moves_end_mb=mon.rss_at(t1 - 1) / 2**20,
            moves_phase_p50_ms=1000 * pct([l for r in mres for _, l in r["lat"]], 50),
        )
        report["rss_moves_mid_mb"] = mon.rss_at((t0 + t1) / 2) / 2**20

        # 60 s after every session closed (sessions are discarded after the lifetime + a check)
        time.sleep(max(args.after_close, linger))
        report["rss_after_close_mb"] = mon.sample()[2] / 2**20
        report["seconds_after_close"] = round(time.time() - t1)
        report["alive_after_ms"] = 1000 * asyncio.run(one_move(url, 0.25))
        mon.stop()
        report["idle_at"] = t_idle
        report["elapsed_s"] = round(time.time() - t_end)
    logs = "".join(p.read_text(errors="replace") for p in logdir.glob("*.log"))
    report["server_tracebacks"] = logs.count("Traceback")
    report["server_traceback_kinds"] = sorted(
        {
            line.strip()
            for line in logs.splitlines()
            if line.startswith(
                ("AssertionError", "tornado.websocket.WebSocketClosedError", "tornado.iostream")
            )
            or " error: " in line
        }
    )[:8]
    stats = [line for line in logs.splitlines() if " sessions with " in line]
    report["last_session_stats"] = stats[-2:]
    report["server_log_errors"] = sum(1 for line in logs.splitlines() if " ERROR" in line)
    return report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of moving (the issue asks 600)")
    p.add_argument("--rate", type=float, default=4.0, help="moves per second per session")
    p.add_argument("--browsers", type=int, default=0, help="real Chromium pages among the clients")
    p.add_argument("--target", help="URL of /main on a running server (default: start one)")
    p.add_argument("--server-pid", action="append", default=[], help="with --target: pids to measure")
    p.add_argument("--through-nginx", action="store_true")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--session-lifetime", type=float, default=0.25, metavar="MINUTES")
    p.add_argument("--per-process", type=int, default=15, help="sessions per client process")
    p.add_argument("--connect-budget", type=float, default=60.0, help="seconds allowed to open all sessions")
    p.add_argument("--moves", type=int, default=1000, help="moves per session in the RSS-flatness phase")
    p.add_argument("--moves-sessions", type=int, default=4)
    p.add_argument("--flood-rate", type=float, default=1000.0)
    p.add_argument("--flood-seconds", type=float, default=2.0)
    p.add_argument("--logdir", default=str(ROOT / "test-artifacts" / "bench-logs"))
    p.add_argument("--after-close", type=float, default=60.0, help="seconds to wait after closing")
    p.add_argument("--json", help="also write the report here")
    p.add_argument("--app", default="app/main.py", help="the page served (one process, not --through-nginx)")
    p.add_argument("--floor", help="a floor page (e.g. bench/floor_app.py): runs alternate app, floor, ...")
    p.add_argument("--rounds", type=int, default=1, help="with --floor: rounds of (app, floor)")
    args = p.parse_args(argv)
    report = interleaved(args) if args.floor else run(args)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


ROUND_KEYS = ("p50_ms", "p95_ms", "cpu_percent", "rss_per_session_kb")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def interleaved(args) -> dict:
    """Whole runs, app then floor, `args.rounds` times; each round's app / floor ratios and their medians."""
    import copy
    import statistics

    runs = []
    for k in range(args.rounds):
        for app in (args.app, args.floor):
            one = copy.copy(args)
            one.app = app
            load_start = loadavg()
            r = run(one)
            keep = ("moves", "errors", "foreign_writes", "wrong_weights", "server_tracebacks", *ROUND_KEYS)
            loads = [load_start, loadavg()]
            runs.append({"round": k + 1, "app": app, "load": loads, **{x: r[x] for x in keep}})
            print(json.dumps(runs[-1]), flush=True)
    ratios = {}
    for key in ROUND_KEYS:
        per_round = [
            a[key] / f[key]
            for a, f in zip(runs[0::2], runs[1::2])
            if f[key] and math.isfinite(a[key]) and math.isfinite(f[key])
        ]
        ratios[key] = {"per_round": per_round, "median": statistics.median(per_round) if per_round else None}
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "runs": runs, "app_over_floor": ratios}


if __name__ == "__main__":
    main()
