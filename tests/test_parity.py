"""static/attention.js agrees with the numpy core: numbers to the last bit, strings exactly.

One number is the exception: the entropy among the row's checks takes a logarithm, which numpy and the
browser's Math.log may round differently in the last bit; it is held to 1e-15 (and shows three places).

Every case is run on both sides: core.attention.attend / core.trace.trace /
widgets.viewdata.view_data in Python, and the JavaScript port through one
`node` process (tests/parity_driver.js), all cases in a single batch.  JSON
carries no NaN or ±∞, so both directions send them as {"$f": "NaN"} etc.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from core.attention import AttentionError, attend
from core.options import table_json
from core.presets import CHAPTER, PRESETS
from core.trace import fmt, trace
from tests.node_batch import NODE, run_node
from widgets.viewdata import BLEND_NAMED_TOP, NUMBERS_UP_TO, named_values, view_data

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS port cannot be run")

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "parity_driver.js"
TOL = 0.0  # numbers agree to the last bit
ENTROPY_TOL = 1e-15  # relative: np.log and Math.log are each within an ulp of the logarithm
N_RANDOM = 1000
HEAD_ARRAYS = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "masked", "weights", "output")
LABEL_POOL = (
    "The", "cat", "sat", "on", "the", "mat", "it", "was", "tired", "soft",
    "é", "<b>", "a & b", '"quoted"', "it's", "∞", "", "  ",
)


# --- talking to node -----------------------------------------------------------------


def run_js(cases=(), fmt_calls=(), browser=False) -> dict:
    return run_node(
        DRIVER, {"switches": table_json(), "cases": list(cases), "fmt": list(fmt_calls), "browser": browser}
    )


# --- comparing ------------------------------------------------------------------------


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


def same_vectors(py, js) -> bool:
    """True when py and js are equal lists of strings, or lists of numbers all close."""
    if all(type(v) is str for v in py):
        return list(py) == js
    numbers = (int, float, np.float64)
    if not (all(type(v) in numbers for v in py) and all(type(v) in numbers for v in js)):
        return False
    a, b = np.array(py, dtype=float), np.array(js, dtype=float)
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= TOL * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return bool(np.all((a == b) | near | (np.isnan(a) & np.isnan(b))))


def mismatches(py, js, path: str) -> list[str]:
    """Where js differs from py: same keys in the same order, same lengths, numbers close, strings equal."""
    if isinstance(py, np.ndarray):
        py = py.tolist()
    if isinstance(py, dict):
        if not isinstance(js, dict) or list(py) != list(js):
            return [f"{path}: keys {list(py)} != {list(js) if isinstance(js, dict) else js!r}"]
        return [m for k in py for m in mismatches(py[k], js[k], f"{path}.{k}")]
    if isinstance(py, list | tuple):
        if not isinstance(js, list) or len(py) != len(js):
            return [f"{path}: {py!r} != {js!r}"]
        if same_vectors(py, js):  # fast path; otherwise walk the items to say where they differ
            return []
        return [m for k, (a, b) in enumerate(zip(py, js)) for m in mismatches(a, b, f"{path}[{k}]")]
    if py is None or isinstance(py, str | bool | np.bool_):
        same = js is None if py is None else (type(js) is type(py) or isinstance(py, np.bool_)) and js == py
        return [] if same else [f"{path}: {py!r} != {js!r}"]
    if isinstance(py, int | float | np.number):
        ok = isinstance(js, int | float) and not isinstance(js, bool) and close(float(py), float(js))
        return [] if ok else [f"{path}: {py!r} != {js!r}"]
    return [f"{path}: cannot compare {type(py).__name__}"]


def head_as_dict(head) -> dict:
    out = {name: getattr(head, name) for name in HEAD_ARRAYS}
    out["future"] = head.future
    for name in ("T", "C", "d", "scaling", "causal", "tied_qk", "normaliser", "x_scale", "temperature"):
        out[name] = getattr(head, name)
    return out


def trace_as_dict(t) -> dict:
    return {
        "query": t.query,
        "label": t.label,
        "steps": [
            {"number": s.number, "name": s.name, "lines": list(s.lines), "values": s.values} for s in t.steps
        ],
        "checks": dataclasses.asdict(t.checks),
    }


def compare_case(case: dict, js: dict, where: str) -> list[str]:
    head = attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])
    if "error" in js:
        return [f"{where}: JS threw {js['error']!r}"]
    py_head = head_as_dict(head)
    found = mismatches(py_head, {k: js["head"].get(k) for k in py_head}, f"{where}.head")
    if "i" in case:
        dims = case.get("dims", (0, 1))
        py_trace = trace_as_dict(trace(head, case["i"], case["labels"]))
        js_trace = {**js["trace"], "checks": dict(js["trace"]["checks"])}
        a, b = py_trace["checks"]["entropy"], js_trace["checks"]["entropy"]
        if a is not None and b is not None and abs(a - b) <= ENTROPY_TOL * max(abs(a), 1e-300):
            js_trace["checks"]["entropy"] = a
        found += mismatches(py_trace, js_trace, f"{where}.trace")
        found += mismatches(view_data(head, case["i"], case["labels"], dims), js["view"], f"{where}.view")
    return found


# --- the cases --------------------------------------------------------------------------


def random_case(rng: np.random.Generator, k: int) -> dict:
    """One head; the kind cycles so every option meets every kind of number."""
    T, C, d = (int(v) for v in (rng.integers(1, 17), rng.integers(1, 7), rng.integers(1, 7)))
    kind = k % 4
    if kind == 0:  # ordinary floats
        X, W = rng.normal(size=(T, C)), rng.normal(size=(3, C, d)) * rng.uniform(0.3, 2.0)
        x_scale = float(rng.choice([1.0, 0.5, -1.0, 0.0, 2.5, -3.0, 7.5, 1e-3, rng.uniform(-4, 4)]))
    elif kind == 1:  # multiples of 1/8: exact arithmetic, ties for top-1 and for rounding (0.125 → "0.12")
        X, W = rng.integers(-16, 17, size=(T, C)) / 8, rng.integers(-16, 17, size=(3, C, d)) / 8
        x_scale = float(rng.choice([1.0, 0.5, 0.125, -1.0, 0.0, 2.0, 4.0, -0.25, 3.0]))
    elif kind == 2:  # small integers times a large multiplier: exact scores from ~1e3 up to ~5e7
        X, W = rng.integers(-3, 4, size=(T, C)) * 1.0, rng.integers(-3, 4, size=(3, C, d)) * 1.0
        x_scale = float(rng.choice([10.0, 30.0, 100.0, -300.0, 1000.0, 64.0]))
    else:  # floats with a larger multiplier: scores in the hundreds to thousands
        X, W = rng.normal(size=(T, C)), rng.normal(size=(3, C, d))
        x_scale = float(rng.choice([10.0, -20.0, 30.0]))
    if kind in (1, 2) and T > 1 and rng.random() < 0.5:  # repeated tokens: tied scores, duplicate points
        X[rng.integers(T, size=T // 2)] = X[rng.integers(T)]
    case = {
        "X": X.tolist(),
        "W_Q": W[0].tolist(),
        "W_K": W[1].tolist(),
        "W_V": W[2].tolist(),
        "options": {
            "scaling": bool(rng.random() < 0.5),
            "causal": bool(rng.random() < 0.5),
            "tied_qk": bool(rng.random() < 0.3),
            "normaliser": str(rng.choice(["softmax", "raw", "top1"])),
            "x_scale": x_scale,
            "temperature": float(rng.choice([1.0, 1.0, 0.05, 0.3, 0.5, 2.0, 3.7, 5.0])),
        },
        "i": int(rng.integers(T)),
        "labels": [str(rng.choice(LABEL_POOL)) for _ in range(T)],
    }
    r = rng.random()
    if r < 0.6:
        case["dims"] = [int(rng.integers(-1, 8)), int(rng.integers(-1, 8))]
    elif r < 0.7:
        case["dims"] = [float(rng.uniform(-1.5, 6.5)), float(rng.uniform(-1.5, 6.5))]  # int() truncates
    return case  # else: the default dims


def preset_cases() -> list[dict]:
    cases = []
    for p in PRESETS.values():
        for i in range(len(p.tokens)):
            cases.append(
                dict(X=p.X, W_Q=p.W_Q, W_K=p.W_K, W_V=p.W_V, options=p.options.as_dict(), i=i,
                     labels=list(p.tokens))
            )
    return cases


def large_cases(rng: np.random.Generator) -> list[dict]:
    """Heads with more than NUMBERS_UP_TO tokens or dimensions: their cells carry no numbers."""
    cases = []
    for T, C, d in ((17, 3, 2), (24, 4, 5), (5, 3, 17), (20, 2, 18), (12, 3, 12), (13, 3, 2)):
        X, W = rng.normal(size=(T, C)), rng.normal(size=(3, C, d))
        for k in range(3):
            cases.append(
                {
                    "X": X.tolist(),
                    "W_Q": W[0].tolist(),
                    "W_K": W[1].tolist(),
                    "W_V": W[2].tolist(),
                    "options": {"causal": k != 1, "normaliser": ("softmax", "raw", "top1")[k]},
                    "i": int(rng.integers(T)),
                    "labels": [f"t{j}" for j in range(T)],
                }
            )
    return cases


@pytest.fixture(scope="module")
def random_batch():
    rng = np.random.default_rng(20240603)
    cases = [random_case(rng, k) for k in range(N_RANDOM)] + preset_cases() + large_cases(rng)
    return cases, run_js(cases)["cases"]


# --- the tests ----------------------------------------------------------------------------


def test_random_cases_cover_every_option(random_batch):
    cases = random_batch[0][:N_RANDOM]
    assert len(cases) >= 1000
    keys = ("normaliser", "scaling", "causal", "tied_qk")
    seen = {tuple(c["options"][k] for k in keys) for c in cases}
    assert len(seen) == 3 * 2 * 2 * 2
    scales = {c["options"]["x_scale"] for c in cases}
    assert {0.0, -1.0, 0.125, 1000.0} <= scales
    shapes = {(len(c["X"]), len(c["X"][0]), len(c["W_Q"][0])) for c in cases}
    assert {t for t, _, _ in shapes} == set(range(1, 17))
    assert {c for _, c, _ in shapes} == {d for _, _, d in shapes} == set(range(1, 7))


def test_js_head_trace_and_view_data_match_python(random_batch):
    cases, results = random_batch
    assert len(results) == len(cases)
    found = []
    for k, (case, js) in enumerate(zip(cases, results)):
        found += compare_case(case, js, f"case {k}")
        if len(found) > 20:
            break
    assert not found, "JS and Python disagree:\n" + "\n".join(found[:20])


def test_cells_too_small_for_numbers_leave_their_text_empty(random_batch):
    """A figure whose cells are too small for any number (its layout has no font) leaves every cell's text
    empty in both runtimes, and says so under it; one with a font writes each number that fits, whole or
    shortened (.85, 1), and says so when it leaves one out."""
    _, results = random_batch
    seen = set()
    for js in results:
        view = js["view"]
        for figure, block in (("weights", "weights"), ("qkv", "Q")):
            layout = view["layout"][figure]
            texts = view["cells"][block]["text"]
            if not layout["font"]:
                assert all(text == "" for text in texts) and "as a table" in layout["note"]
            else:  # a number too wide for its cell even when shortened is left out, and that is said
                assert all(t == "" or t.lstrip("-").lstrip("0").rstrip("0").rstrip(".") in f for t, f in zip(
                    texts, (fmt(v) if v == v else "0" for v in view["cells"][block]["value"])))
                assert bool(layout["note"]) == (not all(texts)) or figure == "qkv"
            seen.add(bool(layout["font"]))
    assert seen == {True, False}


def test_past_twelve_tokens_the_blend_names_the_query_and_its_largest_weights():
    """At T = 64 the blend plot names the query's value and the BLEND_NAMED_TOP values weighed most, in
    both pages; at NUMBERS_UP_TO tokens it names every one. The JS rule's constant is Python's."""
    declared = re.search(r"const BLEND_NAMED_TOP = (\d+);", (ROOT / "static" / "attention.js").read_text())
    assert declared and int(declared.group(1)) == BLEND_NAMED_TOP == 3  # the query and three more: a choice
    rng = np.random.default_rng(64)
    cases = []
    for T, causal, i in ((64, True, 40), (64, False, 3), (64, True, 0), (NUMBERS_UP_TO, True, 5)):
        X, W = rng.normal(size=(T, 3)) * 2, rng.normal(size=(3, 3, 2))
        cases.append({"X": X.tolist(), "W_Q": W[0].tolist(), "W_K": W[1].tolist(), "W_V": W[2].tolist(),
                      "options": {"causal": causal}, "i": i, "labels": [f"t{k}" for k in range(T)]})
    results = run_js(cases)["cases"]
    for case, js in zip(cases, results):
        head = attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])
        view = view_data(head, case["i"], case["labels"])
        values = view["blend"]["values"]
        assert js["view"]["blend"]["values"]["named"] == values["named"]
        T, i = len(case["labels"]), case["i"]
        texts = [fmt(w) for w in head.weights[i]]
        candidates = {k for k, name in enumerate(named_values(case["labels"], texts, i)) if name}
        if T <= NUMBERS_UP_TO:
            assert candidates == set(range(T))
        else:
            weights = np.abs(head.weights[i])
            largest = [k for k in np.argsort(-weights, kind="stable")[:BLEND_NAMED_TOP] if weights[k] > 0.005]
            assert candidates == {i, *largest}, (candidates, i, largest)
        # the names drawn are candidates, each its own, the query's first of all; any left off are said
        named = {k for k, name in enumerate(values["named"]) if name}
        assert named <= candidates and i in named
        assert all(values["named"][k] == values["label"][k] for k in named)
        left_off = len(candidates) - len(named)
        assert (f"{left_off} name" in view["layout"]["blend"]["note"]) == (left_off > 0)


def test_checks_count_the_masked_keys(random_batch):
    """The masked-key check names how many keys are hidden, or says none are."""
    cases, results = random_batch
    phrases = set()
    for js in results:
        if "view" not in js:
            continue
        checks, n = js["view"]["checks"], js["trace"]["checks"]["masked_keys"]
        if n == 0:
            assert "no key is masked for this query" in checks
            phrases.add("none")
        else:
            assert f"largest weight on the {n} masked key{'s' if n != 1 else ''}: " in checks
            phrases.add("one" if n == 1 else "many")
    assert phrases == {"none", "one", "many"}


def test_steps_keep_each_vector_on_one_line(random_batch):
    _, results = random_batch
    steps = next(js["view"]["steps"] for js in results if "view" in js)
    assert '<span class="vec">[' in steps
    assert re.sub(r'<span class="vec">\[[^\[\]<]*\]</span>', "", steps).count("[") == 0


def test_large_scores_show_exp_relative_to_the_max(random_batch):
    """The exp(s − max) line is exercised, in exponent form, and agrees."""
    cases, results = random_batch
    leads = [js["trace"]["steps"][4]["lines"][0] for js in results if "trace" in js]
    assert any(line.startswith("exp(s − ") and "e+0" in line for line in leads)
    assert any(line.startswith("exp →") for line in leads)


def test_fmt_matches_python_formatting():
    rng = np.random.default_rng(7)
    values = [k / 8 for k in range(-40, 41)] + [k / 16 for k in range(-33, 34)]
    values += [n + f for n in (0, 1, 2, 17, 999999) for f in (0.125, 0.375, 0.5, 0.625, 0.875, 0.005, 0.0625)]
    values += [1.005, 1.015, 2.675, 0.045, 999999.995, 999999.999, 1e6, -1e6, 1125000.0, 1135000.0, 1.0625e6]
    values += [2.5e7, 3.5e6, -1.125e6, 1.375e9, 1234567.5, 1.5e150, 9.995e6, 9.9951e6, 123456789012345678.0]
    values += [0.0, -0.0, -1e-5, -0.004, -0.005, -0.0051, 1e-300, math.inf, -math.inf, math.nan]
    values += list(rng.normal(size=200) * 10.0 ** rng.integers(-6, 14, size=200))
    calls = [(float(x), digits) for x in values for digits in (0, 1, 2, 3, 6)]
    got = run_js(fmt_calls=calls)["fmt"]
    wrong = [(x, digits, fmt(x, digits), js) for (x, digits), js in zip(calls, got) if fmt(x, digits) != js]
    assert not wrong, f"{len(wrong)} differ, e.g. (x, digits, python, js): {wrong[:10]}"
    assert fmt(0.125) == "0.12" and fmt(1e6) == "1.00e+06" and fmt(-math.inf) == "−∞"


def test_chapter_example_text_for_it():
    i = CHAPTER.tokens.index("it")
    case = dict(X=CHAPTER.X, W_Q=CHAPTER.W_Q, W_K=CHAPTER.W_K, W_V=CHAPTER.W_V,
                options=CHAPTER.options.as_dict(),
                i=i, labels=list(CHAPTER.tokens))
    (js,) = run_js([case])["cases"]
    steps = js["trace"]["steps"]
    assert steps[4]["lines"][1] == "weights = [0.13, 0.56, 0.14, 0.18]"
    assert steps[5]["lines"][1] == "= [0.23, 0.68]"
    assert steps[3]["lines"] == ["no token comes after 'it', so nothing changes"]
    assert 'weights = <span class="vec">[0.13, 0.56, 0.14, 0.18]</span>' in js["view"]["steps"]
    assert "largest weight 0.56 on &#x27;cat&#x27;" in js["view"]["checks"]
    assert not compare_case(case, js, "chapter")


def test_hostile_label_is_escaped_like_python():
    hostile = "<img src=x onerror=alert(1)>"
    labels = ["The", hostile, "sat", "it's \"q\" & co"]
    case = dict(X=CHAPTER.X, W_Q=CHAPTER.W_Q, W_K=CHAPTER.W_K, W_V=CHAPTER.W_V,
                options=CHAPTER.options.as_dict(),
                i=3, labels=labels)
    (js,) = run_js([case])["cases"]
    html_out = js["view"]["steps"] + js["view"]["checks"]
    assert "<img" not in html_out
    assert "&lt;img src=x onerror=alert(1)&gt;" in js["view"]["steps"]
    assert "&#x27;" in html_out and "&quot;q&quot; &amp; co" in html_out
    assert "&lt;img src=x onerror=alert(1)&gt;" in js["view"]["checks"]  # 'cat's place holds the most weight
    assert not compare_case(case, js, "hostile")


GOOD = dict(X=[[1.0, 0.0], [0.0, 1.0]], W_Q=[[1.0, 0.0], [0.0, 1.0]], W_K=[[1.0, 2.0], [0.0, 1.0]],
            W_V=[[1.0, 0.0], [0.5, 1.0]], options={})
INVALID = [
    ("X", dict(X=[[1.0, math.nan], [0.0, 1.0]])),
    ("X", dict(X=[[1.0, 0.0], [math.inf, 1.0]])),
    ("W_Q", dict(W_Q=[[1.0, 0.0], [0.0, -math.inf]])),
    ("W_Q", dict(W_Q=[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])),
    ("W_K", dict(W_K=[[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])),
    ("W_V", dict(W_V=[[1.0], [0.5]])),
    ("W_V", dict(W_V=[[1.0, 1e101], [0.5, 1.0]])),
    ("X", dict(X=[])),
    ("X", dict(X=[[]])),
    ("X", dict(X=[[1.0, 0.0], [1.0]])),
    ("X", dict(X=[1.0, 0.0])),
    ("X", dict(X=[[1.0, "a"], [0.0, 1.0]])),
    ("normaliser", dict(options={"normaliser": "max"})),
    ("x_scale", dict(options={"x_scale": math.nan})),
    ("x_scale", dict(options={"x_scale": 1e101})),
    ("X", dict(X=[[1e100, 0.0], [0.0, 1.0]], W_Q=[[1e100, 0.0], [0.0, 1.0]], W_K=[[1e100, 0.0], [0.0, 1.0]])),
    ("temperature", dict(options={"temperature": 0.01})),  # the table's limits, 0.05 to 5
    ("temperature", dict(options={"temperature": 50})),
    ("temperature", dict(options={"temperature": "warm"})),
    ("x_scale", dict(options={"scaling": True, "x_scale": 1e101})),
    # issue 27: finite scores that overflow once divided by τ, which the softmax would read as masked
    ("τ = 0.05", dict(X=[[1.0], [1e-100]], W_Q=[[1e100]], W_K=[[1e7]], W_V=[[1.0]],
                      options={"causal": False, "x_scale": 1e100, "temperature": 0.05})),
    ("query", dict(i=2, labels=["a", "b"])),
    ("query", dict(i=-1, labels=["a", "b"])),
    ("labels", dict(i=0, labels=["a", "b", "c"])),
]


def test_invalid_input_throws_in_js_naming_the_field():
    cases = [{**GOOD, **change} for _, change in INVALID]
    results = run_js(cases)["cases"]
    for (field, change), case, js in zip(INVALID, cases, results):
        assert "error" in js, f"JS accepted {change}"
        assert js["name"] == "AttentionError"
        assert field in js["error"], f"{js['error']!r} does not name {field}"
        with pytest.raises(AttentionError):  # and Python refuses the same input
            head = attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])
            view_data(head, case["i"], case["labels"])


def test_options_and_overflows_are_refused_in_pythons_words():
    """An option is checked against its row of the table, and an overflow reported, with Python's message."""
    cases = [{**GOOD, **change} for _, change in INVALID if "options" in change]
    for case, js in zip(cases, run_js(cases)["cases"]):
        with pytest.raises(AttentionError) as python:
            attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])
        assert js["error"] == str(python.value)
    assert len(cases) >= 7


