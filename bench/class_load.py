"""A class under load, open loop: capacity, 1×/2×/4× that capacity, a burst, a class arriving at once.

    .venv/bin/python bench/class_load.py capacity --sessions 20 --duration 20
    .venv/bin/python bench/class_load.py load --students 40 --rate 4 --duration 60
    .venv/bin/python bench/class_load.py burst --rounds 5
    .venv/bin/python bench/class_load.py arrive --students 100 --window 10
    .venv/bin/python bench/class_load.py rounds --rounds 3 --duration 20   # capacity, 1×/2×/4×, A/B
    .venv/bin/python bench/class_load.py rounds --rounds 3 --rates 4,15,60 --times 1,2 --clients latest
    (each starts its own server with app.classroom's flags; add --through-nginx --processes 2 for two
    backends behind nginx)

Students speak the Bokeh protocol over a websocket (bench/load_test.py `Wire`: ACK, PULL-DOC,
document_ready, PATCH-DOC per move), many per client process, and read and parse every message the
server sends, as BokehJS does. Unlike bench/load_test.py, a student's hand does not wait for an answer
before moving again: it moves the slider `--rate` times a second whatever the server does meanwhile. The
values go to the server as the served page sends them (static/bokeh_seam.js sendLatest): while the server has
not answered the last patch, the newest value is held and sent when the answer comes (`--client every`:
every value at once, as a page without that script did).

* capacity: sessions moving back to back (each waits for its answer): the moves per second one server
  answers. That sets 1× for `load`: students × rate = capacity.
* load: staleness of a move = time from the hand's move until the student's page shows that value or a
  later one of theirs (a move overtaken before it was computed is not "lost": the page moved past it);
  p50/p95;
  time-outs (a move not shown or overtaken within 10 s); wrong replies (weights that are none of this
  student's values); foreign writes (their slider set to a value they never sent); values answered
  per second.
* burst: one student's hand makes 100 values at once; time until the page shows the last one, against
  one move's latency (median of 10 single moves), in rounds alternating the page's way and `every`.
* rounds: on one server, round after round: the capacity, then 1×, 2× and 4× of the first round's
  capacity (or `--one-x`), each with the page's sending and with `--client every`.
* arrive: N students open the page at random moments within `--window` seconds, as browsers do: GET the
  page (the server builds the session), then the websocket with the page's session token, PULL-DOC; the
  page works when the pulled document carries the chapter's weights line. Time from the GET to that; the
  server's CPU seconds per student (first GET to last working page) and the simulated browsers' own CPU.

Every result carries /proc/loadavg. Only loopback is contacted; every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import multiprocessing as mp
import random
import re
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_test import (  # noqa: E402
    MOVE_TIMEOUT,
    SLIDER,
    Monitor,
    Wire,
    collect,
    pct,
    server,
    shows,
    values_for,
)

CHAPTER_WEIGHTS = 'weights = <span class=\\"vec\\">[0.13, 0.56, 0.14, 0.18]</span>'  # in the pulled JSON


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# An answer that never comes must not keep the last value back for ever (static/bokeh_seam.js sendLatest: the
# same).
ANSWER_TIMEOUT = 5.0


class Student(Wire):
    """A Wire that logs every weights update it receives: (arrival time, weights); and sends slider values as
    the served page does (static/bokeh_seam.js sendLatest): while the server has not answered the last patch
    sent, the newest value is held and sent when the answer comes. `every=True` sends every value at once, as
    a page without that script did."""

    def __init__(self, url: str, every: bool = False):
        super().__init__(url)
        self.log: list[tuple[float, list[float]]] = []
        self.every = every
        self.awaiting: str | None = None  # msgid of the patch waiting for its answer
        self.sent_at = 0.0
        self.held: float | None = None  # the newest value made while waiting
        self.wire_sends = 0  # slider values that went on the wire

    def _dispatch(self, header, content, buffers) -> None:
        before = self.updates
        super()._dispatch(header, content, buffers)
        if self.updates != before:
            self.log.append((self.t_update, self.weights))
        if header.get("msgtype") in ("OK", "ERROR") and header.get("reqid") == self.awaiting:
            self.awaiting = None
            if self.held is not None:
                value, self.held = self.held, None
                self._send_value(value)

    def hand(self, value: float) -> None:
        """The student's hand puts the slider at `value`."""
        self.sent_values.add(value)
        self.give_up_late_answer()
        if self.every or self.awaiting is None:
            self.held = None
            self._send_value(value)
        else:
            self.held = value

    def give_up_late_answer(self) -> None:
        """No answer after ANSWER_TIMEOUT: stop waiting for it, and send what is held."""
        if self.awaiting is not None and time.perf_counter() - self.sent_at > ANSWER_TIMEOUT:
            self.awaiting = None
            if self.held is not None:
                value, self.held = self.held, None
                self._send_value(value)

    def _send_value(self, value: float) -> None:
        """One PATCH-DOC setting the slider, written to the socket now (as WebSocket.send does: no await)."""
        self._n += 1
        msgid = f"{id(self):x}-{self._n}"
        event = {"kind": "ModelChanged", "model": {"id": self.ids[SLIDER]}, "attr": "value", "new": value}
        frames = [json.dumps({"msgid": msgid, "msgtype": "PATCH-DOC"}), "{}", json.dumps({"events": [event]})]
        for frame in frames:
            fut = self.ws.write_message(frame)
            fut.add_done_callback(lambda f: f.exception())  # a closed socket: the run's end, not an error
        self.awaiting, self.sent_at = msgid, time.perf_counter()
        self.wire_sends += 1


