"""The fault soak (issue 25): a class at work while its server processes and its Redis keep dying.

    flock /tmp/bench.lock .venv/bin/python bench/soak.py --minutes 10 --out bench/soak-DATE.json

The launcher's cluster (app/run_cluster.py: nginx, two supervised `panel serve` processes, Redis), a
teacher's page in Chromium, and `--students` students (bench/rejoiner.py: the Bokeh protocol, doing what a
served page with static/rejoin.js does). The teacher sends a head; `--still` students stay on it, the others
move x-3-0 `--rate` times a second to values of their own (each move waits for its answer). Every
`--kill-every` seconds one server process is killed with SIGKILL (the two in turn), every `--redis-every`
seconds Redis; the launcher starts each again, the students and the teacher's page come back by themselves.

Afterwards:
* no student lost their head: each student's session shows the head the student last set (its slider's
  value, its query, the weights of that head), and every new session it came back on showed it at once;
* no moves dropped: every move made on an open connection was answered with the weights of the student's
  own head (a move made while away is kept in the head the student comes back with);
* the teacher's counts are right: connected, on the head sent, changed it;
* memory flat: each server process's resident memory over the soak.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import load_average  # noqa: E402
from bench.fault import pct  # noqa: E402
from bench.load_test import find_models  # noqa: E402
from bench.rejoiner import Student  # noqa: E402

KEY = "bench-soak-teacher-key-0123456789"
SENT = "exercise-1"


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def teacher_page(url: str, commands: dict, out: dict, stop: threading.Event) -> None:
    """The teacher's page in Chromium: sends the head when asked, then reads the class view until told to
    stop; how many times it lost its server and came back."""
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM, CHROMIUM_FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
            page.goto(f"{url}/teacher?key={KEY}")
            page.wait_for_selector("text=students connected", timeout=120000)
            out["ready"] = True
            while not commands.get("send"):
                time.sleep(0.2)
            page.evaluate(f"() => {{ Bokeh.documents[0].get_model_by_name('preset').value = '{SENT}'; }}")
            page.wait_for_function(
                "(p) => JSON.parse(Bokeh.documents[0].get_model_by_name('head-channel').state).preset === p",
                arg=SENT,
                timeout=60000,
            )
            page.get_by_role("button", name="Send this head to every student").click()
            out["sent"] = True
            counts = "() => Bokeh.documents[0].get_model_by_name('class-counts').text.replace(/<[^>]+>/g, '')"
            while not stop.is_set():
                time.sleep(1)
                try:
                    out["counts"] = page.evaluate(counts)
                except Exception as exc:  # the page is between two sessions
                    out["error"] = repr(exc)
            time.sleep(3)  # the last reports
            out["counts"] = page.evaluate(counts)
            out["link"] = page.evaluate(
                "() => Bokeh.documents[0].get_model_by_name('class-link-state').text.replace(/<[^>]+>/g, '')"
            )
            out["rejoin"] = page.evaluate("() => ({lost: Rejoin.stats.lost, back: Rejoin.stats.back})")
        finally:
            browser.close()


async def class_at_work(students: list[Student], still: int, rate: float, stop: asyncio.Event) -> None:
    async def one(k: int, student: Student) -> None:
        rng = random.Random(k)
        await asyncio.sleep(rng.random() / rate)
        while not stop.is_set():
            t0 = time.perf_counter()
            if student.away:
                if student.lost_at is None:
                    student.lost_at = time.time()
                try:  # one who stays on the head sent is working again once its session shows that head
                    await student.come_back(nudge=k >= still)
                except TimeoutError as exc:
                    student.errors.append(str(exc))
                continue
            if k >= still:
                await student.move(round(rng.uniform(-1.0, 1.0), 2))
            await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - t0)))

    await asyncio.gather(*(one(k, s) for k, s in enumerate(students)))


async def final_state(student: Student) -> dict:
    """What the student's session holds now, from a fresh pull of its document."""
    _, content = await student.wire.request("PULL-DOC-REQ", {}, timeout=60)
    found = find_models(content["doc"], ("x-3-0", "query"))
    return {"x": found["x-3-0"][1].get("value"), "query": found["query"][1].get("value")}