def test_attend_reads_its_options_from_the_table_it_is_given():
    """The port lists no switch of its own: a table with other limits (or a switch fewer) is obeyed."""
    table = table_json()
    narrow = [{**s, "low": 0.5} if s["name"] == "temperature" else s for s in table]
    case = {**GOOD, "options": {"temperature": 0.3}}
    ok, refused = (
        run_node(DRIVER, {"switches": t, "cases": [case], "fmt": [], "browser": False})["cases"][0]
        for t in (table, narrow)
    )
    assert "head" in ok and ok["head"]["temperature"] == 0.3
    assert refused["error"] == "temperature is 0.3; expected a number from 0.5 to 5"
    fewer = [s for s in table if s["name"] != "tied_qk"]
    cases = [GOOD, {**GOOD, "options": {"tied_qk": True}}]
    out = run_node(DRIVER, {"switches": fewer, "cases": cases})["cases"]
    assert "tied_qk" not in out[0]["head"] and "unknown options: tied_qk" in out[1]["error"]


def test_the_page_has_one_number_formatter_and_one_html_escaper():
    """Issue 27: static/pyformat.js writes every number the pages show (Python's rounding, ties to even) and
    escapes every text; no other script rounds with toFixed & co or escapes HTML by hand."""
    rounding = re.compile(r"\.(toFixed|toExponential|toPrecision|toLocaleString)\(|Intl\.NumberFormat")
    escaping = re.compile(r"&amp;|&lt;|&quot;|&#x27;")
    for path in sorted((ROOT / "static").glob("*.js")):
        if path.name == "pyformat.js":
            continue
        text = path.read_text()
        assert not rounding.search(text), f"{path.name} formats a number itself"
        assert not escaping.search(text), f"{path.name} escapes HTML itself"


def test_works_as_a_browser_global():
    api = run_js(browser=True)["browser"]
    assert api is not None, "loading static/attention.js without `module` did not define self.AttentionHead"
    assert {"attend", "trace", "viewData", "fmt"} <= set(api)
