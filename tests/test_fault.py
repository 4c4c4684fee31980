"""Issue 25, a class that survives a fault: supervision, pages that say where they stand and come back by
themselves with their own heads, the teacher's page and its send, honest addresses.

The browser tests run the launcher's cluster (nginx, two `panel serve` processes, Redis, all supervised:
app/run_cluster.py) and kill one server process with SIGKILL, as the kernel's out-of-memory killer would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app import addresses as addr
from app import supervise
from app.catch_up import can_catch_up
from app.classroom import announce
from app.zygote import Forked
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, NGINX, ROOT, classroom_dry_run
from widgets.state import HeadState

REDIS = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
)
KEY = "fault-test-teacher-key-0123456789"
LOST = "Lost the connection to the server"
BACK = "Connected again"


# -- supervision, without a server ----------------------------------------------------------------------


def test_a_child_that_dies_is_started_again_and_one_that_keeps_dying_is_given_up(tmp_path, monkeypatch):
    monkeypatch.setattr(supervise, "RESTART_AFTER_S", (0.0, 0.05, 0.05, 0.05, 0.05))
    said: list[str] = []
    boss = supervise.Supervisor(say=said.append)
    sleeper = boss.add(
        supervise.Supervised(
            "sleeper", lambda: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        )
    )
    log = tmp_path / "crasher.log"

    def crash() -> subprocess.Popen:
        with open(log, "a") as out:
            code = "import sys; print('cannot bind the port'); sys.exit(3)"
            return subprocess.Popen([sys.executable, "-c", code], stdout=out)

    crasher = boss.add(supervise.Supervised("crasher", crash, log))
    first = sleeper.start()
    crasher.start()
    try:
        first.kill()
        first.wait()
        deadline = time.monotonic() + 60
        while (sleeper.restarts < 1 or not crasher.given_up) and time.monotonic() < deadline:
            boss.check()
            time.sleep(0.02)
        assert sleeper.restarts == 1 and sleeper.running and sleeper.proc is not first  # started again, once
        assert not sleeper.given_up and boss.why_not_serving() is None  # one server still serves the class
        assert crasher.given_up and crasher.restarts == supervise.GIVE_UP_AFTER - 1
        assert said[0] == "sleeper killed by SIGKILL; starting it again in 0.05 s"  # (a quick death)
        gave_up = said[-1]
        assert gave_up.startswith("crasher exited with status 3, the 5th time within 10 s of a start")
        assert "not starting it again" in gave_up and "cannot bind the port" in gave_up  # why, from its log
        sleeper.proc.kill()
        sleeper.given_up = True
        assert boss.why_not_serving() == "every server process keeps stopping"
    finally:
        for child in boss.children:
            if child.running:
                child.proc.kill()


# -- honest addresses ---------------------------------------------------------------------------------------


def test_a_process_started_again_runs_on_idle_cpu_until_its_students_are_back():
    """app/catch_up.py in a process of its own: `begin` puts every thread it will have under SCHED_IDLE;
    once sessions stop starting, every thread (one started meanwhile too) is back under SCHED_OTHER."""
    if not can_catch_up():
        pytest.skip("no right to raise a priority back here: the launcher leaves it alone")
    program = (
        "import os, threading, time; from app import catch_up as c\n"
        "c.begin(True, quiet=0.3, longest=600)\n"
        "low = os.sched_getscheduler(0); ids = []\n"
        "later = lambda: ids.append(threading.get_native_id()) or time.sleep(600)\n"
        "threading.Thread(target=later, daemon=True).start(); c.session_started()\n"
        "while os.sched_getscheduler(0) != os.SCHED_OTHER: time.sleep(0.1)\n"
        "print('policies', low, os.sched_getscheduler(ids[0]), os.SCHED_IDLE, os.SCHED_OTHER)\n"
    )
    command = [sys.executable, "-c", program]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # the watcher thread prints too, and a print is two writes: its line and ours may share a line
    (found,) = re.findall(r"policies (\d+) (\d+) (\d+) (\d+)", out.stdout)
    low, thread, idle, other = map(int, found)
    assert (low, thread) == (idle, other)


def test_the_catch_up_is_the_launchers_to_choose_and_the_bench_turns_it_in_rounds():
    """--no-catch-up leaves a process started again at the normal priority; the fault bench's A/B takes the
    kinds of round in turn and kills each process alike in each kind."""
    from app.classroom import parse_args
    from bench.fault import kind_name, schedule

    assert parse_args(["--no-catch-up"]).no_catch_up and not parse_args([]).no_catch_up
    rounds = schedule(12, null=True, catch_up="ab")
    assert [kind_name(k) for k in rounds[:3]] == ["kill, catch-up", "kill, no catch-up", "no kill"]
    for name in ("kill, catch-up", "kill, no catch-up", "no kill"):
        assert sorted(k["victim"] for k in rounds if kind_name(k) == name) == [0, 0, 1, 1]
    assert all(k["catch_up"] for k in schedule(4, null=False, catch_up="on"))


def test_the_launcher_prints_and_encodes_only_addresses_it_listens_on():
    own = ["192.168.1.20", "10.0.0.5", "2001:db8::7"]
    every = announce(5006, "k" * 22, False, addresses=own, listen="0.0.0.0")
    assert re.findall(r"http://\S+", every)[:3] == ["http://192.168.1.20:5006/", "http://10.0.0.5:5006/"] + [
        re.findall(r"http://\S+", every)[2]
    ]
    assert "2001:db8::7" not in every  # 0.0.0.0 answers on IPv4 only
    assert "[2001:db8::7]" in announce(5006, "k" * 22, False, addresses=own, listen="::")
    alone = announce(5006, "k" * 22, False, addresses=own, listen="127.0.0.1")
    assert re.findall(r"Students open: (\S+)", alone) == ["http://localhost:5006/"]
    assert not any(a in alone for a in own)  # neither printed nor in the QR code (which encodes the first)
    assert "students on other machines cannot reach it" in alone
    one = announce(5006, "k" * 22, False, addresses=own, listen="10.0.0.5")
    assert re.findall(r"http://[\w.\[\]:]+", one) == ["http://10.0.0.5:5006", "http://10.0.0.5:5006"]
    assert addr.student_urls(5006, own, "lab1", "10.0.0.5") == ["http://10.0.0.5:5006/"]
    out = classroom_dry_run("--port", "5399", "--address", "127.0.0.1")
    assert "Students open: http://localhost:5399/" in out and "cannot reach it" in out
    assert not any(f"http://{a}:5399" in out for a in addr.own_addresses())


def test_the_teachers_key_is_kept_between_starts_in_a_file_only_its_user_reads(tmp_path, monkeypatch):
    from app.classroom import KEY_FILE, teacher_key

    monkeypatch.setenv("ATTN_STATE_DIR", str(tmp_path))
    key, kept = teacher_key()
    assert not kept and len(key) >= 20
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert teacher_key() == (key, True)  # the next start: the same key, so an open teacher's page comes back
    fresh, kept = teacher_key(new=True)  # --new-key
    assert fresh != key and not kept and teacher_key() == (fresh, True)
    assert teacher_key(keep=False)[0] == fresh  # a dry run reads, never writes


# -- in a browser: two processes behind nginx, one killed ---------------------------------------------------


@pytest.fixture(scope="module")
def class_of_two(tmp_path_factory):
    if NGINX is None or REDIS is None:
        pytest.skip("nginx or redis-server is not installed")
    from app.run_cluster import cluster

    logs = tmp_path_factory.mktemp("fault")
    said: list[str] = []
    with cluster(2, teacher_key=KEY, log_dir=logs, say=said.append) as c:
        c["said"] = said
        c["logs"] = logs
        yield c


@pytest.fixture(scope="module")
def chromium(browser_type):
    browser = browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


def on_backend(browser, c, port: int, path: str = "/main"):
    """A page whose nginx cookie names the backend on `port` (as after a student's first visit)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.add_cookies([{"name": "attn_backend", "value": f"127.0.0.1:{port}", "url": c["url"]}])
    page = context.new_page()
    response = page.goto(c["url"] + path)
    assert response.status == 200 and response.headers["x-attn-backend"] == f"127.0.0.1:{port}"
    return page


def weights_text(state: HeadState) -> str:
    return "weights = [" + ", ".join(f"{w:.2f}" for w in state.head.weights[state.query]) + "]"


def set_model(page, name: str, value) -> None:
    page.evaluate("([n, v]) => { Bokeh.documents[0].get_model_by_name(n).value = v; }", [name, value])


def server_state(page) -> dict:
    """The state the page's server published last (its channel: widgets/channel.py `state`)."""
    return json.loads(page.evaluate("() => Bokeh.documents[0].get_model_by_name('head-channel').state"))


def kill(c, port: int) -> subprocess.Popen:
    proc = dict(c["backends"])[port]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    return proc


def wait_until(predicate, timeout: float = 90.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


def status(page) -> str:
    return page.inner_text("#attn-connection[role=status]")


def says(page, words: str, timeout: float = 60000) -> None:
    """Wait until the page's live region (static/rejoin.js: role "status") says `words`."""
    page.wait_for_function(
        "(w) => { const s = document.querySelector('#attn-connection[role=status]');"
        " return !!s && s.textContent.includes(w); }",
        arg=words,
        timeout=timeout,
    )


def server_has(page, condition: str, timeout: float = 60000) -> None:
    """Wait until the state the page's server published (`s`) meets a JavaScript condition."""
    page.wait_for_function(
        "(c) => { const s = JSON.parse(Bokeh.documents[0].get_model_by_name('head-channel').state);"
        " return eval(c); }",
        arg=condition,
        timeout=timeout,
    )


def test_a_page_on_a_killed_process_says_so_keeps_its_moves_and_comes_back_with_them(
    class_of_two, chromium, artifacts
):
    """The student's and the teacher's pages on the process that dies say so in a live region, keep drawing
    the student's moves, and come back by themselves on a new session built from their own state: the
    head, the query, the send on show, the teacher's last send. No reload."""
    c = class_of_two
    a, b = [port for port, _ in c["backends"]]
    teacher = on_backend(chromium, c, a, f"/teacher?key={KEY}")
    assert teacher.url == c["url"] + "/teacher"  # the key left the address bar
    student = on_backend(chromium, c, a)
    other = on_backend(chromium, c, b)
    for page in (teacher, student, other):
        page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=60000)
    sent = HeadState()
    sent.load("exercise-1")
    set_model(teacher, "preset", "exercise-1")
    server_has(teacher, "s.preset === 'exercise-1'")
    teacher.get_by_role("button", name="Send this head to every student").click()
    for page in (student, other):
        page.wait_for_selector("text=Your teacher sent this head", timeout=30000)
    teacher.wait_for_selector("text=2 on the head you sent", timeout=30000)
    set_model(student, "query", "1")  # the student's own change to the sent head
    server_has(student, "s.query === 1")
    for page in (teacher, student):
        page.evaluate("() => { window.notReloaded = true; }")

    kill(c, a)
    for page in (teacher, student):
        says(page, LOST)
    other.wait_for_timeout(300)
    assert LOST not in status(other)  # the other process's students are not told anything
    student.screenshot(path=str(artifacts / "fault-student-away.png"))
    mine = HeadState()  # the sent head, query 1, and a move made while away
    mine.load("exercise-1")
    mine.apply(query=1)
    mine.set_x(0, 0, 0.55)
    set_model(student, "x-0-0", 0.55)  # the move while away: drawn by the page itself ...
    student.wait_for_function(
        "(w) => Bokeh.documents[0].get_model_by_name('steps').text.replace(/<[^>]+>/g, '').includes(w)",
        arg=weights_text(mine),
    )
    for page in (teacher, student):
        says(page, BACK, timeout=90000)
    student.screenshot(path=str(artifacts / "fault-student-back.png"))
    for page in (teacher, student):
        assert page.evaluate("() => window.notReloaded === true && Bokeh.documents.length === 1")
    # ... and the new session has it (the page may have come back before the move and sent it then, as a
    # drag, which the server applies without publishing its state again: a change of query publishes it)
    assert student.evaluate("() => Bokeh.documents[0].get_model_by_name('x-0-0').value") == 0.55
    set_model(student, "query", "2")
    mine.apply(query=2)
    server_has(student, "s.query === 2")
    got = server_state(student)
    assert got["X"] == mine.X.tolist()
    student.wait_for_selector("text=Your teacher sent this head")
    assert not student.evaluate("() => [...document.querySelectorAll('section')].some((s) => s.inert)")
    teacher.wait_for_selector("text=1 on the head you sent", timeout=60000)  # the send survived ...
    teacher.wait_for_selector("text=1 changed it", timeout=60000)  # ... and the counts are right
    assert server_state(teacher)["preset"] == "exercise-1"  # the teacher's own head came back too
    teacher.wait_for_selector("text=Last sent at")
    student.get_by_role("button", name="Back to my head").click()  # the way back survived the fault
    server_has(student, "s.preset === 'chapter'")
    set_model(student, "query", "3")  # and the new session answers moves as the old one did
    server_has(student, "s.query === 3")
    assert any(f"port {a} killed by SIGKILL" in line for line in c["said"])
    wait_until(lambda: any(f"port {a} started again" in line for line in c["said"]), what="restart")
    assert isinstance(dict(c["backends"])[a], Forked)  # a warm start: a fork of the zygote (app/zygote.py)
    for page in (teacher, student, other):
        page.context.close()


def test_the_others_keep_answering_while_the_killed_process_students_come_back(class_of_two, chromium):
    """Twenty sessions on two processes, one process killed: every move of a student on the other process is
    answered with its own weights throughout; the killed process's students are working again with their own
    heads, without a reload; the launcher stays up and starts the process again."""
    from bench.load_test import Wire, shows

    c = class_of_two
    a, b = [port for port, _ in c["backends"]]
    # (their own link: the class's last send would otherwise be their starting head)
    own_link = "/main?preset=chapter"
    pages = {port: [on_backend(chromium, c, port, own_link) for _ in range(2)] for port in (a, b)}
    for k, page in enumerate(pages[b]):  # each with a head of its own
        page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=60000)
        set_model(page, "query", str(k + 1))
        set_model(page, "x-2-1", 0.25 + 0.1 * k)
        server_has(page, f"s.query === {k + 1}")
        page.evaluate("() => { window.notReloaded = true; }")
    result: dict = {}

    async def class_at_work(stop: threading.Event, killed: threading.Event) -> None:
        wires = [
            Wire(f"{c['url']}/main", cookie=f"attn_backend=127.0.0.1:{port}", args="preset=chapter")
            for port in (a, b) * 8
        ]
        await asyncio.gather(*(w.open() for w in wires))
        survivors = [w for w in wires if w.backend == f"127.0.0.1:{a}"]
        result["split"] = sorted({w.backend for w in wires})
        answered, during, k = 0, 0, 0
        while not stop.is_set():
            k += 1
            value = round(0.01 * (k % 90), 2)
            if k == 3:
                killed.set()  # the fault comes while they work
            times = await asyncio.gather(*(w.move(value, timeout=60) for w in survivors))
            assert all(shows(w.weights, value) for w in survivors), "a survivor got another head's weights"
            answered += len(times)
            during += killed.is_set() and not back.is_set()  # a round of moves, all answered, in the fault
            await asyncio.sleep(0.5)
        result["answered"], result["during"] = answered, during
        await asyncio.gather(*(w.close() for w in wires), return_exceptions=True)

    stop, killed, back = threading.Event(), threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def run() -> None:  # on a thread of its own: Playwright keeps an event loop on this one
        try:
            asyncio.run(class_at_work(stop, killed))
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        wait_until(lambda: killed.is_set() or failures, what="the survivors at work")
        kill(c, b)
        for page in pages[b]:
            says(page, BACK, timeout=90000)
        for k, page in enumerate(pages[b]):  # their own heads, on a new session
            assert page.evaluate("() => window.notReloaded === true")
            got = server_state(page)
            assert got["query"] == k + 1 and got["X"][2][1] == pytest.approx(0.25 + 0.1 * k)
            set_model(page, "query", "0")  # working
            server_has(page, "s.query === 0")
        back.set()
        for page in pages[a]:
            assert LOST not in status(page)
    finally:
        stop.set()
        worker.join(120)
    if failures:
        raise failures[0]
    assert set(result["split"]) == {f"127.0.0.1:{a}", f"127.0.0.1:{b}"}
    assert result["during"] >= 1 and result["answered"] >= 8 * 2  # they kept answering in the fault
    assert c["supervisor"].why_not_serving() is None
    wait_until(lambda: any(f"port {b} started again" in line for line in c["said"]), what="restart")
    if can_catch_up():  # it rebuilt its students' sessions on idle CPU, then went back to the normal policy
        log = c["logs"] / f"backend-{b}.log"
        wait_until(lambda: "Caught up after" in log.read_text(), what="caught up")
    for port_pages in pages.values():
        for page in port_pages:
            page.context.close()
    for port in (a, b):
        log = (c["logs"] / f"backend-{port}.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def test_new_students_go_to_the_process_that_is_up(class_of_two):
    """While a server process is down, nginx sends every new student, and every one whose cookie names the
    process that is down, to the one that is up (and tells the page so in its cookie)."""
    import urllib.request

    c = class_of_two
    a, b = [port for port, _ in c["backends"]]
    child = next(ch for ch in c["supervisor"].children if ch.name == f"Server process on port {a}")
    child.paused = True  # (the launcher would start it again at once; here the fault lasts)
    try:
        kill(c, a)
        for cookie in ("", f"attn_backend=127.0.0.1:{a}", f"attn_backend=127.0.0.1:{b}") * 3:
            request = urllib.request.Request(f"{c['url']}/main?preset=chapter", headers={"Cookie": cookie})
            with urllib.request.urlopen(request, timeout=60) as answer:
                assert answer.status == 200 and answer.headers["X-Attn-Backend"] == f"127.0.0.1:{b}"
                assert f"attn_backend=127.0.0.1:{b};" in answer.headers["Set-Cookie"]
    finally:
        child.paused = False
    restarted = f"Server process on port {a} started again"
    wait_until(lambda: child.running and restarted in c["said"], what="restart")


def test_nginx_is_started_again_too(class_of_two):
    import urllib.request

    c = class_of_two
    c["nginx"].send_signal(signal.SIGKILL)
    c["nginx"].wait(timeout=10)
    wait_until(lambda: any(line == "nginx started again" for line in c["said"]), what="nginx restarted")

    def answers() -> bool:
        try:
            return urllib.request.urlopen(f"{c['url']}/main", timeout=60).status == 200
        except OSError:
            return False

    wait_until(answers, what="serving")


# -- the whole launcher restarted under open pages ---------------------------------------------------------


def test_pages_come_back_after_the_whole_launcher_is_restarted(chromium, tmp_path):
    """`python -m app.classroom` stopped and started again (as after a laptop's restart): the open student's
    and teacher's pages come back by themselves, the student's with its own head; the teacher's key was kept
    between the two starts, so its page's cookie still lets it in."""
    from app.serving import free_port, wait_for_http

    port = free_port()
    env = {**os.environ, "ATTN_STATE_DIR": str(tmp_path / "state")}
    argv = [sys.executable, "-m", "app.classroom", "--port", str(port), "--address", "127.0.0.1",
            "--processes", "1", "--no-admin"]  # fmt: skip

    def launch(name: str) -> subprocess.Popen:
        out = open(tmp_path / name, "w")  # noqa: SIM115
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)

    launcher = launch("first.log")
    try:
        wait_for_http(f"http://127.0.0.1:{port}/main", timeout=120)
        key = re.search(r"/teacher\?key=(\S+)", (tmp_path / "first.log").read_text()).group(1)
        context = chromium.new_context(viewport={"width": 1300, "height": 900})
        student, teacher = context.new_page(), context.new_page()
        student.goto(f"http://127.0.0.1:{port}/main")
        teacher.goto(f"http://127.0.0.1:{port}/teacher?key={key}")
        for page in (student, teacher):
            page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=60000)
        set_model(student, "query", "2")
        server_has(student, "s.query === 2")
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=60)
        for page in (student, teacher):
            says(page, LOST)
        student.wait_for_timeout(3000)  # the pages keep trying while nothing answers
        assert student.evaluate("() => Rejoin.stats.attempts") >= 3
        launcher = launch("second.log")
        for page in (student, teacher):
            says(page, BACK, timeout=120000)
        assert server_state(student)["query"] == 2
        assert "kept from the last start" in (tmp_path / "second.log").read_text()
        assert teacher.evaluate("() => !!Bokeh.documents[0].get_model_by_name('send-status')")  # let in again
        context.close()
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=60)
    for name in ("first.log", "second.log"):
        assert "Traceback" not in (tmp_path / name).read_text()
