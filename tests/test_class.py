"""Issue 15, a real classroom: own addresses, the QR code, the teacher's key, sends, the class view, Redis.

The browser part runs two backends with Redis between them (app.run_cluster.cluster) and one Chromium
whose host-resolver rules map *.test onto loopback, so "lab.test" can stand for an address the launcher
found as its own (the address list is injected) and "elsewhere.test" for one it did not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest

from app import addresses as addr
from app.classroom import allowed_origins, build_argv, default_origins, origin_env
from app.teacher_access import COOKIE, COOKIES, TEACHER, cookie_for, get_user
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, NGINX, classroom_dry_run
from widgets import qr_code as qr
from widgets.broadcast import ClassBus
from widgets.class_link import ClassLink
from widgets.state import HeadState
from widgets.url_state import apply_params, encode

ZBARIMG = shutil.which("zbarimg")
REDIS = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
)

IP_JSON = """[{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1"},
 {"family": "inet6", "local": "::1"}]},
 {"ifname": "wlan0", "addr_info": [{"family": "inet6", "local": "fe80::1"},
 {"family": "inet6", "local": "2001:db8::7"}, {"family": "inet", "local": "192.168.1.20"}]},
 {"ifname": "eth1", "addr_info": [{"family": "inet", "local": "10.0.0.5"}]}]"""


# -- addresses ----------------------------------------------------------------------------------------


def test_own_addresses_are_every_usable_ipv4_and_ipv6_ipv4_first():
    found = addr.from_ip_json(IP_JSON)
    assert addr.own_addresses(found) == ["192.168.1.20", "10.0.0.5", "2001:db8::7"]  # no loopback, link-local
    assert all(addr.usable(a) for a in addr.own_addresses())  # this machine's, looked up for real
    origins = default_origins(5006, "lab1", addresses=found)
    assert origins == [
        "localhost:5006",
        "127.0.0.1:5006",
        "lab1:5006",
        "192.168.1.20:5006",
        "10.0.0.5:5006",
        "[2001:db8::7]:5006",
    ]
    argv = build_argv(5006, origins=["proxy.example:80"], hostname="lab1", addresses=found)
    flags = [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-websocket-origin"]
    assert flags == [o for o in origins if not o.startswith("[")] + ["proxy.example:80"]
    allowed = allowed_origins(5006, ["proxy.example:80"], "lab1", found)
    assert origin_env(allowed)["BOKEH_ALLOW_WS_ORIGIN"].split(",") == allowed  # IPv6 rides in the setting
    assert origin_env(allowed_origins(5006, [], "lab1", ["10.0.0.5"])) == {}
    assert addr.student_urls(5006, addr.own_addresses(found), "lab1")[0] == "http://192.168.1.20:5006/"


def png(modules: list[list[bool]], scale: int = 6) -> bytes:
    """A greyscale PNG of QR modules (True = dark), standard library only."""
    rows = b"".join(
        b"\x00" + bytes(0 if dark else 255 for dark in row for _ in range(scale))
        for row in modules
        for _ in range(scale)
    )
    width, height = len(modules[0]) * scale, len(modules) * scale

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def zbar(path: Path) -> list[str]:
    out = subprocess.run([ZBARIMG, "--quiet", "--raw", str(path)], capture_output=True, text=True, timeout=30)
    return out.stdout.split()


@pytest.mark.skipif(ZBARIMG is None, reason="zbarimg (zbar-tools) is not installed")
def test_the_printed_qr_code_decodes_to_the_printed_address(tmp_path):
    out = classroom_dry_run("--port", "5399")
    url = re.search(r"Students open: (\S+)", out).group(1)
    assert url.startswith("http://") and ":5399/" in url
    own = addr.own_addresses()
    if own:  # by IP first
        assert url == f"http://{addr.host_for_url(own[0])}:5399/"
    block = "\n".join(line for line in out.splitlines() if line and set(line) <= set(qr.BLOCKS.values()))
    image = tmp_path / "terminal-qr.png"
    image.write_bytes(png(qr.read_terminal_text(block)))
    assert zbar(image) == [url]
    assert re.search(r"/teacher\?key=[\w-]{20,}", out) and re.search(r"/admin\?key=[\w-]{20,}", out)


# -- the teacher's key ----------------------------------------------------------------------------------


class FakeHandler:
    def __init__(self, path, key=None, cookie=None, query=None):
        self.request = type("R", (), {"path": path, "method": "GET"})()
        self.args = {"key": key} if key is not None else {}
        self.request.query_arguments = {k: [v.encode()] for k, v in {**(query or {}), **self.args}.items()}
        self.cookies = {cookie_for(path): cookie} if cookie else {}
        self.set: dict = {}
        self.redirected: str | None = None

    def get_argument(self, name, default=None):
        return self.args.get(name, default)

    def get_cookie(self, name):
        return self.cookies.get(name)

    def set_cookie(self, name, value, **kw):
        self.set[name] = (value, kw)

    def redirect(self, url):
        self.redirected = url


def test_teacher_pages_need_the_key_students_pages_do_not(monkeypatch):
    monkeypatch.setenv("ATTN_TEACHER_KEY", "s3cret-key")
    for path in ("/teacher", "/teacher/ws", "/admin", "/admin/autoload.js"):
        assert get_user(FakeHandler(path)) is None
        assert get_user(FakeHandler(path, key="wrong")) is None
        assert get_user(FakeHandler(path, key="")) is None
        assert get_user(FakeHandler(path, cookie="wrong")) is None
        assert get_user(FakeHandler(path, cookie="s3cret-key")) == TEACHER
    assert get_user(FakeHandler("/teacher/ws", key="s3cret-key")) == TEACHER  # no redirect but for the pages
    for path in ("/main", "/", "/teachers", "/static/x.js"):
        assert get_user(FakeHandler(path)) == "student"
    monkeypatch.delenv("ATTN_TEACHER_KEY")
    assert get_user(FakeHandler("/teacher", key="")) is None  # no key made: nobody gets in


def test_the_first_visit_with_the_key_sets_scoped_cookies_and_drops_the_key_from_the_address(monkeypatch):
    from tornado.web import Finish

    monkeypatch.setenv("ATTN_TEACHER_KEY", "s3cret-key")
    first = FakeHandler("/teacher", key="s3cret-key", query={"preset": "tired"})
    with pytest.raises(Finish):  # the answer is the redirect, nothing else
        get_user(first)
    assert first.redirected == "/teacher?preset=tired"
    assert set(first.set) == set(COOKIES.values())
    for path, name in COOKIES.items():  # each cookie goes only with its own pages, never to a script
        value, how = first.set[name]
        assert value == "s3cret-key" and how == {"path": path, "httponly": True, "samesite": "Strict"}
    admin = FakeHandler("/admin", key="s3cret-key")
    with pytest.raises(Finish):
        get_user(admin)
    assert admin.redirected == "/admin"


# -- sends, back, and the class view, in one process ----------------------------------------------------


def test_a_send_reaches_every_student_and_back_restores_exactly_what_they_had():
    bus = ClassBus()  # one process: no Redis
    students = [HeadState() for _ in range(3)]
    links = [ClassLink(s, bus=bus) for s in students]
    students[1].load("tired")
    students[2].set_x(3, 1, 0.8)
    students[2].apply(query=1, scaling=False)
    before = [encode(s) for s in students]
    teacher = HeadState()
    teacher.load("exercise-1")
    view = bus.class_view()
    assert view["students"] == 3 and view["on_sent"] is None
    bus.send(encode(teacher))
    for s, link in zip(students, links, strict=True):
        assert encode(s) == encode(teacher)
        assert "Your teacher sent this head" in link.line.text and link.back.visible
    view = bus.class_view()
    assert (view["students"], view["on_sent"], view["changed"]) == (3, 3, 0)
    q = teacher.query  # exercise 1: "it" looks like "sat"; every student's row of "it" peaks at one key
    assert view["top"] == {teacher.labels[int(teacher.head.weights[q].argmax())]: 3}
    students[0].set_x(0, 0, 0.5)  # one student changes the head, one goes back
    links[1].go_back()
    assert encode(students[1]) == before[1] and students[1].preset == "tired"
    view = bus.class_view()  # (issue 25) going back is counted apart from changing the head
    assert (view["on_sent"], view["changed"], view["back"]) == (1, 1, 1)
    links[2].go_back()
    assert encode(students[2]) == before[2]
    late = HeadState()
    ClassLink(late, bus=bus)  # opens the page after the send: starts on the last head sent
    assert encode(late) == encode(teacher)
    kept = HeadState()
    ClassLink(kept, bus=bus, session_args={"preset": ["tired"]})  # a link with its own head keeps it
    assert encode(kept) != encode(teacher)


def came_back_args(link: ClassLink, state: HeadState) -> dict:
    """The address static/rejoin.js opens for a page that comes back: its head and its class state."""
    return {
        **{k: [v.encode()] for k, v in encode(state).items()},
        "class": [json.dumps(link.published()).encode()],
    }


def test_a_page_that_comes_back_is_where_it_was_in_the_class():
    """(issue 25) A student's page whose server process died is rebuilt from its own copy of where it stood:
    the teacher's head with the way back to its own, or its own head after going back; a send made while it
    was away reaches it; the counts come out as before."""
    from widgets.explorer import HeadExplorer

    bus = ClassBus()
    on, changed, back = (HeadExplorer() for _ in range(3))
    links = [ClassLink(e.state, bus=bus, explorer=e) for e in (on, changed, back)]
    for e in (on, changed, back):
        e.state.apply(query=1)  # each student's own head
    own = encode(on.state)
    teacher = HeadState()
    teacher.set_x(0, 0, 0.25)  # a head of no preset: "Your teacher's head"
    bus.send(encode(teacher))
    assert (
        on.page.controls.preset.value == "teachers-head"
        and "Your teacher's head" in on.page.controls.note.text
    )
    changed.state.set_x(1, 1, 0.5)
    assert changed.page.controls.preset.value == "custom"  # changed: the student's own edits now
    links[2].go_back()
    before = bus.class_view()
    assert (before["on_sent"], before["changed"], before["back"]) == (1, 1, 1)

    fresh = ClassBus()  # the server process died; a new one knows nothing of the class
    again = [HeadExplorer() for _ in range(3)]
    rejoined = []
    for old, link, e in zip((on, changed, back), links, again, strict=True):
        args = came_back_args(link, old.state)
        apply_params(e.state, args)
        rejoined.append(ClassLink(e.state, bus=fresh, session_args=args, explorer=e))
    assert [encode(e.state) for e in again] == [encode(e.state) for e in (on, changed, back)]
    now = fresh.class_view()
    assert (now["on_sent"], now["changed"], now["back"]) == (None, None, None)  # no send known here yet
    fresh.last_send = bus.last_send  # (what Redis tells a restarted process)
    now = fresh.class_view()
    assert (now["on_sent"], now["changed"], now["back"]) == (1, 1, 1)
    assert again[0].page.controls.preset.value == "teachers-head"
    rejoined[0].go_back()  # the way back still leads to the student's own head
    assert encode(again[0].state) == own
    later = HeadState()
    later.load("no-mask")
    sent_while_away = ClassBus()
    sent_while_away.send(encode(later))
    away = HeadExplorer()
    args = came_back_args(links[0], on.state)
    apply_params(away.state, args)
    ClassLink(away.state, bus=sent_while_away, session_args=args, explorer=away)
    assert encode(away.state) == encode(later)  # the send made while the page was away reaches it
    bad = HeadState()
    ClassLink(bad, bus=ClassBus(), session_args={"class": [b"{not json"]})  # a copy that does not read
    assert encode(bad) == encode(HeadState())
    assert own != encode(teacher)


def test_a_send_writes_only_what_changed_and_each_process_computes_the_head_once():
    """What a send costs each student's page (bench/RESULTS-class.md): the figures' sources, the controls
    whose value differs, the preset, the class line, the page's copy of where it stands in the class and the
    address; the head and its view data are made once per process and shared by every student on it."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from app.served_page import page_for
    from widgets.explorer import HeadExplorer
    from widgets.viewdata import view_data

    bus, doc = ClassBus(), Document()
    with set_curdoc(doc):
        explorer = HeadExplorer()
        link = ClassLink(explorer.state, bus=bus, explorer=explorer)  # as app/main.py makes it
        page_for(explorer, classroom=link).server_doc(doc)
        doc.add_root(explorer.channel)  # as app/served_page.py serve_page does
        other = HeadState()
        ClassLink(other, bus=bus)
        teacher = HeadState()
        teacher.load("exercise-1")  # the chapter's head with "it" moved: three of its slider values differ
        bus.send(encode(teacher))  # the first send also shows the class line and its button
        teacher.load("chapter")
        doc.hold("combine")
        bus.send(encode(teacher))
        events = list(doc.callbacks._held_events)
        doc.unhold()
    changed = sorted({(type(e.model).__name__, e.attr) for e in events})
    # (and the address, on a served page); the channel's state: the state the figures show, which the page's
    # own drawing of a move starts from (widgets/channel.py, static/explorer_page.js follow); its classroom:
    # the page's copy of where it stands in the class (static/rejoin.js comes back with it)
    expected = [
        ("ColumnDataSource", "data"),
        ("Div", "text"),
        ("HeadChannel", "classroom"),
        ("HeadChannel", "state"),
        ("Select", "value"),
        ("Slider", "value"),
    ]
    assert changed == expected
    assert sum(type(e.model).__name__ == "Slider" for e in events) == 3
    assert encode(explorer.state) == encode(other) == encode(teacher)
    assert explorer.state.head is other.head  # computed once, shared (a Head is read-only)
    s = explorer.state
    o = other
    assert view_data(s.head, s.query, s.labels, s.dims) is view_data(o.head, o.query, o.labels, o.dims)


