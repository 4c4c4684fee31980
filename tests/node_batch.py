"""The Python end of the Node drivers' pipe (tests/json_batch.js): one JSON batch in, one JSON result out.

JSON carries no NaN or ±∞, so both directions send them as {"$f": "NaN"} etc.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np

NODE = shutil.which("node")


def encode(obj):
    """JSON-ready copy of obj, with non-finite floats as {"$f": ...} (the driver's Number() reads them)."""
    if isinstance(obj, np.ndarray | np.generic):
        return encode(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"$f": "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")}
    if isinstance(obj, dict):
        return {k: encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    return obj


def decode_hook(d: dict):
    return float(d["$f"]) if d.keys() == {"$f"} else d


def js_int(text: str) -> int | float:
    """A JSON integer from Node: every JavaScript number is a double, and JSON.stringify writes one below
    1e21 without an exponent (3.763356797757409e18 as 3763356797757409000), so past 2^53 it is that double."""
    n = int(text)
    return n if abs(n) <= 2**53 else float(text)


def run_node(driver: Path, batch: dict, timeout: float = 300, object_hook=decode_hook):
    """Run `driver` on one batch and return its decoded result; a failing driver fails the test."""
    proc = subprocess.run(
        [NODE, str(driver)],
        input=json.dumps(encode(batch), allow_nan=False),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"node failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout, object_hook=object_hook, parse_int=js_int)


def start_node(driver: Path, batch: dict) -> subprocess.Popen:
    """`driver` working on one batch in the background, so Python can go on meanwhile (see `results`)."""
    proc = subprocess.Popen(
        [NODE, str(driver)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdin.write(json.dumps(encode(batch), allow_nan=False))
    proc.stdin.close()
    return proc


def results(proc: subprocess.Popen, timeout: float = 300, object_hook=decode_hook):
    """The decoded result of a driver started by `start_node`."""
    out = proc.stdout.read()
    err = proc.stderr.read()
    assert proc.wait(timeout=timeout) == 0, f"node failed:\n{err[-3000:]}"
    return json.loads(out, object_hook=object_hook, parse_int=js_int)
