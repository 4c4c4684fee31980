"""One server process killed in the middle of a class: how soon its students work again, and what the fault
costs the students of the other process.

    flock /tmp/bench.lock .venv/bin/python bench/fault.py --rounds 3 --out bench/fault-DATE.json

Runs the launcher's cluster (app/run_cluster.py: nginx, two `panel serve` processes, Redis, supervised).
Each round: `--survivors` students on one process and `--killed` on the other (bench/rejoiner.py: the
Bokeh protocol, each with a head of its own, each moving x-3-0 `--rate` times a second and waiting for its
answer), plus `--pages` Chromium pages on the process to be killed (the real page and static/rejoin.js);
`--before` seconds of moves, then SIGKILL to that process (as the kernel's out-of-memory killer would).
The launcher starts it again; its students come back by themselves.

* recovery: seconds from the kill until each of the killed process's students works again (its new
  session shows its own head and answers a move with that head's weights; for a page: the new session's
  views are made, with the page's own head), and until a page says it lost the server (its live region).
* survivors: the move latency of the other process's students in the fault (from the kill until the last
  student is back) against the same length of time just before the kill, in the same round: the two
  windows are interleaved in time, round after round (the killed process alternates), and judged on the
  median of the rounds' ratios.
* cpu_s: in each window, the CPU seconds of the survivors' server process, the killed one (and its restart:
  app/catch_up.py), the killed side's students and pages (on idle CPU at `--nice`: in a classroom
  they are other machines), the survivors' own clients, nginx, and everyone else's jobs on the machine.
* `--catch-up ab`: the rounds go kill with the catch-up, kill without it (the launcher's
  --no-catch-up), and, with `--null`, no kill; the summary gives each kind's medians.

Targets (issue 25): recovery p95 <= 10 s; survivors' latency in the fault <= 1.2x before it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import load_average as loadavg  # noqa: E402
from bench.rejoiner import Student  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))
    return xs[k]


def summary(latencies: list[float]) -> dict:
    p50, p95 = pct(latencies, 50), pct(latencies, 95)
    return {"moves": len(latencies), "p50_ms": p50 and 1000 * p50, "p95_ms": p95 and 1000 * p95}


class CpuSampler(threading.Thread):
    """Every `every` seconds, the CPU time (user + system) of each process under this one and of the whole
    machine, from /proc: where the CPU went in a window (the restarted process, the survivors' process, nginx,
    the students' own work, everyone else's jobs)."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, every: float = 0.1):
        super().__init__(daemon=True)
        self.every = every
        self.samples: list[tuple[float, dict, float]] = []  # (time, {pid: (ppid, seconds)}, machine busy s)
        self.stopped = threading.Event()

    @classmethod
    def _stat(cls, pid: str):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()  # (the command's name may hold spaces)
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / cls.TICK

    def _sample(self) -> None:
        procs = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (got := self._stat(entry)) is not None:
                procs[int(entry)] = got
        ours, me = {}, os.getpid()
        for pid in procs:
            p = pid
            while p in procs and p != me and p > 1:
                p = procs[p][0]
            if p == me:
                ours[pid] = procs[pid]
        cpu = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        busy = (sum(map(int, cpu[:8])) - int(cpu[3]) - int(cpu[4])) / self.TICK  # all but idle, iowait
        self.samples.append((time.time(), ours, busy))

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            self._sample()

    def used(self, t0: float, t1: float, roles: dict) -> dict:
        """CPU seconds in [t0, t1] by role: `roles` maps a role to a predicate on a pid and its line (the pid
        and its parents'); the rest of the machine (other people's jobs) as "others"."""
        at0 = [s for s in self.samples if s[0] <= t0]
        at1 = [s for s in self.samples if s[0] <= t1]
        if not at0 or not at1:
            return {}
        first, last = at0[-1], at1[-1]
        seen, parent = {}, {}  # each process's newest seconds before t0 and before t1 (it may die between)
        for t, procs, _ in self.samples:
            if t > t1:
                break
            for pid, (ppid, sec) in procs.items():
                before, _ = seen.get(pid, (0.0, 0.0))
                seen[pid] = (sec if t <= t0 else before, sec)
                parent[pid] = ppid

        def line(pid: int) -> set:  # the process and its parents
            up = {pid}
            while pid in parent and parent[pid] not in up:
                pid = parent[pid]
                up.add(pid)
            return up

        out = dict.fromkeys([*roles, "ours", "others"], 0.0)
        for pid, (s0, s1) in seen.items():
            out["ours"] += s1 - s0
            for role, of in roles.items():
                if of(pid, line(pid)):
                    out[role] += s1 - s0
                    break
        out["others"] = max(0.0, (last[2] - first[2]) - out["ours"])
        return {k: round(v, 2) for k, v in out.items()}


