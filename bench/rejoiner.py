"""A student over the Bokeh protocol that does what a served page with static/rejoin.js does, for the fault
benchmarks (bench/fault.py, bench/soak.py), where forty Chromium pages would take the server's cores.

It opens the page as a browser does (GET through nginx with its cookie, then the websocket with the page's
session token: bench/class_load.py open_like_a_browser), moves the token slider x-3-0, and keeps its own
head as it last set it (a HeadState), as the page's `follow` does. When its connection closes it keeps
moving (the value is kept, not sent), and comes back as rejoin.js does: the same schedule of tries
(RETRY_MS and OWN_PROCESS_MS are read from static/rejoin.js), the header X-Attn-Own while it is early, a GET
of its own address with its head (widgets/url_state.py encode, which static/explorer.js encodeLink mirrors)
and its class state (the channel's `classroom`, as the server last wrote it) in it, then the new session's
websocket. It is working again once that session shows its own head and answers a move with its weights.

What it does not do that a page does: draw anything, and the page's own work (reading the answer, tearing
down and making Bokeh views, a few hundred milliseconds in Chromium); bench/fault.py times real pages
beside these.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from bench.load_test import SLIDER, Wire

ROOT = Path(__file__).resolve().parents[1]
REJOIN_JS = (ROOT / "static" / "rejoin.js").read_text()
RETRY_MS = json.loads(re.search(r"const RETRY_MS = (\[[^\]]*\])", REJOIN_JS).group(1))
OWN_PROCESS_MS = int(re.search(r"const OWN_PROCESS_MS = (\d+)", REJOIN_JS).group(1))
TOKEN = re.compile(r'"token":"([^"]+)"')
MOVE_TIMEOUT = 30.0


class ClassWire(Wire):
    """A Wire that also follows the page's channel (widgets/channel.py): the state the server published and
    where the student stands in the class."""

    NAMES = (*Wire.NAMES, "head-channel")

    def _dispatch(self, header, content, buffers) -> None:
        super()._dispatch(header, content, buffers)
        if header.get("msgtype") != "PATCH-DOC":
            return
        for ev in content.get("events", []):
            mid = (ev.get("model") or {}).get("id")
            if ev.get("kind") == "ModelChanged" and mid == self.ids.get("head-channel"):
                self.attrs["head-channel"][ev.get("attr")] = ev.get("new")

    def channel(self, attr: str):
        """The channel's `state` or `classroom`, read (None when there is none)."""
        try:
            return json.loads(self.attrs["head-channel"][attr])
        except (KeyError, TypeError, ValueError):
            return None


def weights_of(state) -> np.ndarray:
    return np.nan_to_num(np.asarray(state.head.weights, dtype=float).ravel(), nan=0.0)


