"""A server process started again after a crash rebuilds its returning students' sessions at a lower
priority, so the students of the processes that kept working do not wait behind it.

When a server process dies, its students all come back within seconds, and the process started again
spends those seconds building their sessions, a core's worth of work. On a machine whose cores are all
busy, that work takes CPU from the processes that kept serving, and their students' moves slow down
(bench/RESULTS-fault.md). So the launcher starts a process again at nice CATCH_UP_NICE (app/zygote.py,
before the process has a thread), and the process goes back to its first priority once its students are
back: no new session for QUIET_S, or LONGEST_S after its start, whichever comes first.

Going back up needs the right to raise a priority (root's CAP_SYS_NICE, or an RLIMIT_NICE that allows it,
as systemd's LimitNICE= sets). Without it a lowered process would stay low for good, so the launcher then
leaves the priority alone (`catch_up_nice` is 0) and the process catches up as before.
"""

from __future__ import annotations

import os
import resource
import threading
import time

CATCH_UP_NICE = 10  # a restarted process's niceness above the launcher's while its students come back
QUIET_S = 3.0  # no new session for this long: the students that were coming back are back
LONGEST_S = 20.0  # at the latest, this long after the start
CAP_SYS_NICE = 23

_last_session = None  # monotonic time of the newest session's start, while catching up


def can_raise_back(to: int) -> bool:
    """May this process (and a child of it) raise its priority back to niceness `to` after lowering it?"""
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


def catch_up_nice() -> int:
    """The niceness (above the launcher's own) a process started again catches up at; 0: not lowered."""
    return CATCH_UP_NICE if can_raise_back(os.getpriority(os.PRIO_PROCESS, 0)) else 0


def session_started() -> None:
    """A session started (app/main.py): the students are still coming back."""
    global _last_session
    _last_session = time.monotonic()


def set_every_thread(nice: int) -> None:
    """Linux keeps a niceness per thread: each of this process's threads at `nice`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except (ProcessLookupError, PermissionError):
            pass  # a thread that ended meanwhile; (not permitted: can_raise_back said otherwise)


def begin(nice: int, quiet: float = QUIET_S, longest: float = LONGEST_S) -> None:
    """In a process started again, before it has threads: run `nice` lower, and go back to the priority it
    had once its students are back (a thread of its own watches)."""
    if nice <= 0:
        return
    first = os.getpriority(os.PRIO_PROCESS, 0)
    os.nice(nice)
    start = time.monotonic()

    def watch() -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            back = _last_session is not None and now - _last_session >= quiet
            if back or now - start >= longest:
                set_every_thread(first)
                print(f"Caught up after {now - start:.1f} s: back at nice {first}", flush=True)
                return

    threading.Thread(target=watch, name="catch-up", daemon=True).start()