def staleness(sends: list[tuple[float, float]], log, end: float):
    """Per move: seconds until the page showed it or a later move (None: never, by `end`); and the count of
    updates that showed none of the recent values sent."""
    shown_idx: list[tuple[float, int]] = []
    wrong = 0
    times = [t for t, _ in sends]
    for t, weights in log:
        newest = bisect.bisect_right(times, t) - 1  # the newest value sent before this update arrived
        k = next((i for i in range(newest, max(-1, newest - 200), -1) if shows(weights, sends[i][1])), None)
        if k is None:
            wrong += 1
        else:
            shown_idx.append((t, k))
    out: list[float | None] = []
    j, best, t_best = 0, -1, 0.0  # the newest move shown so far, and when the page first showed it
    for i, (t_sent, _) in enumerate(sends):
        while best < i and j < len(shown_idx):
            t, k = shown_idx[j]
            j += 1
            if k > best:
                best, t_best = k, t
        out.append(t_best - t_sent if best >= i else None)
    return out, wrong


class StartLine:
    """Every student of a run connects first; the run starts when all have (or gave up): a busy server can
    take seconds to build each session, and a fixed budget then starts a run with half the class absent."""

    def __init__(self, ctx, duration: float):
        self.ready = ctx.Value("i", 0)  # students connected (or failed to)
        self.go = ctx.Value("d", 0.0)  # the start time, once every student is ready
        self.duration = duration

    def arrived(self) -> None:
        with self.ready.get_lock():
            self.ready.value += 1

    async def wait(self) -> tuple[float, float]:
        while self.go.value == 0.0:
            await asyncio.sleep(0.05)
        return self.go.value, self.go.value + self.duration

    def start(self, n: int, timeout: float) -> tuple[float, float]:
        """In the parent: wait for n students (at most `timeout` s), then start 1 s later."""
        deadline = time.time() + timeout
        while self.ready.value < n and time.time() < deadline:
            time.sleep(0.1)
        self.go.value = time.time() + 1.0
        return self.go.value, self.go.value + self.duration


