"""static/cost.js and static/saturation.js agree with Python: numbers to 1e-9, text exactly.

Each port runs in ONE node process (tests/explorers_driver.js) on a batch of
random sequences of changes, valid and not (NaN, ±inf, 1e308, text, zero,
negative, fractional, an emptied box, an unknown preset).  Python runs the
same changes through CostSettings / SaturationSettings and their view data;
after every change the taken flag, the inputs, the preset, the message and
every piece of view data must agree.  Parity cannot see a mistake made on
both sides, so the chapter's numbers and the generator's published outputs
are pinned separately (tests/test_cost.py, tests/test_explorer_views.py,
test_mulberry32_matches_its_reference_outputs below).
"""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from core.cost import GPU_MEMORY_GB, GPU_PARTS_GB, PRESETS
from core.rng import LARGEST_SEED, mulberry32, normals
from tests.node_batch import NODE, decode_hook, encode, run_node
from widgets import cost_viewdata, saturation_viewdata
from widgets.cost_state import CostSettings
from widgets.cost_state import js_config as cost_config
from widgets.saturation_state import SaturationSettings
from widgets.saturation_state import js_config as saturation_config

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS ports cannot be run")

DRIVER = Path(__file__).resolve().parent / "explorers_driver.js"
TOL = 1e-9
N_COST = 220
N_SATURATION = 200
HOSTILE = [float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 0, -3, 2.5, "abc", "12", None]


def run_js(port: str, config: dict, cases=(), normals_calls=()) -> dict:
    batch = {"port": port, "config": config, "cases": list(cases), "normals": list(normals_calls)}
    if port == "format":
        batch = {"port": port, "cases": list(cases)}
    return run_node(DRIVER, batch)