def own_head(k: int):
    """Student k's head: the chapter's example with its own query and token vector."""
    from widgets.state import HeadState

    s = HeadState()
    s.apply(query=k % 4)
    s.set_x(3, 0, round(-0.8 + 0.07 * k, 2))
    return s


async def keep_moving(student: Student, rate: float, stop: asyncio.Event, since: dict) -> None:
    """Move at `rate` a second (each move waits for its answer); come back when the connection goes."""
    rng = random.Random(student.name)
    await asyncio.sleep(rng.random() / rate)
    while not stop.is_set():
        t0 = time.perf_counter()
        if student.away:
            if student.lost_at is None:
                student.lost_at = since.get("kill") or time.time()
                try:
                    await student.come_back()
                except TimeoutError as exc:
                    student.errors.append(str(exc))
                continue
        await student.move(round(rng.uniform(-1.0, 1.0), 2))
        await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - t0)))


def stay_low(nice: int) -> None:
    """Keep this process and whatever it starts under SCHED_IDLE at `nice`: they stand for the students'
    own machines, so they take only CPU that the servers leave (and, at `nice`, less of it than the
    measuring students). Chromium would not stay there: it raises its compositor's and IO threads' priority
    (to -8, which it may when it runs as root, as here), and it runs in a session of its own, which the
    kernel's autogroup scheduling gives a full share of the CPU whatever its threads' nice. So this process
    gives up the right to raise a priority (CAP_SYS_NICE, from the set its children can have) before
    Chromium starts, and `lower_sessions` puts Chromium's session at `nice`."""
    import ctypes

    os.nice(nice - os.getpriority(os.PRIO_PROCESS, 0))
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # inherited by all it starts
    libc = ctypes.CDLL(None, use_errno=True)
    PR_CAPBSET_DROP, CAP_SYS_NICE = 24, 23
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0 and ctypes.get_errno() != 1:  # 1: not root
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def lower_sessions(nice: int) -> None:
    """Every session started under this process (Chromium's) at `nice` in the kernel's autogroups."""
    me, own = os.getpid(), os.getsid(0)
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = CpuSampler._stat(entry)
            if stat is not None:
                parents[int(entry)] = stat[0]
    for pid in parents:
        p = pid
        while p in parents and p not in (me, 1, 0):
            p = parents[p]
        if p == me and pid != me:
            try:
                if os.getsid(pid) != own:
                    Path(f"/proc/{pid}/autogroup").write_text(str(nice))
            except OSError:
                pass  # gone meanwhile, or no autogroups here


def browser_pages(
    url: str, backend: str, n: int, ready: threading.Event, kill_at, out: dict, done: threading.Event
) -> None:
    """n Chromium pages on `backend`, each with a head of its own; afterwards, when each said it lost the
    server and when it was back, from the kill."""
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM, CHROMIUM_FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        lower_sessions(os.getpriority(os.PRIO_PROCESS, 0))
        pages = []
        try:
            for k in range(n):
                context = browser.new_context(viewport={"width": 1300, "height": 900})
                context.add_cookies([{"name": "attn_backend", "value": backend, "url": url}])
                page = context.new_page()
                page.goto(f"{url}/main?preset=chapter&query={k % 4}")
                page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length > 0",
                                       timeout=120000)  # fmt: skip
                pages.append(page)
            lower_sessions(os.getpriority(os.PRIO_PROCESS, 0))  # (and the processes its pages started)
            ready.set()
            deadline = time.time() + 600
            while not done.is_set() and time.time() < deadline:
                time.sleep(0.2)
                if kill_at.value and all(p.evaluate("() => Rejoin.stats.back") > 0 for p in pages):
                    break
            t = kill_at.value or time.time()
            out["pages"] = []
            for page in pages:
                events = page.evaluate("() => Rejoin.stats.events")
                lost = next((e["at"] / 1000 - t for e in events if e["kind"] == "lost"), None)
                back = next((e["at"] / 1000 - t for e in events if e["kind"] == "back"), None)
                out["pages"].append({"lost_said_s": lost, "back_s": back,
                                     "attempts": page.evaluate("() => Rejoin.stats.attempts")})  # fmt: skip
        finally:
            ready.set()
            browser.close()