async def drag(url, k, line, rate, out, every=False):
    """One student: connect, then move the slider `rate` times a second until the run stops, whatever the
    server does meanwhile; the values go as the page sends them (Student.hand)."""
    out.update(k=k, stale=[], timeouts=0, wrong=0, foreign=0, sent=0, wire=0, errors=[], answered=0)
    w = Student(url, every=every)
    try:
        await w.open()
    except Exception as exc:
        out["errors"].append(f"connect: {exc!r}")
        await w.close()
        return
    finally:
        out["opened"] = True
        line.arrived()
    try:
        start_at, stop_at = await line.wait()
        await asyncio.sleep(max(0.0, start_at - time.time()) + random.random() / rate)
        vals = values_for(k)
        sends: list[tuple[float, float]] = []
        nxt = time.time()
        while time.time() < stop_at:
            v = next(vals)
            w.hand(v)
            sends.append((time.perf_counter(), v))
            nxt += 1.0 / rate
            await asyncio.sleep(max(0.0, nxt - time.time()))
        deadline = time.perf_counter() + MOVE_TIMEOUT  # the last value: shown, or a time-out
        while time.perf_counter() < deadline and not (w.log and shows(w.log[-1][1], sends[-1][1])):
            w.give_up_late_answer()
            await asyncio.sleep(0.05)
        stale, wrong = staleness(sends, w.log, time.perf_counter())
        out["stale"] = [s for s in stale if s is not None and s <= MOVE_TIMEOUT]
        out["timeouts"] = sum(1 for s in stale if s is None or s > MOVE_TIMEOUT)
        out["wrong"] = wrong
        out["sent"] = len(sends)
        out["wire"] = w.wire_sends
        out["answered"] = len(w.log)
    except Exception as exc:
        out["errors"].append(f"drag: {exc!r}")
    finally:
        out["foreign"] = w.foreign
        out["errors"] += [f"server: {e}" for e in w.server_errors]
        await w.close()


async def back_to_back(url, k, line, out):
    """One session moving as fast as it is answered (for the capacity)."""
    out.update(k=k, moves=0, errors=[])
    w = Student(url)
    try:
        try:
            await w.open()
        finally:
            out["opened"] = True
            line.arrived()
        start_at, stop_at = await line.wait()
        await asyncio.sleep(max(0.0, start_at - time.time()))
        vals = values_for(k)
        while time.time() < stop_at:
            await w.move(next(vals))
            out["moves"] += 1
    except Exception as exc:
        out["errors"].append(repr(exc))
    finally:
        await w.close()


def clients(kind, url, ks, line, rate, queue):
    async def main():
        outs = [{} for _ in ks]
        tasks = []
        for k, o in zip(ks, outs):
            if kind in ("drag", "every"):
                tasks.append(asyncio.ensure_future(drag(url, k, line, rate, o, kind == "every")))
            else:
                tasks.append(asyncio.ensure_future(back_to_back(url, k, line, o)))
            while "opened" not in o:  # one session opening at a time per client process: a server
                await asyncio.sleep(0.05)  # building dozens at once finishes none of them in time

        _, stop_at = await line.wait()
        await asyncio.wait(tasks, timeout=stop_at - time.time() + 60)
        return outs

    queue.put(asyncio.run(main()))


def spawn(kind, url, n, duration, rate, per_process):
    ctx = mp.get_context("spawn")
    line = StartLine(ctx, duration)
    queue, procs = ctx.Queue(), []
    for i in range(0, n, per_process):
        p = ctx.Process(
            target=clients,
            args=(kind, url, list(range(i, min(n, i + per_process))), line, rate, queue),
        )
        p.start()
        procs.append(p)
    return queue, procs, line