class Student:
    """One student: its own head (`state`), its connection (`wire`, None while away), what happened."""

    def __init__(self, base: str, state, backend: str | None = None, path: str = "/main", name: str = ""):
        self.base, self.path, self.name = base, path, name
        self.state = state  # the head as the student last set it
        self.cookie = f"attn_backend={backend}" if backend else None
        self.wire: ClassWire | None = None
        self.backend = backend
        self.lost_at: float | None = None
        self.recoveries: list[float] = []  # seconds from losing the connection to working again
        self.back_at: list[float] = []  # when (time.time()) it was working again, each time
        self.attempts = 0
        self.answered = 0
        self.latencies: list[tuple[float, float]] = []  # (when, seconds) of each answered move
        self.kept = 0  # moves made while away (kept in the head it comes back with)
        self.unanswered = 0  # moves sent on a connection that stayed open and never answered
        self.wrong = 0  # answers whose weights are not the student's own head's
        self.not_own_head = 0  # new sessions that did not show the student's own head
        self.errors: list[str] = []

    # -- joining ---------------------------------------------------------------------------------------

    def address(self, class_state: dict | None) -> str:
        from widgets.url_state import encode

        params = encode(self.state)
        if class_state is not None:
            params["class"] = json.dumps(class_state)
        return f"{self.base}{self.path}?{urlencode(params)}"

    async def join(self, own: bool = False, class_state: dict | None = None, timeout: float = 120.0) -> None:
        """GET the page with this student's head (and class state), then its websocket; raises when it
        cannot (refused, 502 while its process starts again)."""
        from tornado.httpclient import AsyncHTTPClient, HTTPRequest

        headers = {**({"Cookie": self.cookie} if self.cookie else {}), **({"X-Attn-Own": "1"} if own else {})}
        page = await AsyncHTTPClient().fetch(
            HTTPRequest(
                self.address(class_state), headers=headers, request_timeout=timeout, connect_timeout=5
            ),
            raise_error=True,
        )
        token = TOKEN.search(page.body.decode()).group(1)
        for cookie in page.headers.get_list("Set-Cookie"):
            if cookie.startswith("attn_backend="):
                self.cookie = cookie.split(";")[0]
                self.backend = self.cookie.split("=", 1)[1]
        wire = ClassWire(f"{self.base}{self.path}", cookie=self.cookie)
        await wire.open(timeout=timeout, token=token)
        shown = wire.channel("state")
        if shown is None or shown["X"] != self.state.X.tolist() or shown["query"] != self.state.query:
            self.not_own_head += 1
        self.wire = wire

    @property
    def away(self) -> bool:
        return self.wire is None or self.wire.closed

    # -- moving ----------------------------------------------------------------------------------------

    async def move(self, value: float) -> float | None:
        """Set x-3-0 (the student's own head changes whatever happens); the answer's latency, None while
        away."""
        self.state.set_x(3, 0, value)
        if self.away:
            self.kept += 1
            return None
        wire = self.wire
        before = wire.updates
        t0 = time.perf_counter()
        try:
            await wire.set(SLIDER, "value", value)
            while wire.updates == before or not self._shows_own(wire):
                if wire.closed:
                    raise ConnectionError("closed")
                if time.perf_counter() - t0 > MOVE_TIMEOUT:
                    raise TimeoutError
                wire._updated.clear()
                try:
                    await asyncio.wait_for(wire._updated.wait(), 0.5)
                except TimeoutError:
                    pass
        except (ConnectionError, OSError, WebSocketClosedError, StreamClosedError):
            self.kept += 1  # the connection went with it: the value comes back with the head
            return None
        except TimeoutError:
            if not wire.closed:
                self.unanswered += 1
            else:
                self.kept += 1
            return None
        latency = time.perf_counter() - t0
        self.answered += 1
        self.latencies.append((time.time(), latency))
        return latency

    def _shows_own(self, wire: ClassWire) -> bool:
        got = np.nan_to_num(np.asarray(wire.weights, dtype=float), nan=0.0)
        own = weights_of(self.state)
        return got.shape == own.shape and bool(np.allclose(got, own, atol=1e-9))

    # -- coming back -----------------------------------------------------------------------------------

    async def come_back(self, give_up_after: float = 300.0, nudge: bool = True) -> float:
        """Try as static/rejoin.js does until a new session is working; seconds since the connection was
        lost (as this student noticed it). Working: it shows the student's own head and, with `nudge`,
        answers a move with that head's weights."""
        lost = self.lost_at or time.time()
        class_state = self.wire.channel("classroom") if self.wire is not None else None
        if self.wire is not None:
            await self.wire.close()
        self.wire = None
        attempt = 0
        while time.time() - lost < give_up_after:
            wait = RETRY_MS[min(attempt, len(RETRY_MS) - 1)] / 1000 * (0.75 + 0.5 * random.random())
            await asyncio.sleep(wait)
            attempt += 1
            self.attempts += 1
            own = (time.time() - lost) * 1000 < OWN_PROCESS_MS
            try:
                await self.join(own=own, class_state=class_state or {})
            except Exception as exc:  # refused, 502, a session that failed: the next try
                self.errors.append(type(exc).__name__)
                self.wire = None
                continue
            # working once its own head answers a move (of a new value: the same one changes nothing)
            x = float(self.state.X[3][0])
            if not nudge or await self.move(round(x + (0.01 if x < 1 else -0.01), 4)) is not None:
                took = time.time() - lost
                self.recoveries.append(took)
                self.back_at.append(time.time())
                self.lost_at = None
                return took
        raise TimeoutError(f"{self.name} did not come back within {give_up_after} s")

    async def close(self) -> None:
        if self.wire is not None:
            await self.wire.close()
