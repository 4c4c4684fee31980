"""Keep the classroom's processes running: a server process, nginx or Redis that dies is started again.

The launcher (app/classroom.py, through app/run_cluster.py) hands each child process to a `Supervisor`,
which looks at them a few times a second from a thread of its own. A child that exits (a crash, the
kernel's out-of-memory killer, `kill -9`) is started again after a short back-off that doubles with
death that comes within QUICK_S of a start (RESTART_AFTER_S), and is given up only after GIVE_UP_AFTER
such quick deaths in a row, saying why (its status and the last lines of its log); the others keep
serving meanwhile. A child that ran longer before it died starts with the shortest back-off again. The
students of a server process that died come back by themselves (static/rejoin.js), on their own process
once it answers again.

Like systemd's Restart=on-failure with StartLimitBurst, or an Erlang/OTP supervisor's intensity and
period, in a hundred lines of standard library.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

RESTART_AFTER_S = (0.2, 1.0, 2.0, 4.0, 8.0)  # back-off before the 1st, 2nd, ... restart in a row
QUICK_S = 10.0  # a death this soon after a start counts towards giving up
GIVE_UP_AFTER = 5  # quick deaths in a row
POLL_S = 0.1


def how_it_ended(returncode: int) -> str:
    """A child's exit status in words."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with status {returncode}"


def log_tail(path: Path | None, lines: int = 5) -> str:
    if path is None or not Path(path).exists():
        return ""
    text = Path(path).read_text(errors="replace").strip().splitlines()[-lines:]
    return "\n".join("    " + line[:200] for line in text)


class Supervised:
    """One child the supervisor keeps running. `start()` returns a new Popen; `log` is where it writes."""

    def __init__(
        self,
        name: str,
        start: Callable[[], subprocess.Popen],
        log: Path | None = None,
        on_restart: Callable[[subprocess.Popen], None] | None = None,
        needed: bool = True,
    ):
        self.name = name
        self.needed = needed  # the class cannot go on without it once it is given up (a server, nginx)
        self._start = start
        self.log = log
        self.on_restart = on_restart  # told of each new Popen (the cluster's list of backends follows it)
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.quick_deaths = 0  # in a row
        self.restarts = 0
        self.due: float | None = None  # when the next start is due, while it is down
        self.given_up = False
        self.paused = False  # (tests) a fault that lasts: not started again until this is False

    def start(self) -> subprocess.Popen:
        self.proc = self._start()
        self.started_at = time.monotonic()
        self.due = None
        return self.proc

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check(self, now: float, say: Callable[[str], None]) -> None:
        """Look at the child once: note a death, start it again when its back-off is over."""
        if self.given_up:
            return
        if self.due is None:
            if self.proc is None or self.proc.poll() is None:
                return
            lived = now - self.started_at
            self.quick_deaths = self.quick_deaths + 1 if lived < QUICK_S else 0
            ended = how_it_ended(self.proc.returncode)
            if self.quick_deaths >= GIVE_UP_AFTER:
                self.given_up = True
                tail = log_tail(self.log)
                say(
                    f"{self.name} {ended}, the {self.quick_deaths}th time within {QUICK_S:.0f} s of a start; "
                    f"not starting it again." + (f" The end of its log ({self.log}):\n{tail}" if tail else "")
                )
                return
            wait = RESTART_AFTER_S[min(self.quick_deaths, len(RESTART_AFTER_S) - 1)]
            self.due = now + wait
            say(f"{self.name} {ended}; starting it again in {wait:g} s")
            return
        if now >= self.due and not self.paused:
            try:
                proc = self.start()
            except (OSError, RuntimeError) as exc:
                self.quick_deaths += 1
                self.due = now + RESTART_AFTER_S[-1]
                say(f"{self.name} could not be started ({exc}); trying again in {RESTART_AFTER_S[-1]:g} s")
                return
            self.restarts += 1
            if self.on_restart is not None:
                self.on_restart(proc)
            say(f"{self.name} started again")


class Supervisor:
    """Children looked after from one thread; `say` reports what happened (the launcher prints it)."""

    def __init__(self, say: Callable[[str], None] = print):
        self.children: list[Supervised] = []
        self.say = say
        self.events: list[str] = []  # everything said, for tests
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, child: Supervised) -> Supervised:
        with self._lock:
            self.children.append(child)
        return child

    def _say(self, text: str) -> None:
        self.events.append(text)
        self.say(text)

    def check(self) -> None:
        now = time.monotonic()
        with self._lock:
            for child in self.children:
                child.check(now, self._say)

    def start(self) -> Supervisor:
        def run() -> None:
            while not self._stop.wait(POLL_S):
                self.check()

        self._thread = threading.Thread(target=run, name="supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop looking after the children (before they are stopped on purpose)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:  # a check in flight has finished: nothing is started after this
            pass

    def why_not_serving(self) -> str | None:
        """None while the class can go on: nginx (if any) and at least one server process not given up."""
        needed = [c for c in self.children if c.needed]
        if any(c.given_up and c.name == "nginx" for c in needed):
            return "nginx keeps stopping"
        if needed and all(c.given_up for c in needed if c.name != "nginx"):
            return "every server process keeps stopping"
        return None