def capacity(args, url, pids) -> dict:
    mon = Monitor(pids).start()
    queue, procs, line = spawn("b2b", url, args.sessions, args.duration, 0, args.per_process)
    start_at, stop_at = line.start(args.sessions, args.connect_budget)
    res = collect(queue, procs, stop_at - time.time() + 90)
    mon.stop()
    moves = sum(r["moves"] for r in res)
    return {
        "sessions": args.sessions,
        "moves": moves,
        "moves_per_s": moves / args.duration,
        "errors": sum(len(r["errors"]) for r in res),
        "server_cpu_percent": mon.cpu_percent(start_at, stop_at),
    }


def load(args, url, pids) -> dict:
    mon = Monitor(pids).start()
    kind = "every" if args.client == "every" else "drag"
    queue, procs, line = spawn(kind, url, args.students, args.duration, args.rate, args.per_process)
    t_connect = time.time()
    start_at, stop_at = line.start(args.students, args.connect_budget)
    connect_s = time.time() - t_connect
    res = collect(queue, procs, stop_at - time.time() + 120)
    mon.stop()
    stale = [s for r in res for s in r["stale"]]
    rss = [s[2] for s in mon.samples if start_at <= s[0] <= stop_at]
    return {
        "students": args.students,
        "client": args.client,
        "rate": args.rate,
        "duration_s": args.duration,
        "connected": sum(1 for r in res if "connect" not in " ".join(r["errors"])),
        "connecting_s": connect_s,
        "sent": sum(r["sent"] for r in res),  # values the students' hands made
        "wire": sum(r.get("wire", 0) for r in res),  # of which sent to the server
        "answered": sum(r["answered"] for r in res),
        "answered_per_s": sum(r["answered"] for r in res) / args.duration,
        "stale_p50_ms": 1000 * pct(stale, 50),
        "stale_p95_ms": 1000 * pct(stale, 95),
        "stale_p99_ms": 1000 * pct(stale, 99),
        # fairness: each student's own p95, the worst of them
        "stale_p95_worst_student_ms": 1000 * max((pct(r["stale"], 95) for r in res if r["stale"]), default=0),
        "timeouts": sum(r["timeouts"] for r in res),
        "wrong": sum(r["wrong"] for r in res),
        "foreign": sum(r["foreign"] for r in res),
        "errors": sum(len(r["errors"]) for r in res),
        "error_samples": [e for r in res for e in r["errors"]][:3],
        "server_cpu_percent": mon.cpu_percent(start_at, stop_at),
        "rss_start_mb": rss[0] / 2**20 if rss else None,
        "rss_end_mb": rss[-1] / 2**20 if rss else None,
        "rss_max_mb": max(rss) / 2**20 if rss else None,
        "rss_by_minute_mb": [round(r / 2**20, 1) for r in rss[::60]],
    }


async def burst_round(url, n: int, every: bool = False) -> dict:
    w = Student(url, every=every)
    await w.open()
    try:
        single = []
        vals = values_for(3)
        for _ in range(10):
            single.append(await w.move(next(vals)))
        values = [round(-1.0 + 0.02 * k, 2) for k in range(n)]
        sent_before = w.wire_sends
        t0 = time.perf_counter()
        for v in values:
            w.hand(v)
        deadline = t0 + MOVE_TIMEOUT
        while time.perf_counter() < deadline and not (w.log and shows(w.log[-1][1], values[-1])):
            await asyncio.sleep(0.001)
        shown = w.log[-1][0] - t0 if w.log and shows(w.log[-1][1], values[-1]) else None
        updates = sum(1 for t, _ in w.log if t >= t0)
        return {
            "one_move_ms": 1000 * statistics.median(single),
            "burst_last_shown_ms": None if shown is None else 1000 * shown,
            "updates_for_burst": updates,
            "sent_for_burst": w.wire_sends - sent_before,
        }
    finally:
        await w.close()


