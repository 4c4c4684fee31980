"""Warm starts for the classroom's server processes: a process that died is serving again in a moment.

A new `panel serve` spends seconds importing Panel, Bokeh, numpy and the app before it listens (3 s on an
idle 2-core laptop, over 10 s on a busy one), and every one of its students waits that long to come back.
So the launcher (app/run_cluster.py) keeps one process that has made those imports, the zygote, and each
server process is a fork of it, with everything imported already: it listens within a fraction of a second.
(The idea of Android's zygote and of gunicorn's --preload, with fork as Python's own `multiprocessing`
forkserver uses it.)

    python -m app.zygote        # started by app/run_cluster.py, spoken to over its stdin and stdout

Commands on stdin, one JSON a line: {"argv": [...], "env": {...}, "log": PATH, "cwd": DIR, "catch_up": BOOL}
starts `argv` (python -m panel serve ...) as a fork with that environment, its output to PATH (with
catch_up: on idle CPU only until its students are back, app/catch_up.py), and answers
{"pid": N}; when a child ends the zygote says {"exit": N, "code": C} (C as Popen's returncode: negative for
a signal). The zygote holds no thread and no event loop, so a fork starts clean. `Zygote` is the launcher's
end; `Forked` looks like the Popen the supervisor (app/supervise.py) expects.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# -- the zygote ------------------------------------------------------------------------------------------


def preload() -> None:
    """What a server process imports before it serves: Panel, Bokeh's server, and the app's own modules."""
    import gc

    import bokeh.command.subcommands.serve  # noqa: F401
    import bokeh.server.server  # noqa: F401
    import panel  # noqa: F401
    import panel.command  # noqa: F401
    import panel.command.serve  # noqa: F401

    sys.path.insert(0, str(ROOT))
    import app.bokeh_defaults  # noqa: F401
    import app.pool  # noqa: F401
    import app.served_page  # noqa: F401
    import app.serving  # noqa: F401
    import widgets.class_link  # noqa: F401
    import widgets.explorer  # noqa: F401
    import widgets.teacher_desk  # noqa: F401
    from app.bokeh_defaults import cache_stable_defaults
    from app.pool import ready_page

    # The first page a process builds costs several times the next ones (caches of Bokeh's property
    # defaults, of the presets' notes, of Panel's templates): one is built here, so the forks start warm.
    cache_stable_defaults()
    ready_page()
    from app.pool import build_ahead_now

    build_ahead_now()  # with --expect: each fork starts with its pages built (EXPLORER_EXPECT)
    gc.collect()
    gc.freeze()  # what the forks share stays shared (the collector does not touch it)


def become(command: dict) -> None:
    """In the child: become the `panel serve` the command describes; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        log = os.open(command["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.environ.clear()
        os.environ.update(command["env"])
        os.chdir(command.get("cwd") or ROOT)
        from app.catch_up import begin

        begin(command.get("catch_up", False))  # started again: its students' sessions on idle CPU only
        argv = command["argv"]
        if argv[1:3] != ["-m", "panel"]:
            raise ValueError(f"not a panel command: {argv[:3]}")
        sys.argv = ["panel", *argv[3:]]
        from panel.command import main

        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # said in the child's own log, which the supervisor shows when it gives up
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve_commands() -> None:
    """The zygote's loop: fork a child for each command, report each child's end."""
    out = sys.stdout
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *a: None)  # wakes select through the pipe
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    stdin = sys.stdin.fileno()
    buffer = b""
    while True:
        readable, _, _ = select.select([stdin, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        while True:  # every child that has ended
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            out.write(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
            out.flush()
        if stdin in readable:
            chunk = os.read(stdin, 65536)
            if not chunk:  # the launcher has gone: so does the zygote (its children are stopped by it)
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                command = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    os.close(wake_r)
                    os.close(wake_w)
                    become(command)
                out.write(json.dumps({"pid": pid}) + "\n")
                out.flush()


# -- the launcher's end ----------------------------------------------------------------------------------


class Forked:
    """A server process forked by the zygote, with the part of Popen's interface the supervisor uses."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.zygote.exits.get(self.pid)
            if code is None and not self.zygote.running:  # nobody to tell us: is it still there?
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    code = -signal.SIGKILL
            self.returncode = code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The launcher's end of the zygote: start it, fork server processes from it."""

    def __init__(self, env: dict | None = None, log: Path | None = None, timeout: float = 300.0):
        err = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.zygote"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        self.exits: dict[int, int] = {}
        self._answers: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="zygote", daemon=True).start()
        first = self._answers.get(timeout=timeout)
        if "ready" not in first:
            raise RuntimeError(f"the zygote did not start: {first}")

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "exit" in message:
                self.exits[message["exit"]] = message["code"]
            else:
                self._answers.put(message)
        self._answers.put({"gone": True})

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def spawn(
        self, argv: list[str], env: dict, log: Path, cwd: Path = ROOT, catch_up: bool = False
    ) -> Forked:
        """A fork running `argv` (python -m panel serve ...), with `catch_up` on idle CPU only until its
        students are back (app/catch_up.py); RuntimeError when the zygote cannot."""
        with self._lock:
            if not self.running:
                raise RuntimeError("the zygote has stopped")
            command = {
                "argv": list(argv),
                "env": dict(env),
                "log": str(log),
                "cwd": str(cwd),
                "catch_up": catch_up,
            }
            try:
                self.proc.stdin.write((json.dumps(command) + "\n").encode())
                self.proc.stdin.flush()
                answer = self._answers.get(timeout=30)
            except (OSError, queue.Empty) as exc:
                raise RuntimeError(f"the zygote did not answer ({exc})") from exc
        if "pid" not in answer:
            raise RuntimeError("the zygote has stopped")
        return Forked(self, answer["pid"])

    def stop(self) -> None:
        if self.running:
            try:
                self.proc.stdin.close()  # it ends its loop when its input closes
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)


if __name__ == "__main__":
    preload()
    serve_commands()