def assert_same(py, js, where: str) -> None:
    """Equal structure; numbers within TOL (relative for large ones); strings and flags exactly."""
    if isinstance(py, dict):
        assert isinstance(js, dict) and set(py) == set(js), f"{where}: keys {sorted(py)} != {sorted(js)}"
        for k in py:
            assert_same(py[k], js[k], f"{where}.{k}")
    elif isinstance(py, list | tuple):
        assert isinstance(js, list) and len(py) == len(js), f"{where}: lengths differ"
        for k, (a, b) in enumerate(zip(py, js)):
            assert_same(a, b, f"{where}[{k}]")
    elif isinstance(py, bool) or py is None or isinstance(py, str):
        assert py == js, f"{where}: {py!r} != {js!r}"
    else:
        a, b = float(py), float(js)
        ok = (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= TOL * max(1.0, abs(a), abs(b))
        assert ok, f"{where}: {a!r} != {b!r}"


def python_step(settings, change: dict) -> dict:
    change = json.loads(json.dumps(encode(change)), object_hook=decode_hook)  # as the page's JSON delivers it
    if "apply" in change:
        taken = settings.apply(**change["apply"])
    elif "load" in change:
        taken = settings.load(change["load"])
    else:
        taken = settings.refuse_empty(change["empty"])
    return {"taken": taken, "inputs": settings.inputs(), "message": settings.message}


def check_cases(port, make, view, cases, result) -> None:
    start = make()
    js_start = {k: result["start"][k] for k in ("inputs", "view")}
    assert_same({"inputs": start.inputs(), "view": view(start)}, js_start, "start")
    for n, (changes, steps) in enumerate(zip(cases, result["cases"])):
        s = make()
        for k, (change, js) in enumerate(zip(changes, steps)):
            py = python_step(s, change)
            where = f"{port} case {n} step {k} {change}"
            assert_same(py["taken"], js["taken"], where + " taken")
            assert_same(py["message"], js["message"], where + " message")
            assert_same(py["inputs"], js["inputs"], where + " inputs")
            if port == "cost":
                assert_same(s.preset, js["preset"], where + " preset")
            assert_same(view(s), js["view"], where + " view")


# --- the cost explorer ------------------------------------------------------------------------


def random_cost_change(rng: random.Random) -> dict:
    kind = rng.random()
    if kind < 0.08:
        return {"load": rng.choice([*PRESETS, "GPT-9"])}
    if kind < 0.14:
        return {"empty": rng.choice(["T", "d", "heads", "kv_heads", "layers", "C", "element_bytes", "tile"])}
    heads = rng.choice([1, 2, 4, 8, 12, 16, 32, 64, 96, 128])
    valid = {
        "T": lambda: rng.choice([rng.randint(1, 1_000_000), rng.randint(1, 300), 128_000, 8_000, 1_000_000]),
        "d": lambda: rng.choice([rng.randint(1, 512), 64, 128]),
        "heads": lambda: heads,
        "kv_heads": lambda: rng.choice([k for k in range(1, heads + 1) if heads % k == 0]),
        "layers": lambda: rng.randint(1, 200),
        "C": lambda: rng.choice([rng.randint(1, 100_000), 4096, 16384, 1, 3, 7]),
        "element_bytes": lambda: rng.choice([0.5, 1, 2, 4, round(rng.uniform(0.1, 64), 3)]),
        "gpu_gb": lambda: rng.choice(
            [*GPU_PARTS_GB, rng.randint(*GPU_MEMORY_GB), round(rng.uniform(*GPU_MEMORY_GB), 2)]
        ),
        "tile": lambda: rng.choice([1, 64, 128, 256, rng.randint(1, 70_000)]),
    }
    fields = rng.sample(sorted(valid), rng.choice([1, 1, 2, 3]))
    if "heads" in fields or "kv_heads" in fields:
        fields = sorted(set(fields) | {"heads", "kv_heads"})
    change = {f: valid[f]() for f in fields}
    if rng.random() < 0.3:  # something the settings must refuse
        beside_gpus = [GPU_MEMORY_GB[0] - 0.5, GPU_MEMORY_GB[1] + 1]
        change[rng.choice(fields)] = rng.choice([*HOSTILE, 2_000_000, 7, 65_537, 200, *beside_gpus])
    return {"apply": change}


def cost_view(s: CostSettings) -> dict:
    return cost_viewdata.view_data(s.cost, s.gpu_gb, s.tile)


def test_cost_port_matches_python_on_random_changes():
    rng = random.Random(11)
    cases = [[random_cost_change(rng) for _ in range(rng.randint(1, 3))] for _ in range(N_COST)]
    cases += [  # ties that round half to even in Python: crossover 1.5·C, T² = 225, 2.5 bytes
        [{"apply": {"C": 3, "heads": 4, "kv_heads": 1}}],
        [{"apply": {"T": 15, "C": 5, "heads": 4, "kv_heads": 1, "element_bytes": 2.5}}],
        [{"apply": {"T": 1, "d": 1, "heads": 1, "kv_heads": 1, "layers": 1, "C": 1, "element_bytes": 0.5}}],
    ]
    result = run_js("cost", cost_config(), cases)
    check_cases("cost", CostSettings, cost_view, cases, result)
    taken = sum(step["taken"] for steps in result["cases"] for step in steps)
    refused = sum(not step["taken"] for steps in result["cases"] for step in steps)
    assert taken > 150 and refused > 80  # both kinds of change were exercised


# --- the saturation explorer -----------------------------------------------------------------


def random_saturation_change(rng: random.Random) -> dict:
    if rng.random() < 0.08:
        return {"empty": rng.choice(["seed", "T", "trials", "row"])}
    valid = {
        "d": lambda: rng.choice([2, 4, 8, 16, 32, 64, 128, 256, 512, rng.randint(2, 512)]),
        "seed": lambda: rng.choice([0, 1, 7, rng.randint(0, LARGEST_SEED), LARGEST_SEED]),
        "T": lambda: rng.randint(2, 16),
        "trials": lambda: rng.randint(1, 3),
        "row": lambda: rng.randint(1, 4),
    }
    fields = rng.sample(sorted(valid), rng.choice([1, 1, 2]))
    change = {f: valid[f]() for f in fields}
    if rng.random() < 0.3:
        change[rng.choice(fields)] = rng.choice([*HOSTILE, 1, 513, 1025, LARGEST_SEED + 1, 5000])
    return {"apply": change}


def saturation_view(s: SaturationSettings) -> dict:
    return saturation_viewdata.view_data(s.curve, s.point, s.worked)


def test_saturation_port_matches_python_on_random_changes():
    rng = random.Random(12)
    # Every case starts on the page's defaults (seed 0, T = 64, 128 trials, d = 128: compared once, as
    # "start"), then shrinks the sweep (T ≤ 16, ≤ 3 trials) so that 200 cases take seconds, not minutes.
    cases = [
        [{"apply": {"T": rng.randint(2, 16), "trials": rng.randint(1, 3)}}]
        + [random_saturation_change(rng) for _ in range(rng.randint(1, 3))]
        for _ in range(N_SATURATION)
    ]
    cases.append([{"apply": {"trials": 1000, "T": 1024}}])  # over the budget: refused, with its numbers
    draws = [[0, 0, 10], [1, 3, 9], [LARGEST_SEED, 1_000_001, 1_000_050], [123456789, 7, 8]]
    result = run_js("saturation", saturation_config(), cases, draws)
    check_cases("saturation", SaturationSettings, saturation_view, cases, result)
    for (seed, a, b), js in zip(draws, result["normals"]):
        assert_same(normals(seed, a, b).tolist(), js, f"normals({seed}, {a}, {b})")
    taken = sum(step["taken"] for steps in result["cases"] for step in steps)
    refused = sum(not step["taken"] for steps in result["cases"] for step in steps)
    assert taken > 150 and refused > 50


# --- Python's number formatting in JavaScript ---------------------------------------------------


def test_pyformat_writes_numbers_as_python_does():
    """static/pyformat.js against Python's format(): ties (2.5, 0.125), tiny, huge, random bit patterns."""
    rng = random.Random(13)
    values = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 2.675, 1e21, 1.5e22, 123456789.5, 999.95, 9.995]
    values += [1e-5, 5e-324, 1e300, 0.05, 0.15, 99.5, 100.5, 9.96, 1e16, 0.045, 1.048576e12, 3.2768e10]
    values += [rng.uniform(-1000, 1000) for _ in range(150)]
    values += [rng.randint(-10**6, 10**6) / rng.choice([2, 4, 8, 10, 100, 1000]) for _ in range(150)]
    values += [rng.choice([1, -1]) * 10 ** rng.uniform(-8, 25) for _ in range(150)]
    bits = (struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(300))
    values += [v for v in bits if math.isfinite(v)]
    python = {
        "f": lambda x, p: f"{x:.{p}f}",
        "fc": lambda x, p: f"{x:,.{p}f}",
        "e": lambda x, p: f"{x:.{p}e}",
        "g": lambda x, p: f"{x:.{p}g}",
        "r": lambda x, p: repr(x),
    }
    calls = [[kind, x, p] for x in values for kind in ("f", "fc", "e", "g") for p in (0, 1, 2, 3)]
    calls += [["r", x, 0] for x in values]
    calls = [c for c in calls if not (c[0] == "g" and c[2] == 0)]
    got = run_js("format", {}, calls)
    wrong = [(c, python[c[0]](c[1], c[2]), js) for c, js in zip(calls, got) if python[c[0]](c[1], c[2]) != js]
    assert not wrong, wrong[:5]


# --- the generator itself --------------------------------------------------------------------


def test_mulberry32_matches_its_reference_outputs():
    # The first outputs of Tommy Ettinger's mulberry32 (its C reference) for seed 1 and seed 0.
    assert mulberry32(1, np.arange(3)).tolist() == [2693262067, 11749833, 2265367787]
    assert mulberry32(0, np.arange(2)).tolist() == [1144304738, 1416247]


def test_normals_do_not_depend_on_where_a_batch_starts():
    whole = normals(5, 0, 1001)
    parts = np.concatenate([normals(5, 0, 333), normals(5, 333, 334), normals(5, 334, 1001)])
    assert np.array_equal(whole, parts)
    assert abs(normals(5, 0, 200_000).mean()) < 0.01 and abs(normals(5, 0, 200_000).std() - 1) < 0.01