def burst(args, url, pids) -> dict:
    """Rounds of: the page's way (one value in flight), then every value at once (a page without
    static/bokeh_seam.js sendLatest), on the same server."""
    rounds = []
    for k in range(args.rounds):
        for client in ("latest", "every"):
            r = asyncio.run(burst_round(url, args.burst, every=client == "every"))
            r.update(round=k + 1, client=client, load=loadavg())
            r["ratio"] = r["burst_last_shown_ms"] / r["one_move_ms"] if r["burst_last_shown_ms"] else None
            rounds.append(r)
            print(json.dumps(r), flush=True)
            time.sleep(1)
    out = {"burst": args.burst, "rounds": rounds}
    for client in ("latest", "every"):
        ratios = [r["ratio"] for r in rounds if r["client"] == client and r["ratio"]]
        out[f"median_ratio_{client}"] = statistics.median(ratios) if ratios else None
    return out


def settle(args, pids, since: float) -> float:
    """Wait until the class that left at `since` is gone from the server: its sessions discarded (the
    server's unused-session lifetime, then its check interval) and the memory it held handed back
    (app/serving.py, RELEASE_AFTER_S after the last one closed), then until the server's CPU stays below
    10 % for a second. Otherwise that work (a few hundred ms of one core per 100 sessions, and one full
    collection) lands in the next class's timed moves. Returns the seconds waited."""
    from app.classroom import CHECK_UNUSED_MS
    from app.serving import RELEASE_AFTER_S

    t0 = time.time()
    gone_by = since + args.session_lifetime * 60 + CHECK_UNUSED_MS / 1000 + RELEASE_AFTER_S + 1
    time.sleep(max(0.0, gone_by - time.time()))
    mon = Monitor(pids)
    before = mon.sample()
    while time.time() - t0 < 120:
        time.sleep(1.0)
        now = mon.sample()
        if (now[1] - before[1]) / (now[0] - before[0]) < 0.10:
            break
        before = now
    return time.time() - t0


def rounds(args, url, pids) -> dict:
    """On one server, in rounds: the capacity, then 1×, 2×, 4× that capacity with the page's sending (one
    value in flight), and 1×, 2× with every value sent at once (a page without static/bokeh_seam.js's
    sendLatest)."""
    import copy

    rates = [float(r) for r in args.rates.split(",")] if args.rates else [args.rate]
    out: dict = {"rate": args.rate, "rates": rates, "runs": []}
    one_x = args.one_x
    for k in range(args.rounds):
        c = copy.copy(args)
        c.duration = args.capacity_duration
        r = capacity(c, url, pids)
        one_x = one_x or r["moves_per_s"]  # 1× from the first round's capacity unless given
        out["runs"].append({"round": k + 1, "mode": "capacity", "load": loadavg(), **r})
        print(json.dumps(out["runs"][-1]), flush=True)
        out["runs"][-1]["settled_s"] = settle(args, pids, time.time())
        for rate, times in ((rate, int(t)) for rate in rates for t in args.times.split(",")):
            for client in args.clients.split(",") if times < 4 else ("latest",):  # 4× every: a flood, known
                c = copy.copy(args)
                c.rate = rate
                c.students, c.client = max(1, round(times * one_x / rate)), client
                load_start = loadavg()
                r = load(c, url, pids)
                loads = [load_start, loadavg()]
                out["runs"].append({"round": k + 1, "mode": f"{times}x", "load": loads, **r})
                print(json.dumps(out["runs"][-1]), flush=True)
                out["runs"][-1]["settled_s"] = settle(args, pids, time.time())
    out["one_x_moves_per_s"] = one_x
    return out


TOKEN = re.compile(r'"token":"([^"]+)"')


