"""The class answers a question together (issue 24 item 3), with a class of 100: how soon the question reaches
every page, how soon the teacher's tally is complete after the last answer, how soon the reveal reaches every
page. Targets: p95 ≤ 1 s, ≤ 1 s, p95 ≤ 1 s.

    flock /tmp/bench.lock .venv/bin/python bench/bench_ask.py --students 100 --rounds 3 [--processes 2]

It starts the launcher's cluster (app/run_cluster.py: nginx, N `panel serve` processes, Redis; with
--processes 1, one process and no Redis, as `python -m app.classroom --processes 1` serves) and opens the
teacher's page and the students' pages over the Bokeh protocol (bench/asker.py: each reads and parses every
message the server sends, as BokehJS does; no page is drawn). Each round: the teacher asks a question (a
different one each round), every student answers at once (the choices spread over the students), the teacher
reveals, then closes. Times are from the teacher's press (sent) to each page's first message showing it, and
from the last answer sent to the teacher's counts being exact.

Beside each round, as a measure of how busy the machine is at that moment, one student's slider move is timed
(the median of 5: the answer of the student's own server for one page). Every round records /proc/loadavg.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.asker import AskStudent, AskTeacher  # noqa: E402
from bench.common import load_average  # noqa: E402
from core.class_question import TOP_KEY, ask  # noqa: E402

KEY = "bench-ask-teacher-key-0123456789"
QUESTIONS = ["exercise-1", "no-scaling", TOP_KEY, "no-mask", "temperature-high", "future-rows"]
REACH_TIMEOUT = 60.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(0.95 * len(ordered)) - 1))]


def choices_of(name: str) -> int:
    return 4 if name == TOP_KEY else len(ask(name)["choices"])


async def class_round(teacher: AskTeacher, students: list[AskStudent], name: str) -> dict:
    for s in students:
        s.seen.clear()
    await teacher.pick(name)
    await teacher.sync()
    t_ask = time.time()
    await teacher.press("class-ask")
    missing = [
        s for s in students if not await s.until(lambda s=s: s.shown and not s.revealed, REACH_TIMEOUT)
    ]
    reached = [s.seen["question"] - t_ask for s in students if "question" in s.seen]

    n = choices_of(name)
    expected = [0] * n
    plan = [k % n for k in range(len(students))]
    for a in plan:
        expected[a] += 1
    await asyncio.gather(*(s.answer(a) for s, a in zip(students, plan, strict=True)))
    t_last = time.time()
    exact = await teacher.until(lambda: teacher.counts == expected, REACH_TIMEOUT)
    tally_after = teacher.t_counts - t_last if exact else None

    t_reveal = time.time()
    await teacher.press("class-reveal")
    for s in students:
        await s.until(lambda s=s: s.revealed, REACH_TIMEOUT)
    revealed = [s.seen["reveal"] - t_reveal for s in students if "reveal" in s.seen]
    own_marked = sum(1 for s in students if s.revealed and "your answer" in s.status)

    await teacher.press("class-close")
    for s in students:
        await s.until(lambda s=s: not s.shown, REACH_TIMEOUT)
    return {
        "question": name,
        "students": len(students),
        "question_reached": len(reached),
        "question_p50_s": statistics.median(reached) if reached else None,
        "question_p95_s": p95(reached) if reached else None,
        "question_max_s": max(reached) if reached else None,
        "missing_question": len(missing),
        "tally_exact": exact,
        "tally_after_last_answer_s": tally_after,
        "reveal_reached": len(revealed),
        "reveal_p50_s": statistics.median(revealed) if revealed else None,
        "reveal_p95_s": p95(revealed) if revealed else None,
        "reveal_max_s": max(revealed) if revealed else None,
        "own_answer_marked": own_marked,
    }


async def move_median(student: AskStudent, k: int) -> float:
    times = [await student.move(round(0.1 * ((k + j) % 9) - 0.4, 3)) for j in range(5)]
    return statistics.median(times)


async def bench(url: str, ports: list[int], args) -> dict:
    def on(port: int) -> str:
        return f"attn_backend=127.0.0.1:{port}"

    teacher = AskTeacher(f"{url}/teacher", cookie=f"attn_teacher_key={KEY}; {on(ports[0])}")
    await teacher.open()
    students = [AskStudent(f"{url}/main", cookie=on(ports[k % len(ports)])) for k in range(args.students)]
    t0 = time.time()
    for k in range(0, len(students), 10):
        await asyncio.gather(*(s.open() for s in students[k : k + 10]))
    opened = time.time() - t0
    mover = AskStudent(f"{url}/main", cookie=on(ports[-1]))  # the machine's pace: one page's own moves
    await mover.open()
    await asyncio.sleep(2.0)  # the processes' first reports (widgets/broadcast.py) and the class view settle
    rounds = []
    for r in range(args.rounds):
        name = QUESTIONS[r % len(QUESTIONS)]
        before = await move_median(mover, r)
        result = await class_round(teacher, students, name)
        after = await move_median(mover, r + 1)
        result.update(round=r + 1, load=load_average(), move_median_s=statistics.median([before, after]))
        rounds.append(result)
        print(json.dumps(result), flush=True)
    errors = [e for w in [teacher, mover, *students] for e in w.server_errors]
    for w in [teacher, mover, *students]:
        await w.close()
    return {"opened_s": opened, "rounds": rounds, "server_errors": errors[:10]}


def summary(rounds: list[dict]) -> dict:
    def med(key):
        values = [r[key] for r in rounds if r[key] is not None]
        return statistics.median(values) if values else None

    return {
        "question_p95_median_s": med("question_p95_s"),
        "tally_after_last_answer_median_s": med("tally_after_last_answer_s"),
        "reveal_p95_median_s": med("reveal_p95_s"),
        "worst_question_p95_s": max(r["question_p95_s"] or 1e9 for r in rounds),
        "worst_tally_s": max(r["tally_after_last_answer_s"] or 1e9 for r in rounds),
        "worst_reveal_p95_s": max(r["reveal_p95_s"] or 1e9 for r in rounds),
        "move_median_s": med("move_median_s"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from app.run_cluster import cluster

    start_load = load_average()
    with cluster(args.processes, teacher_key=KEY, redis=args.processes > 1, say=lambda *a: None) as c:
        ports = [port for port, _ in c["backends"]]
        result = asyncio.run(bench(c["url"], ports, args))
    result.update(
        students=args.students,
        processes=args.processes,
        load_at_start=start_load,
        load_at_end=load_average(),
        summary=summary(result["rounds"]),
    )
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