# -- in a browser: two processes with Redis between them ------------------------------------------------

KEY = "test-teacher-key-0123456789"
STUDENT_LINE = "text=Your teacher sent this head"


def weights_text(state: HeadState) -> str:
    row = state.head.weights[state.query]
    return "weights = [" + ", ".join(f"{w:.2f}" for w in row) + "]"


def get_status(url: str, cookie: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    if NGINX is None or REDIS is None:
        pytest.skip("nginx or redis-server is not installed")
    from app.run_cluster import cluster

    logs = tmp_path_factory.mktemp("class")
    # "lab.test" stands for an address the launcher found as this machine's own
    with cluster(2, teacher_key=KEY, addresses=["lab.test"], admin=True, log_dir=logs) as c:
        c["ports"] = [port for port, _ in c["backends"]]
        yield c
    for port in c["ports"]:
        log = (logs / f"backend-{port}.log").read_text()
        assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def chromium(browser_type):
    """Chromium with *.test mapped onto loopback (127.0.0.2, where HostRewritingProxy listens)."""
    browser = browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_FLAGS, "--host-resolver-rules=MAP *.test 127.0.0.2"]
    )
    yield browser
    browser.close()


def test_teacher_and_admin_pages_answer_403_and_nothing_else_without_the_key(classroom):
    """Here without a browser; the 200 with the key (and the cookie it leaves) is checked in a browser
    below. (A page fetched but never opened by a browser leaves Panel's admin page a session that fails
    on the next log line: panel/widgets/tables.py, not ours.)"""
    for port in classroom["ports"]:
        base = f"http://127.0.0.1:{port}"
        for path in ("/teacher", "/admin", "/teacher/ws", "/admin/autoload.js?bokeh-autoload-element=x"):
            for query, cookie in (("", None), ("key=wrong", None), ("", "wrong")):
                url = base + path + ("&" if "?" in path else "?") + query if query else base + path
                status, body = get_status(url, cookie)
                assert status == 403 and b"One attention head" not in body and len(body) < 200, url
        assert get_status(f"{base}/main")[0] == 200  # students need no key