async def open_like_a_browser(url: str, start_at: float, out: dict) -> None:
    """GET the page (the server builds the session now), then its websocket with the page's token."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    out["t0"] = time.time()
    try:
        page = await AsyncHTTPClient().fetch(HTTPRequest(url, request_timeout=120, connect_timeout=120))
        out["html_s"] = time.perf_counter() - t0
        token = TOKEN.search(page.body.decode()).group(1)
        host, _, path = url.split("://", 1)[1].partition("/")
        cookie = page.headers.get("Set-Cookie", "").split(";")[0]
        headers = {"Origin": f"http://{host}", **({"Cookie": cookie} if cookie else {})}
        req = HTTPRequest(f"ws://{host}/{path}/ws", headers=headers, request_timeout=120, connect_timeout=120)
        ws = await websocket_connect(req, subprotocols=["bokeh", token], max_message_size=1 << 30)
        w = Wire(url)
        w.ws = ws
        ack = await asyncio.wait_for(w._recv(), 120)
        assert ack and ack[0].get("msgtype") == "ACK", ack
        out["ack_s"] = time.perf_counter() - t0
        await w.send("PULL-DOC-REQ", {})
        while True:
            msg = await asyncio.wait_for(w._recv(), 120)
            if msg[0].get("msgtype") == "PULL-DOC-REPLY":
                break
        out["working_s"] = time.perf_counter() - t0
        out["ok"] = CHAPTER_WEIGHTS in json.dumps(msg[1])  # the steps panel's line, as HTML
        ws.close()
    except Exception as exc:
        out["error"] = repr(exc)


def arrivals(url, starts, queue):
    async def main():
        outs = [{} for _ in starts]
        cpu = time.process_time()
        await asyncio.gather(*(open_like_a_browser(url, s, o) for s, o in zip(starts, outs)))
        outs[0]["client_cpu_s"] = time.process_time() - cpu  # this client process's protocol work
        return outs

    queue.put(asyncio.run(main()))


def arrive(args, url, pids) -> dict:
    mon = Monitor(pids).start()
    t_start = time.time() + 5
    rng = random.Random(1)
    starts = sorted(t_start + rng.random() * args.window for _ in range(args.students))
    ctx = mp.get_context("spawn")
    queue, procs = ctx.Queue(), []
    for i in range(0, len(starts), args.per_process):
        p = ctx.Process(target=arrivals, args=(url, starts[i : i + args.per_process], queue))
        p.start()
        procs.append(p)
    res = collect(queue, procs, args.window + 300)
    mon.stop()
    working = [r["working_s"] for r in res if r.get("ok")]
    html = [r["html_s"] for r in res if "html_s" in r]
    ack = [r["ack_s"] for r in res if "ack_s" in r]
    # the server's CPU seconds from the first GET until the last page worked, per student: what an arrival
    # costs the server, whatever share of the cores it got (the pool refills only after 10 s of quiet)
    t_end = max((r["t0"] + r["working_s"] for r in res if r.get("ok")), default=t_start)
    span = [s for s in mon.samples if t_start - 1 <= s[0] <= t_end + 1]
    cpu_s = span[-1][1] - span[0][1] if len(span) >= 2 else float("nan")
    return {
        "students": args.students,
        "window_s": args.window,
        "server_cpu_s_per_student": cpu_s / args.students,
        "working": len(working),
        "errors": [r["error"] for r in res if "error" in r][:3],
        "not_working": sum(1 for r in res if not r.get("ok")),
        "working_p50_s": pct(working, 50),
        "working_p95_s": pct(working, 95),
        "working_max_s": max(working, default=None),
        "html_p50_s": pct(html, 50),
        "html_p95_s": pct(html, 95),
        "ack_p50_s": pct(ack, 50),
        "ack_p95_s": pct(ack, 95),
        "server_cpu_percent": mon.cpu_percent(t_start, t_start + args.window + 5),
        # the simulated browsers' own CPU (GET, websocket, parsing the pulled document), on the same cores
        "clients_cpu_s": sum(r.get("client_cpu_s", 0.0) for r in res),
        "clients_cpu_per_student_ms": 1000 * sum(r.get("client_cpu_s", 0.0) for r in res) / args.students,
        "rss_mb_after": mon.samples[-1][2] / 2**20 if mon.samples else None,
    }


def wait_for_pools(pids, timeout: float) -> float:
    """Wait until every server process says its pages are built ahead (app/pool.py prints it to the log its
    stdout goes to); the seconds waited."""
    import os

    t0 = time.monotonic()
    logs = [Path(os.readlink(f"/proc/{pid}/fd/1")) for pid in pids]
    while not all("Pages built ahead" in log.read_text(errors="replace") for log in logs):
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"pages not built ahead within {timeout} s: {logs}")
        time.sleep(0.5)
    return time.monotonic() - t0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["capacity", "load", "burst", "arrive", "rounds"])
    ap.add_argument("--sessions", type=int, default=20, help="capacity: sessions moving back to back")
    ap.add_argument("--students", type=int, default=40)
    ap.add_argument("--rate", type=float, default=4.0, help="load: values a second per student")
    ap.add_argument(
        "--rates",
        default="",
        help="rounds: hand rates to run in turn within each round (comma-separated; default --rate)",
    )
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one-x", type=float, default=0.0, help="rounds: moves/s taken as 1× (else measured)")
    ap.add_argument("--clients", default="latest,every", help="rounds: the ways of sending at 1× and 2×")
    ap.add_argument("--times", default="1,2,4", help="rounds: the classes, as multiples of the capacity")
    ap.add_argument("--capacity-duration", type=float, default=20.0, help="rounds: seconds of capacity")
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument(
        "--client",
        choices=["latest", "every"],
        default="latest",
        help="latest: one value in flight, as the served page sends (static/bokeh_seam.js sendLatest); "
        "every: each value at once, as a page without it did",
    )
    ap.add_argument("--window", type=float, default=10.0, help="arrive: seconds over which students open")
    ap.add_argument("--per-process", type=int, default=25)
    ap.add_argument("--connect-budget", type=float, default=300.0, help="at most this long to connect all")
    ap.add_argument("--through-nginx", action="store_true")
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--target", help="URL of a running server's page instead of starting one")
    ap.add_argument("--server-pid", action="append", default=[])
    ap.add_argument("--session-lifetime", type=float, default=0.5, metavar="MINUTES")
    ap.add_argument("--expect", type=int, default=0, help="app.classroom --expect: pages built ahead")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds to wait after the server is up")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.expect:
        import os

        from app.pool import EXPECT_ENV

        try:  # as app.classroom shares a class among its processes
            from app.classroom import expect_per_process
        except ImportError:  # older code: every process builds --expect
            def expect_per_process(expect, processes):
                return expect

        per_process = expect_per_process(args.expect, args.processes if args.through_nginx else 1)
        os.environ[EXPECT_ENV] = str(per_process)  # the server processes inherit it
    logdir = ROOT / "test-artifacts" / "bench-logs"
    logdir.mkdir(parents=True, exist_ok=True)
    report = {
        "mode": args.mode,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_start": loadavg(),
    }
    srv = SimpleNamespace(
        target=args.target,
        server_pid=args.server_pid,
        through_nginx=args.through_nginx,
        processes=args.processes,
        port=args.port,
        session_lifetime=args.session_lifetime,
    )
    with server(srv, logdir) as (url, pids):
        if args.expect and not args.target:
            report["pools_ready_s"] = wait_for_pools(pids, timeout=600)
        time.sleep(args.settle)
        asyncio.run(burst_round(url, 2)) if args.mode != "arrive" else None  # warm the server
        modes = {"capacity": capacity, "load": load, "burst": burst, "arrive": arrive, "rounds": rounds}
        report.update(modes[args.mode](args, url, pids))
    return finish(report, args.json)


def finish(report: dict, path: Path | None) -> dict:
    """The report with the load average at its end, printed, and written to `path` when given."""
    report["load_end"] = loadavg()
    text = json.dumps(report, indent=1, default=str)
    print(text, flush=True)
    if path:
        path.write_text(text)
    return report


if __name__ == "__main__":
    main()