async def run(c, args, results: dict) -> None:
    from widgets.state import HeadState

    students = [Student(c["url"], HeadState(), name=f"s{k}") for k in range(args.students)]
    for student in students:
        student.state.load("chapter")
        await student.join(class_state=None)
    results["split"] = {b: sum(s.backend == b for s in students) for b in {s.backend for s in students}}
    commands, teacher, stop_teacher = {}, {}, threading.Event()
    thread = threading.Thread(target=teacher_page, args=(c["url"], commands, teacher, stop_teacher))
    thread.start()
    while not teacher.get("ready"):
        await asyncio.sleep(0.5)
    commands["send"] = True
    sent = HeadState()
    sent.load(SENT)
    deadline = time.time() + 120

    def all_have_it() -> bool:
        return all((s.wire.channel("classroom") or {}).get("send") for s in students)

    while time.time() < deadline and not all_have_it():
        await asyncio.sleep(0.2)
    for student in students:  # every student is on the head sent
        student.state = _copy(sent)
    stop = asyncio.Event()
    work = asyncio.ensure_future(class_at_work(students, args.still, args.rate, stop))
    t0 = time.time()
    memory: list[dict] = []
    events: list[dict] = []
    next_kill, next_redis, victim = t0 + args.kill_every, t0 + args.redis_every, 0
    while time.time() - t0 < args.minutes * 60:
        await asyncio.sleep(1)
        now = time.time()
        if int(now - t0) % 5 == 0:
            for port, proc in c["backends"]:
                sample = {"t": round(now - t0), "port": port, "pid": proc.pid, "rss_mb": rss_mb(proc.pid)}
                memory.append(sample)
        if now - t0 > args.minutes * 60 - 10:  # no fault in the last seconds: the class settles first
            continue
        if now >= next_kill:
            port, proc = c["backends"][victim % 2]
            proc.send_signal(signal.SIGKILL)
            events.append({"t": round(now - t0, 1), "killed": f"server {port}"})
            victim += 1
            next_kill += args.kill_every
        if now >= next_redis:
            c["redis"].send_signal(signal.SIGKILL)
            events.append({"t": round(now - t0, 1), "killed": "redis"})
            next_redis += args.redis_every
    stop.set()
    await work
    await asyncio.sleep(5)  # the class view catches up
    stop_teacher.set()
    thread.join(120)
    finals = []
    for k, student in enumerate(students):
        if student.away:
            await student.come_back(nudge=k >= args.still)
        got = await final_state(student)
        own = {"x": float(student.state.X[3][0]), "query": str(student.state.query)}
        same = got["x"] == own["x"] and got["query"] == own["query"]
        finals.append({"student": k, "own": own, "session": got, "same": same})
    recoveries = [x for s in students for x in s.recoveries]
    lat = [x for s in students for _, x in s.latencies]
    results.update(
        {
            "events": events,
            "memory": memory,
            "teacher": teacher,
            "expected_counts": f"{args.students} students connected · {args.still} on the head you sent · "
            f"{args.students - args.still} changed it",
            "students": {
                "lost_their_head": sum(not f["same"] for f in finals),
                "not_own_head_on_coming_back": sum(s.not_own_head for s in students),
                "moves_answered": sum(s.answered for s in students),
                "moves_unanswered_on_an_open_connection": sum(s.unanswered for s in students),
                "moves_kept_while_away": sum(s.kept for s in students),
                "wrong_answers": sum(s.wrong for s in students),
                "came_back": len(recoveries),
                "recovery_p50_s": statistics.median(recoveries) if recoveries else None,
                "recovery_p95_s": pct(recoveries, 95),
                "recovery_max_s": max(recoveries) if recoveries else None,
                "move_p50_ms": 1000 * statistics.median(lat) if lat else None,
                "errors": sorted({e for s in students for e in s.errors}),
            },
            "finals_not_same": [f for f in finals if not f["same"]],
        }
    )
    await asyncio.gather(*(s.close() for s in students), return_exceptions=True)


def _copy(state):
    from widgets.state import HeadState
    from widgets.url_state import apply_params, encode

    other = HeadState()
    apply_params(other, encode(state))
    return other


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--still", type=int, default=10, help="students who stay on the head sent")
    p.add_argument("--rate", type=float, default=2.0)
    p.add_argument("--kill-every", type=float, default=60.0)
    p.add_argument("--redis-every", type=float, default=120.0)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--logs", type=Path, default=None, help="keep the servers' logs here")
    args = p.parse_args(argv)
    from app.run_cluster import cluster

    said: list[str] = []
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "loadavg_start": load_average()}
    expect = args.students // 2 + 6  # as `app.classroom --expect` gives each process its share
    logs = {"log_dir": args.logs} if args.logs else {}
    with cluster(2, teacher_key=KEY, say=said.append, session_lifetime_min=20.0, expect=expect, **logs) as c:
        asyncio.run(run(c, args, results))
    results["supervisor"] = said
    results["loadavg_end"] = load_average()
    keys = ("students", "expected_counts", "split", "loadavg_start", "loadavg_end")
    summary = {k: results[k] for k in keys}
    summary["teacher_counts"] = results["teacher"].get("counts")
    summary["teacher_rejoin"] = results["teacher"].get("rejoin")
    summary["teacher_link"] = results["teacher"].get("link")
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