def the_killed_side(url: str, backend: str, args: dict, r: int, kill_at, queue) -> None:
    """In a process of its own, at a lower priority (`nice`): the students of the process to be killed and
    their pages. Their own work (reading the answers, making a page's views) happens on the students'
    machines in a classroom; here it shares the server's two cores, and must not take them from the server
    processes whose latency is measured."""
    stay_low(args["nice"])

    async def side() -> dict:
        killed = [Student(url, own_head(k + 50), backend, name=f"k{r}-{k}") for k in range(args["killed"])]
        for student in killed:
            await student.join()
        assert {s.backend for s in killed} == {backend}, "a student is not on the process to be killed"
        page_out: dict = {}
        ready, done = threading.Event(), threading.Event()
        pages = None
        if args["pages"]:
            pages = threading.Thread(
                target=browser_pages, args=(url, backend, args["pages"], ready, kill_at, page_out, done)
            )
            pages.start()
            while not ready.is_set():
                await asyncio.sleep(0.2)
        queue.put({"ready": True})
        stop = asyncio.Event()
        since: dict = {}
        movers = [asyncio.ensure_future(keep_moving(s, args["rate"], stop, since)) for s in killed]
        while not kill_at.value:
            await asyncio.sleep(0.05)
        t_kill = since["kill"] = kill_at.value
        deadline = t_kill + (args["null_window"] if args["null"] else 300)
        while time.time() < deadline:
            await asyncio.sleep(0.1)
            if all(s.back_at for s in killed) and (pages is None or not pages.is_alive()):
                break
        stop.set()
        done.set()
        await asyncio.gather(*movers, return_exceptions=True)
        if pages is not None:
            pages.join(120)
        recoveries = [s.back_at[0] - t_kill for s in killed if s.back_at]
        await asyncio.gather(*(s.close() for s in killed), return_exceptions=True)
        return {
            "recovery_s": sorted(round(x, 2) for x in recoveries),
            "p50_s": pct(recoveries, 50),
            "p95_s": pct(recoveries, 95),
            "not_back": sum(not s.back_at for s in killed),
            "not_own_head": sum(s.not_own_head for s in killed),
            "moves_kept_while_away": sum(s.kept for s in killed),
            "unanswered": sum(s.unanswered for s in killed),
            "attempts": sum(s.attempts for s in killed),
            "pages": page_out.get("pages", []),
        }

    try:
        queue.put({"result": asyncio.run(side())})
    except BaseException as exc:  # said in the round's result
        queue.put({"error": repr(exc)})