def page_and_session(html: str) -> str:
    """A served page's HTML with its Bokeh session token unpacked (the token carries the request's cookies,
    headers and arguments, compressed)."""
    from bokeh.util.token import get_token_payload

    tokens = re.findall(r'"token":"([^"]+)"', html)
    assert len(tokens) == 1
    return html + "".join(json.dumps(get_token_payload(t)) for t in tokens)


def open_page(browser, url: str):
    """A new browser's page at `url`; `page.served` holds the HTML the server answered with (after any
    redirect) and the session token's contents."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    answer = page.goto(url)
    assert answer.status == 200
    page.served = page_and_session(answer.text())
    return page


def set_model(page, name: str, value) -> None:
    page.evaluate("([n, v]) => { Bokeh.documents[0].get_model_by_name(n).value = v; }", [name, value])


def send_preset(teacher, students, preset: str) -> HeadState:
    """The teacher loads `preset` and sends it; every student's page shows its weights. Returns its state."""
    sent = HeadState()
    sent.load(preset)
    set_model(teacher, "preset", preset)
    teacher.wait_for_selector(f"text={weights_text(sent)}", timeout=20000)
    teacher.get_by_role("button", name="Send this head to every student").click()
    for page in students:
        page.wait_for_selector(f"text={weights_text(sent)}", timeout=20000)
    return sent


