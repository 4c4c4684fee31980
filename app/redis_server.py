"""A private Redis on loopback for the class bus (widgets/broadcast.py) when the classroom runs as more
than one process: Debian's redis-server, nothing saved to disk, stopped with the classroom."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def redis_url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def start_redis(port: int, log: Path | None = None, timeout: float = 10.0) -> subprocess.Popen:
    """Start redis-server on 127.0.0.1:PORT and wait until it accepts connections."""
    if not Path(REDIS_SERVER).exists():
        raise RuntimeError("redis-server is not installed (setup.sh installs Debian's redis-server)")
    argv = [
        REDIS_SERVER,
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--save", "",  # the bus keeps nothing worth saving
        "--appendonly", "no",
        "--daemonize", "no",
        "--dir", "/tmp",
    ]  # fmt: skip
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with status {proc.returncode} (port {port} in use?)")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer on port {port} within {timeout} s")
