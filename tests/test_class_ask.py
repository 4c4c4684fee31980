"""Issue 24 item 3, the class answers a question together, through nginx, two server processes and Redis
(app/run_cluster.py): 30 students over the Bokeh protocol (bench/asker.py) and the teacher's page, then one
student's page and the teacher's in Chromium."""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from core.class_question import ask, letter
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, NGINX

REDIS = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
)
KEY = "ask-test-teacher-key-0123456789"
STUDENTS = 30
TALLY_WITHIN_S = 1.0  # the bound: the teacher's counts exact this long after the last answer
REACH_S = 30.0  # a question or a reveal reaches every page (generous: the suite runs on a busy machine)


@pytest.fixture(scope="module")
def class_of_two(tmp_path_factory):
    if NGINX is None or REDIS is None:
        pytest.skip("nginx or redis-server is not installed")
    from app.run_cluster import cluster

    logs = tmp_path_factory.mktemp("ask")
    with cluster(2, teacher_key=KEY, log_dir=logs, say=lambda *a: None) as c:
        c["ports"] = [port for port, _ in c["backends"]]
        yield c
    for port in c["ports"]:
        log = (logs / f"backend-{port}.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def run(scenario) -> None:
    """Run a coroutine on a thread of its own (Playwright's tests keep an event loop on this one)."""
    failures: list[BaseException] = []

    def go() -> None:
        try:
            asyncio.run(scenario())
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    worker = threading.Thread(target=go)
    worker.start()
    worker.join(300)
    assert not worker.is_alive(), "the class did not finish"
    if failures:
        raise failures[0]


def test_thirty_students_on_two_processes_answer_and_the_teacher_sees_exact_counts(class_of_two):
    from bench.asker import AskStudent, AskTeacher

    c = class_of_two
    ports = c["ports"]
    question = ask("exercise-1")  # four choices; C and D are both right ("it" splits 0.40 / 0.40)
    # the answers each student gives, in order (the last one counts); None: no answer
    plan = [[k % 4] for k in range(STUDENTS)]
    plan[0], plan[1], plan[2] = [0, 2], [3, 1, 2], []  # minds changed; one student does not answer
    final = [p[-1] if p else None for p in plan]
    expected = [sum(1 for f in final if f == k) for k in range(4)]

    async def scenario() -> None:
        def on(port: int) -> str:
            return f"attn_backend=127.0.0.1:{port}"

        teacher = AskTeacher(f"{c['url']}/teacher", cookie=f"attn_teacher_key={KEY}; {on(ports[0])}")
        await teacher.open()
        students = [AskStudent(f"{c['url']}/main", cookie=on(ports[k % 2])) for k in range(STUDENTS)]
        for k in range(0, STUDENTS, 6):  # a few at a time: each session is built on a busy machine
            await asyncio.gather(*(s.open() for s in students[k : k + 6]))
        assert {s.backend for s in students} == {f"127.0.0.1:{p}" for p in ports}  # both processes

        await teacher.pick("exercise-1")
        await teacher.sync()
        await teacher.press("class-ask")
        for s in students:
            assert await s.until(lambda s=s: s.shown and "weigh most after the change" in s.question, REACH_S)
            assert "right answer" not in s.status and "<table" not in s.status  # no counts before the reveal
        assert await teacher.until(lambda: teacher.counts == [0, 0, 0, 0], REACH_S)

        bad = students[2]  # a malformed answer and one not among the choices: refused in words
        await bad.answer(9)
        assert await bad.until(lambda: "not one of the choices" in bad.status, REACH_S)
        await bad.answer("C")  # not even a number: Bokeh refuses the property; the session goes on
        for s, answers in zip(students, plan, strict=True):
            for a in answers:
                await s.answer(a)
        await asyncio.gather(*(s.sync() for s in students))  # every answer is on its server
        last = time.monotonic()
        exact = await teacher.until(lambda: teacher.counts == expected, TALLY_WITHIN_S)
        took = time.monotonic() - last
        assert exact, f"after {took:.2f} s the teacher sees {teacher.counts}, not {expected}"
        assert await teacher.until(lambda: teacher.answered == STUDENTS - 1, TALLY_WITHIN_S)
        for s, f in zip(students, final, strict=True):
            if f is not None:
                assert f"Your answer, {letter(f)}, is in" in s.status

        await teacher.press("class-reveal")
        for s, f in zip(students, final, strict=True):
            assert await s.until(lambda s=s: s.revealed, REACH_S)
            if f is None:
                assert "You did not answer." in s.status
            else:
                right = f in question["right"]
                assert (f"You said {letter(f)}: right." if right else f"You said {letter(f)};") in s.status
                mine = re.search(r'<tr[^>]*><th scope="row">' + letter(f) + r"\..*?</tr>", s.status).group(0)
                assert "your answer" in mine  # their own answer marked, in its row
            for k, n in enumerate(expected):  # the class's distribution, on every page
                assert re.search(rf'<th scope="row">{letter(k)}\. [^<]*</th><td>{n}</td>', s.status)
        await students[3].answer(0)  # too late: refused, the counts stay
        assert await students[3].until(lambda: "not open for answers" in students[3].status, REACH_S)

        late = AskStudent(f"{c['url']}/main", cookie=on(ports[1]))  # a latecomer gets the question (revealed)
        await late.open()
        assert late.shown and late.revealed and "You did not answer." in late.status

        await teacher.press("class-close")
        for s in students:
            assert await s.until(lambda s=s: not s.shown, REACH_S)
        for w in [teacher, late, *students]:
            assert not w.server_errors or w is bad, w.server_errors
            await w.close()

    run(scenario)


@pytest.fixture(scope="module")
def chromium(browser_type):
    browser = browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


def test_a_students_page_and_the_teachers_in_a_browser(class_of_two, chromium, artifacts):
    from tests.test_a11y_browser import axe_violations
    from widgets.class_question_view import bank_options

    c = class_of_two
    teacher = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    teacher.goto(f"{c['url']}/teacher?key={KEY}")
    student = chromium.new_context(viewport={"width": 1100, "height": 900}).new_page()
    student.goto(f"{c['url']}/main")
    for page in (teacher, student):
        page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=60000)
    label = dict(bank_options())["no-scaling"]
    teacher.get_by_role("combobox", name="Question for the class").select_option(label=label)
    teacher.get_by_role("button", name="Ask the class").click()
    student.wait_for_selector("text=Your teacher asks the class", timeout=30000)
    assert student.get_by_text("Will that weight go up, go down or stay the same").is_visible()
    student.get_by_role("radio", name="A. goes up").check()
    student.wait_for_selector("text=Your answer, A, is in", timeout=30000)
    teacher.wait_for_selector("text=1 of 1 students answered", timeout=30000)
    teacher.get_by_role("button", name="Reveal the answer").click()
    student.wait_for_selector("text=You said A: right.", timeout=30000)
    row = student.locator("table.class-answers tr", has_text="A. goes up")
    assert "your answer" in row.inner_text() and "right answer" in row.inner_text()
    assert student.get_by_role("radio", name="B. goes down").is_disabled()
    teacher.wait_for_selector("text=The class's answers", timeout=30000)
    # the card, the reveal's table and the teacher's desk in words and names axe-core finds nothing against
    assert axe_violations(student, ".area-class") == [] and axe_violations(teacher, ".area-class") == []
    student.screenshot(path=str(artifacts / "ask-student-revealed.png"))
    teacher.screenshot(path=str(artifacts / "ask-teacher-revealed.png"))
    teacher.get_by_role("button", name="Close the question").click()
    student.wait_for_selector("text=Your teacher asks the class", state="hidden", timeout=30000)
    for page in (teacher, student):
        page.context.close()