class HostRewritingProxy:
    """A reverse proxy that hands the server its own address as the Host (nginx's default,
    `proxy_set_header Host $proxy_host`): the websocket's Origin (the address the student typed) then
    differs from the Host, and the server's origin list decides.  (Tornado 6.6 lets a websocket through
    without looking at that list when Origin and Host agree, which is what a student typing the server's
    address directly gets.)  It listens on 127.0.0.2 with the backend's port number, so that the address
    the student types carries the port the launcher allowed.  Requests are GETs and one websocket."""

    def __init__(self, port: int):
        self.port = port
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.2", self.port))
        self.ready.set()
        self.loop.run_forever()

    async def _client(self, reader, writer) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        back = asyncio.ensure_future(self._pipe(up_reader, writer))
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = [
                    f"Host: 127.0.0.1:{self.port}".encode() if line.lower().startswith(b"host:") else line
                    for line in head.split(b"\r\n")
                ]
                up_writer.write(b"\r\n".join(lines))
                if b"upgrade: websocket" in head.lower():
                    await self._pipe(reader, up_writer)
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            up_writer.close()
            back.cancel()
            writer.close()

    @staticmethod
    async def _pipe(reader, writer) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()

    def close(self) -> None:
        async def shut_down():
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut_down(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def test_an_own_address_gets_a_working_page_an_unlisted_one_a_message(classroom, chromium, artifacts):
    port = classroom["ports"][0]
    proxy = HostRewritingProxy(port)
    try:
        context = chromium.new_context(viewport={"width": 1400, "height": 1000}, proxy=None)
        good, bad = context.new_page(), context.new_page()
        good.goto(f"http://lab.test:{port}/main")
        bad.goto(f"http://elsewhere.test:{port}/main")
        good.wait_for_selector(f"text={weights_text(HeadState())}", timeout=60000)
        bad.wait_for_selector("text=This page cannot connect to the classroom server", timeout=60000)
        assert f"elsewhere.test:{port}" in bad.inner_text("#attn-no-connection")
        bad.screenshot(path=str(artifacts / "class-unlisted-address.png"))
        context.close()
    finally:
        proxy.close()


def test_a_send_reaches_students_on_both_processes_and_redis_can_come_and_go(classroom, chromium, artifacts):
    one, two = classroom["ports"]
    teacher = open_page(chromium, f"http://127.0.0.1:{one}/teacher?key={KEY}")
    assert teacher.url == f"http://127.0.0.1:{one}/teacher"  # redirected: the key is off the projector
    admin = teacher.context.new_page()  # the key, once used, is kept in a cookie: no key in this address
    assert admin.goto(f"http://127.0.0.1:{one}/admin").status == 200
    admin.close()
    students = [
        open_page(chromium, f"http://127.0.0.1:{one}/main"),
        open_page(chromium, f"http://localhost:{two}/main"),
    ]
    own = HeadState()
    own.apply(query=2)  # student 0 has a head of their own before the send
    for page in [teacher, *students]:
        page.wait_for_selector(f"text={weights_text(HeadState())}", timeout=60000)
    set_model(students[0], "query", "2")
    students[0].wait_for_selector(f"text={weights_text(own)}", timeout=20000)
    students[0].wait_for_function("() => location.search.includes('query=sat')", timeout=20000)
    before = students[0].evaluate("() => location.search")
    teacher.wait_for_selector("text=2 students connected", timeout=30000)

    sent = send_preset(teacher, students, "exercise-1")
    for page in students:
        page.wait_for_selector(STUDENT_LINE, timeout=20000)
    late = open_page(chromium, f"http://127.0.0.1:{two}/main")  # a latecomer's page, on the head sent
    # The key is in no page a student is served, nor in the teacher's own (its HTML and session token: the
    # token carries the request's cookies), nor on the teacher's screen
    for page in [teacher, *students, late]:
        assert KEY not in page.served
    assert KEY not in teacher.inner_text("body") and KEY not in teacher.content()
    late.context.close()
    teacher.wait_for_selector("text=2 on the head you sent", timeout=20000)
    teacher.screenshot(path=str(artifacts / "class-teacher-after-send.png"), full_page=False)
    if ZBARIMG:  # the QR code on the teacher's page reads as the address printed under it
        code = artifacts / "class-teacher-qr.png"
        teacher.locator("svg.segno").screenshot(path=str(code))
        caption = teacher.inner_text("figure.students-address figcaption")
        assert zbar(code) == [caption.split()[-1]] == [f"http://127.0.0.1:{one}/"]
    students[1].screenshot(path=str(artifacts / "class-student-after-send.png"), full_page=False)

    students[0].get_by_role("button", name="Back to my head").click()  # back: exactly what it had
    students[0].wait_for_selector(f"text={weights_text(own)}", timeout=20000)
    students[0].wait_for_function("(b) => location.search === b", arg=before, timeout=20000)
    teacher.wait_for_selector("text=1 went back to their own", timeout=20000)  # (issue 25) apart from changes
    assert "0 changed it" in teacher.inner_text("text=changed it")

    bus = next(c for c in classroom["supervisor"].children if c.name.startswith("Redis"))
    bus.paused = True  # (the launcher would start it again at once; here the fault lasts)
    classroom["redis"].kill()  # Redis goes away mid-class
    classroom["redis"].wait(timeout=10)
    teacher.wait_for_selector("text=The link between the server processes is down", timeout=20000)
    for page, query, state in ((students[0], "1", HeadState()), (students[1], "0", sent)):
        set_model(page, "query", query)  # every student's page keeps working
        state.apply(query=int(query))
        page.wait_for_selector(f"text={weights_text(state)}", timeout=20000)
    assert "Error" not in teacher.inner_text("text=link between the server processes")  # words, not errors
    bus.paused = False  # and comes back
    teacher.wait_for_selector("text=Link between the server processes: up", timeout=20000)
    send_preset(teacher, students, "tired")
    teacher.wait_for_selector("text=2 on the head you sent", timeout=20000)
    for page in [teacher, *students]:
        page.context.close()


@pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
def test_two_buses_on_redis_share_sends_and_the_class_view_and_outlive_a_redis_restart(tmp_path):
    """Two processes' buses, headless: the teacher's bus sends, students on both receive; Redis goes away
    (sends are refused, pages untouched) and comes back (the link and the sends resume)."""
    from app.redis_server import redis_url, start_redis
    from app.serving import free_port, stop_process

    port = free_port()
    redis = start_redis(port)

    async def scenario():
        nonlocal redis
        teacher_bus, other_bus = ClassBus(redis_url(port)), ClassBus(redis_url(port))
        other_bus.proc = "other"  # two processes, as the class view tells them apart
        students = [HeadState(), HeadState()]
        for state, bus in zip(students, (teacher_bus, other_bus), strict=True):
            ClassLink(state, bus=bus)
        assert await until(lambda: teacher_bus.link_up and other_bus.link_up)
        head = HeadState()
        head.load("no-mask")
        teacher_bus.send(encode(head))
        assert await until(lambda: all(encode(s) == encode(head) for s in students))
        assert await until(lambda: teacher_bus.class_view()["on_sent"] == 2)
        assert teacher_bus.class_view()["students"] == 2 and teacher_bus.class_view()["processes"] == 2
        stop_process(redis)
        assert await until(lambda: not teacher_bus.link_up and not other_bus.link_up)
        students[1].apply(query=0)  # a student's head works without Redis
        assert students[1].query == 0
        redis = start_redis(port)
        assert await until(lambda: teacher_bus.link_up and other_bus.link_up, 10)
        head.load("top-1")
        teacher_bus.send(encode(head))
        assert await until(lambda: all(encode(s) == encode(head) for s in students))
        late = HeadState()
        ClassLink(late, bus=ClassBus(redis_url(port)))  # a process started later learns the last send
        assert encode(late) == encode(head)
        for bus in (teacher_bus, other_bus):
            for task in bus._tasks:
                task.cancel()

    failures: list[BaseException] = []

    def run() -> None:  # on a thread of its own: Playwright's tests leave an event loop on this one
        try:
            asyncio.run(scenario())
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    try:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join(120)
    finally:
        stop_process(redis)
    if failures:
        raise failures[0]


async def until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
