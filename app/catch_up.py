"""A server process started again after a crash rebuilds its returning students' sessions only on CPU that
no other process wants, so the students of the processes that kept working do not wait behind it.

When a server process dies, its students all come back within seconds, and the process started again
spends those seconds building their sessions, most of a core's work. On a machine whose cores are shared,
that work takes CPU from the processes that kept serving, and their students' moves slow down. So the
launcher starts a process again under Linux's SCHED_IDLE policy (app/zygote.py, before the process has a
thread): the kernel runs it only on a core nothing else wants, and takes the core back the moment another
process wakes. On a quiet machine the survivors' moves took 1.07x their time before the fault (median)
under SCHED_IDLE, 1.23x with the process not lowered, and 1.26x at nice 10, which only weights the
sharing; the students came back as fast (bench/RESULTS-fault.md). The process goes back to the normal
policy once its students are back: no new session for QUIET_S, or LONGEST_S after its start, whichever
comes first; the second bounds what a machine with no idle CPU at all costs the returning students.

Going back needs the right to (root's CAP_SYS_NICE, or an RLIMIT_NICE that allows the process's nice, as
systemd's LimitNICE= sets). Without it a lowered process would stay low for good, so the launcher then
leaves the policy alone (`can_catch_up` is False) and the process catches up as before. The launcher's
`--no-catch-up` does the same by choice (bench/fault.py --catch-up ab measures one against the other).
"""

from __future__ import annotations

import os
import resource
import threading
import time

QUIET_S = 3.0  # no new session for this long: the students that were coming back are back
LONGEST_S = 6.0  # at the latest, this long after the start
CAP_SYS_NICE = 23

_last_session = None  # monotonic time of the newest session's start, while catching up


def can_raise_back(to: int) -> bool:
    """May this process (and a child of it) go back to the normal policy at niceness `to` after leaving it?"""
    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    if soft == resource.RLIM_INFINITY or 20 - to <= soft:
        return True
    try:
        for line in open("/proc/self/status"):  # noqa: SIM115
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
    except OSError:
        pass
    return False


def can_catch_up() -> bool:
    """Can a process started again here catch up under SCHED_IDLE and then come back?"""
    return hasattr(os, "SCHED_IDLE") and can_raise_back(os.getpriority(os.PRIO_PROCESS, 0))


def session_started() -> None:
    """A session started (app/main.py): the students are still coming back."""
    global _last_session
    _last_session = time.monotonic()


def every_thread_normal() -> None:
    """Linux keeps a policy per thread: each of this process's threads back under SCHED_OTHER."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
        except (ProcessLookupError, PermissionError):
            pass  # a thread that ended meanwhile; (not permitted: can_catch_up said otherwise)


def begin(lower: bool, quiet: float = QUIET_S, longest: float = LONGEST_S) -> None:
    """In a process started again, before it has threads: with `lower`, run under SCHED_IDLE (its threads
    to come inherit it), and go back to the normal policy once its students are back (a thread of its own
    watches)."""
    if not lower:
        return
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    start = time.monotonic()

    def watch() -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            back = _last_session is not None and now - _last_session >= quiet
            if back or now - start >= longest:
                every_thread_normal()
                print(f"Caught up after {now - start:.1f} s: back at the normal priority", flush=True)
                return

    threading.Thread(target=watch, name="catch-up", daemon=True).start()