def schedule(rounds: int, null: bool, catch_up: str) -> list[dict]:
    """Each round's kind: {"kill": bool, "catch_up": bool, "victim": 0 or 1}. The kinds take turns (kill;
    with `catch_up` "ab" a kill without the catch-up next; with `null` a round without a kill), and the
    process killed alternates from one turn to the next, so each kind meets both processes alike."""
    kinds = [{"kill": True, "catch_up": catch_up != "off"}]
    if catch_up == "ab":
        kinds.append({"kill": True, "catch_up": False})
    if null:
        kinds.append({"kill": False, "catch_up": catch_up != "off"})
    return [{**kinds[r % len(kinds)], "victim": r // len(kinds) % 2} for r in range(rounds)]


def kind_name(kind: dict) -> str:
    if not kind["kill"]:
        return "no kill"
    return "kill, catch-up" if kind["catch_up"] else "kill, no catch-up"


async def one_round(c, r: int, args, kind: dict) -> dict:
    """One round of `kind` (schedule); without a kill the survivors' windows measure what two windows of the
    same length differ by without a fault."""
    import multiprocessing as mp

    null = not kind["kill"]
    ports = [port for port, _ in c["backends"]]
    victim, other = ports[kind["victim"]], ports[1 - kind["victim"]]
    survivors = [
        Student(c["url"], own_head(k), f"127.0.0.1:{other}", name=f"s{r}-{k}") for k in range(args.survivors)
    ]
    for student in survivors:
        await student.join()
    assert {s.backend for s in survivors} == {f"127.0.0.1:{other}"}, "a survivor is not on the other process"
    ctx = mp.get_context("spawn")
    kill_at, queue = ctx.Value("d", 0.0), ctx.Queue()
    side_args = {
        "killed": args.killed,
        "pages": args.pages,
        "rate": args.rate,
        "nice": args.nice,
    }
    side_args.update(null=null, null_window=args.null_window)
    side = ctx.Process(
        target=the_killed_side, args=(c["url"], f"127.0.0.1:{victim}", side_args, r, kill_at, queue)
    )
    side.start()
    first = await asyncio.get_running_loop().run_in_executor(None, queue.get, True, 600)
    if "ready" not in first:
        raise RuntimeError(f"the killed process's students did not start: {first}")
    stop = asyncio.Event()
    movers = [asyncio.ensure_future(keep_moving(s, args.rate, stop, {})) for s in survivors]
    await asyncio.sleep(args.before)
    proc = dict(c["backends"])[victim]
    survivor_pid = dict(c["backends"])[other].pid
    t_kill = time.time()
    kill_at.value = t_kill
    if not null:
        proc.send_signal(signal.SIGKILL)
    answer = await asyncio.get_running_loop().run_in_executor(None, queue.get, True, 900)
    t_back = time.time()
    side.join(60)
    await asyncio.sleep(2)
    stop.set()
    await asyncio.gather(*movers, return_exceptions=True)
    if "result" not in answer:
        raise RuntimeError(f"the killed process's students failed: {answer}")
    killed = answer["result"]
    pages = killed.pop("pages")
    back = [t_kill + x for x in killed["recovery_s"]] + [
        t_kill + pg["back_s"] for pg in pages if pg["back_s"]
    ]
    t_back = t_kill + args.null_window if null else (max(back) if back else t_back)
    window = t_back - t_kill
    killed_pids = {proc.pid, dict(c["backends"])[victim].pid}  # the one killed and the one started again
    nginx = c["nginx"].pid
    me = os.getpid()
    roles = {  # (the rest of "ours": Redis, the zygote)
        "survivors_server": lambda pid, up: pid == survivor_pid,
        "killed_server": lambda pid, up: pid in killed_pids,
        "nginx": lambda pid, up: nginx in up,
        "killed_side": lambda pid, up: side.pid in up,  # its students and Chromium pages
        "survivors_clients": lambda pid, up: pid == me,
    }
    cpu = {
        "before": args.sampler.used(t_kill - window, t_kill, roles),
        "during": args.sampler.used(t_kill, t_back, roles),
    }
    moves = [x for s in survivors for x in s.latencies]
    before = [lat for at, lat in moves if t_kill - window <= at < t_kill]
    during = [lat for at, lat in moves if t_kill <= at <= t_back]
    out = {
        "round": r,
        "kind": kind_name(kind),
        "null": null,
        "killed_port": victim,
        "window_s": round(window, 2),
        "survivors": {
            "before": summary(before),
            "during": summary(during),
            "unanswered": sum(s.unanswered for s in survivors),
            "wrong": sum(s.wrong for s in survivors),
            "lost_connection": sum(bool(s.recoveries) for s in survivors),
        },
        "killed": killed,
        "pages": pages,
        "cpu_s": cpu,
        "loadavg": loadavg(),
    }
    b, d = out["survivors"]["before"], out["survivors"]["during"]
    out["survivors"]["p50_ratio"] = d["p50_ms"] / b["p50_ms"] if b["p50_ms"] and d["p50_ms"] else None
    out["survivors"]["p95_ratio"] = d["p95_ms"] / b["p95_ms"] if b["p95_ms"] and d["p95_ms"] else None
    await asyncio.gather(*(s.close() for s in survivors), return_exceptions=True)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--survivors", type=int, default=10)
    p.add_argument("--killed", type=int, default=10)
    p.add_argument("--pages", type=int, default=2, help="Chromium pages on the process killed")
    p.add_argument("--rate", type=float, default=2.0, help="moves a second per student")
    p.add_argument("--before", type=float, default=20.0, help="seconds of moves before the kill")
    p.add_argument(
        "--nice",
        type=int,
        default=10,
        help="the killed side's nice, under SCHED_IDLE (its clients' own work)",
    )
    p.add_argument(
        "--null",
        action="store_true",
        help="rounds that kill nothing take their turn among the others (an A/B of the windows)",
    )
    p.add_argument("--null-window", type=float, default=2.5, help="a round without a kill: its window, s")
    p.add_argument(
        "--catch-up",
        choices=["on", "off", "ab"],
        default="on",
        help="the restarted process catches up on idle CPU (the launcher's default), not (--no-catch-up), or "
        "the two in turn",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    from app.catch_up import can_catch_up
    from app.run_cluster import cluster

    if args.catch_up != "off" and not can_catch_up():
        p.error("the catch-up needs the right to raise a priority back (app/catch_up.py); run as root")

    said: list[str] = []
    results = {"args": {k: str(v) for k, v in vars(args).items()}, "loadavg_start": loadavg(), "rounds": []}
    expect = args.killed + args.pages + 2  # as `app.classroom --expect` gives each process its share
    args.sampler = CpuSampler()
    args.sampler.start()
    kinds = schedule(args.rounds, args.null, args.catch_up)
    with cluster(2, teacher_key="bench-fault-key-0123456789", say=said.append, expect=expect) as c:
        for r, kind in enumerate(kinds):
            c["catch_up"] = kind["catch_up"]  # read when the launcher starts it again
            result = asyncio.run(one_round(c, r, args, kind))
            results["rounds"].append(result)
            print(
                json.dumps({k: result[k] for k in ("round", "kind", "window_s", "survivors", "killed")}),
                flush=True,
            )
            print(json.dumps(result["pages"]), json.dumps(result["cpu_s"]), flush=True)
            # the killed process is serving again before the next round
            deadline = time.time() + 120
            kills = sum(not x["null"] for x in results["rounds"])
            while time.time() < deadline and sum("started again" in s for s in said) < kills:
                time.sleep(0.5)
            time.sleep(5)

    def medians(rounds: list[dict]) -> dict:
        recoveries = [x for r in rounds for x in r["killed"]["recovery_s"]]
        pages_back = [pg["back_s"] for r in rounds for pg in r["pages"] if pg["back_s"] is not None]
        ratios = {
            q: [r["survivors"][f"{q}_ratio"] for r in rounds if r["survivors"][f"{q}_ratio"]]
            for q in ("p50", "p95")
        }
        return {
            "rounds": len(rounds),
            "recovery_p50_s": pct(recoveries, 50),
            "recovery_p95_s": pct(recoveries, 95),
            "recovery_max_s": max(recoveries) if recoveries else None,
            "pages_back_p95_s": pct(pages_back, 95),
            "pages_back_max_s": max(pages_back) if pages_back else None,
            "survivors_p50_ratio_median": statistics.median(ratios["p50"]) if ratios["p50"] else None,
            "survivors_p95_ratio_median": statistics.median(ratios["p95"]) if ratios["p95"] else None,
        }

    said_lost = [
        pg["lost_said_s"] for r in results["rounds"] for pg in r["pages"] if pg["lost_said_s"] is not None
    ]
    results["summary"] = {
        **{
            name: medians([r for r in results["rounds"] if r["kind"] == name])
            for name in dict.fromkeys(kind_name(k) for k in kinds)
        },
        "pages_lost_said_max_s": max(said_lost) if said_lost else None,
        "supervisor": said,
        "loadavg_end": loadavg(),
    }
    print(json.dumps(results["summary"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
