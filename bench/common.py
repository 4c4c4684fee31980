"""Small pieces the benchmarks share: the machine's load, the results file, a browser kept offline."""

from __future__ import annotations

from pathlib import Path


def load_average() -> list[str]:
    """/proc/loadavg's 1, 5 and 15 minute averages, as printed there."""
    return Path("/proc/loadavg").read_text().split()[:3]


def write_results(path: Path, lines: list[str]) -> int:
    """Write a benchmark's Markdown lines to `path`, echo them, and give main()'s exit code."""
    text = "\n".join(lines)
    path.write_text(text)
    print(text)
    return 0


def block_all_but(context, allowed: tuple[str, ...]) -> list[str]:
    """Make a Playwright browser context abort every request whose URL does not start with one of `allowed`.

    Returns the list the aborted URLs are appended to, so a caller can check nothing left the machine.
    """
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return blocked
