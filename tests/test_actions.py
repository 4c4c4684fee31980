"""Action-sequence parity: the served app's logic (HeadState + widgets.viewdata) and the page's
(static/explorer.js) take the same user actions to the same states, messages and view data.

Hypothesis draws the sequences (sliders, query picks, every switch of core.options.SWITCHES, presets,
label edits, adding and removing tokens, C and d, W entries, the blend plot's dims, links, the walk through
the six steps and the questions (ask, predict, reveal), and refused inputs: NaN, ±inf, text, 1e308, empty
and repeated labels, a 17th token, a prediction that is not one of the answers).  Python runs each action on a
HeadState, turning its drawn indices into ones that fit the state at that moment, and records the
concrete action; all sequences then go to one Node process (tests/action_driver.js) in one batch.
After every action the state, the message and every piece of view data must be equal, numbers to the
last bit and text exactly: both runtimes sum, exponentiate and format in the same steps (static/pyformat.js
writes numbers as Python does, exact ties included, so the draws include values that round half way).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.lessons import QUESTIONS, pose
from core.options import SWITCHES
from core.presets import PRESETS
from tests import node_batch
from tests.node_batch import NODE, decode_hook
from tests.test_parity import mismatches
from widgets.lesson_data import lesson_of
from widgets.lesson_state import LESSON_ACTIONS
from widgets.logic_config import logic_config
from widgets.state import HeadState
from widgets.url_state import STEP_NOISE, encode
from widgets.viewdata import view_data

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS logic cannot be run")

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "action_driver.js"
N_SEQUENCES = 320
MIN_ACTIONS = 14
BATCH = 80

REFUSED_NUMBERS = (math.nan, math.inf, -math.inf, 1e308, -1e308, 1e101, "abc", "", None, "1.2.3")
LABELS = (
    "The",
    "cat",
    "sat",
    "it",
    "mat",
    "was",
    "<img src=x onerror=alert(1)>",
    '"q"',
    "it's",
    "a & b",
    "é",
    "∞",
    "x" * 41,
    "",
    "  ",
)

# Exact halves at the last shown digit ("0.125" is "0.12" in Python, "0.13" in JavaScript's toFixed), for
# the cells (two places), the checks (three and six) and the messages (six significant digits).
TIES = (0.125, -0.375, 1.125, 2.5, 0.0625, 0.0005, 1234565.0, -1234565.0, 1234575.0)
number = st.one_of(
    st.integers(-300, 300).map(lambda k: k / 100),
    st.integers(-24, 24).map(lambda k: k / 8),
    st.sampled_from((0.0, 1.0, -1.0, 2.5, 1e-7, 123.456, "1.5", " -0.25 ", *TIES)),
    st.sampled_from(REFUSED_NUMBERS),
)
index = st.integers(0, 15)
coordinate = st.integers(-1, 6)


def option_action(s):
    if s.kind == "toggle":
        values = st.booleans()
    elif s.kind == "choice":
        values = st.sampled_from((*s.choices, "max"))
    else:
        inside = st.integers(int(s.low * 100) if s.low > -1e6 else -400, 400).map(lambda k: k / 100)
        values = st.one_of(inside, st.sampled_from((0.0, -1.0, 6.0, 1e6, s.low, *TIES, *REFUSED_NUMBERS)))
    return st.fixed_dictionaries({"do": st.just("option"), "name": st.just(s.name), "value": values})


SIXTEEN = {
    "tokens": ",".join(f"w{k}" for k in range(16)),
    "X": ";".join(",".join(str((k * 7 + c) % 5 - 2) for c in range(3)) for k in range(16)),
}
LINKS = (
    {"preset": "tired"},
    {"preset": "temperature-low", "query": "cat"},
    {"temp": "0.5", "mask": "0"},
    {"temp": "9"},
    {"X": "1,2;3,4"},
    {"norm": "bogus", "scale": "maybe"},
    {"query": "cat"},
    {"query": "nobody"},
    {"tokens": "a,b,c,d", "dims": "1,0"},
    {"xscale": "abc", "dims": "x"},
    {"tokens": "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E,%22q%22,a%20%26%20b,it"},
    {"preset": "nope", "WQ": "1,0;0,1;1,1"},
    {"tokens": "a,a,b,c"},
    {**SIXTEEN, "preset": "custom", "query": "15"},
    {"exercise": "exercise-1"},
    {"walk": "3"},
    {"walk": "9", "exercise": "nope"},
    {"preset": "tired", "exercise": "no-mask", "walk": "4"},
    {"exercise": "future-rows", "query": "cat"},
    *({"exercise": name} for name in QUESTIONS),  # every question by its link
)

# Links drawn part by part: every key the served app reads, with good and malformed values.
LINK_VALUES = (
    "1",
    "0",
    "yes",
    "maybe",
    "",
    "softmax",
    "top1",
    "bad",
    "0.5",
    "2",
    "9",
    "-1",
    "1e400",
    "nan",
    "0,1",
    "2,0",
    "1,1",
    "x",
    "1,0,0;0,1,0;0,0,1;0.2,0.3,0",
    "1,2;3",
    "a,b,c,d",
    "The,cat,sat,it",
    "%3Cb%3E,x,y,z",
    "tired",
    "chapter",
    "cat",
    "3",
    "7",
    "custom",
    "exercise-1",
    "no-mask",
    "future-rows",
    "4",
)
LINK_KEYS = ("preset", "tokens", "X", "WQ", "WK", "WV", "query", "dims", *(s.url_key for s in SWITCHES))
LINK_KEYS += ("walk", "exercise")
WALK_STEPS = (0, 1, 4, 6, 7, -1, 2.5, 3.0, "x", None)
ASKED = (*QUESTIONS, *QUESTIONS, "", "nope")
drawn_link = st.dictionaries(st.sampled_from(LINK_KEYS), st.sampled_from(LINK_VALUES), max_size=5)

action = st.one_of(
    st.fixed_dictionaries({"do": st.just("x"), "token": index, "component": index, "value": number}),
    st.fixed_dictionaries({"do": st.just("x"), "token": index, "component": index, "value": number}),
    st.fixed_dictionaries({"do": st.just("query"), "index": index}),
    *(option_action(s) for s in SWITCHES),
    st.fixed_dictionaries({"do": st.just("preset"), "name": st.sampled_from((*PRESETS, "nope"))}),
    st.just({"do": "reset"}),
    st.fixed_dictionaries(
        {
            "do": st.just("labels"),
            "labels": st.lists(st.sampled_from(LABELS), min_size=16, max_size=16),
            "count": st.sampled_from((0, 0, 0, 1, -1)),
        }
    ),
    st.just({"do": "add"}),
    st.just({"do": "add"}),
    st.just({"do": "remove"}),
    st.fixed_dictionaries(
        {
            "do": st.just("widths"),
            "which": st.sampled_from(("C", "d")),
            "value": st.sampled_from((1.0, 2.0, 3.0, 4.0, 6.0, 0.0, 7.0, 2.5, math.nan, math.inf, "x", None)),
        }
    ),
    st.fixed_dictionaries(
        {
            "do": st.just("weight"),
            "name": st.sampled_from(("W_Q", "W_K", "W_V")),
            "row": index,
            "col": index,
            "value": number,
        }
    ),
    st.fixed_dictionaries({"do": st.just("dims"), "value": st.lists(coordinate, min_size=2, max_size=2)}),
    st.fixed_dictionaries({"do": st.just("link"), "params": st.sampled_from(LINKS)}),
    st.fixed_dictionaries({"do": st.just("link"), "params": drawn_link}),
    # the lesson: the walk, and the questions (a prediction drawn as an answer of the open question, or not)
    st.sampled_from(({"do": "walk-open"}, {"do": "walk-next"}, {"do": "walk-next"}, {"do": "walk-prev"})),
    st.sampled_from(({"do": "walk-leave"}, {"do": "walk-offer"}, {"do": "reveal"}, {"do": "next-question"})),
    st.just({"do": "close-question"}),
    st.fixed_dictionaries({"do": st.just("walk-to"), "step": st.sampled_from(WALK_STEPS)}),
    st.fixed_dictionaries(
        {
            "do": st.just("predict"),
            "value": st.sampled_from((0, 1, 2, 3, 9, -1, 0.5, 0.93, 1.5, None, "x", True)),
            "fit": st.booleans(),
        }
    ),
    # (three times: a question is asked, then answered, often enough in a sequence of 20)
    *[st.fixed_dictionaries({"do": st.just("ask"), "name": st.sampled_from(ASKED)})] * 3,
    *[st.fixed_dictionaries({"do": st.just("predict"), "value": st.integers(0, 9), "fit": st.booleans()})]
    * 3,
)
sequence = st.lists(action, min_size=MIN_ACTIONS, max_size=MIN_ACTIONS)


def concrete(a: dict, s: HeadState) -> dict:
    """The drawn action with its indices made to fit the state it meets (as the page's controls would)."""
    T, C, d = s.head.T, s.head.C, s.head.d
    if a["do"] == "x":
        return {**a, "token": a["token"] % T, "component": a["component"] % C}
    if a["do"] == "query":
        return {**a, "index": a["index"] % T}
    if a["do"] == "weight":
        return {**a, "row": a["row"] % C, "col": a["col"] % d}
    if a["do"] == "labels":
        n = max(1, T + a["count"])
        return {"do": "labels", "text": ", ".join(a["labels"][:n])}
    if a["do"] == "widths":
        return {"do": "widths", a["which"]: a["value"]}
    if a["do"] == "predict":  # an answer of the open question, as its control gives one (or the value drawn)
        choices = len(pose(s.question).choices) if s.question else 0
        fits = a["fit"] and choices and isinstance(a["value"], int) and not isinstance(a["value"], bool)
        return {"do": "predict", "value": a["value"] % choices if fits else a["value"]}
    return a


def draw_sequences(n: int) -> list[list[dict]]:
    drawn: list = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(sequence)
    def collect(actions):
        drawn.append(actions)

    collect()
    return drawn


def python_run(actions: list[dict]) -> tuple[list[dict], list[dict]]:
    """Concrete actions and, after each, the state and view data, from HeadState and viewdata."""
    s = HeadState()
    done, seen, before = [], [], None
    for a in actions:
        a = concrete(a, s)
        s.act(a)
        done.append(a)
        state = s.as_data()
        inputs = {**state, "message": ""}
        # A refused action leaves every input as it was: its view is the one before (sent as None).
        view = None if inputs == before else view_data(
            s.head, s.query, s.labels, s.dims, s.moved, s.before, lesson=lesson_of(s)
        )
        before = inputs
        seen.append({"state": state, "view": canonical(view), "link": encode(s)})
    return done, seen


def start_node(sequences: list[list[dict]]):
    """Node replaying a batch, started at once so it runs while Python works on the next batch."""
    return node_batch.start_node(DRIVER, {"config": logic_config(), "sequences": sequences})


def results(proc) -> list:
    return node_batch.results(proc, object_hook=nan_hook)


def run_node(sequences: list[list[dict]]) -> list:
    return results(start_node(sequences))


NAN = float("nan")


def canonical(view: dict | None) -> dict | None:
    """Python's view data in the shapes JSON gives back (lists for tuples, one NaN object for every NaN),
    so an exact `==` can settle most steps at C speed before the slower walk that explains a difference."""
    if view is None:
        return None
    out = dict(view)
    out["cells"] = {
        name: {**cells, "value": [NAN if v != v else v for v in cells["value"]]}
        for name, cells in view["cells"].items()
    }
    out["limits"] = {name: list(v) for name, v in view["limits"].items()}
    out["bounds"] = list(view["bounds"])
    return out


def nan_hook(d: dict):
    return NAN if d.keys() == {"$f"} and d["$f"] == "NaN" else decode_hook(d)


def sorted_keys(d: dict) -> dict:
    return {k: d[k] for k in sorted(d)}


def test_python_and_javascript_take_every_action_sequence_to_the_same_page():
    drawn = draw_sequences(N_SEQUENCES)
    assert len(drawn) >= N_SEQUENCES and all(len(a) >= MIN_ACTIONS for a in drawn)
    # In batches: Node replays one batch while Python runs the next (the machine has two cores).
    runs, nodes = [], []
    for k in range(0, len(drawn), BATCH):
        batch = [python_run(actions) for actions in drawn[k : k + BATCH]]
        runs += batch
        nodes.append(start_node([done for done, _ in batch]))
    js = [seq for proc in nodes for seq in results(proc)]
    kinds, refused, revealed, walked = set(), 0, 0, 0
    for k, ((done, seen), js_seen) in enumerate(zip(runs, js)):
        for step, (a, py, got) in enumerate(zip(done, seen, js_seen)):
            where = f"sequence {k} step {step} {a!r}"
            assert "error" not in got, f"{where}: JS threw {got['error']}"
            assert py["link"] == got["link"], f"{where}: links differ"
            if py["state"] != got["state"] or py["view"] != got["view"]:  # else equal, bit for bit
                found = mismatches(sorted_keys(py["state"]), sorted_keys(got["state"]), f"{where} state")
                found += mismatches(py["view"], got["view"], f"{where} view")
                found = found or [f"{where}: not equal (types?)"]
                assert not found, "\n".join(found[:10]) + f"\nactions so far: {done[: step + 1]!r}"
            kinds.add(a["do"] if a["do"] != "option" else a["name"])
            refused += bool(py["state"]["message"])
            revealed += a["do"] in ("predict", "reveal") and py["state"]["revealed"]
            walked += a["do"].startswith("walk") and py["state"]["walk"] > 0
    # The draw reached every kind of action, every switch, and many refusals.
    assert kinds >= {
        "x",
        "query",
        "preset",
        "reset",
        "labels",
        "add",
        "remove",
        "widths",
        "weight",
        "dims",
        "link",
        *(s.name for s in SWITCHES),
        *LESSON_ACTIONS,
    }
    assert refused > N_SEQUENCES, refused
    # drawn in 30 runs: 13-40 reveals, 75-145 walk steps
    assert revealed > N_SEQUENCES // 40 and walked > N_SEQUENCES // 8, (revealed, walked)


def test_refusals_say_the_same_thing_in_both():
    """A few refusals by hand, each with the message the served page shows."""
    cases = [
        [{"do": "x", "token": 3, "component": 0, "value": math.nan}],
        [{"do": "x", "token": 3, "component": 0, "value": "abc"}],
        [{"do": "x", "token": 3, "component": 0, "value": 1e308}],
        [{"do": "option", "name": "temperature", "value": 0.0}],
        [{"do": "option", "name": "temperature", "value": 1234565}],  # a tie: "1.23456e+06", as Python
        [{"do": "labels", "text": "The, cat, , it"}],
        [{"do": "labels", "text": "The, cat, cat, it"}],
        [{"do": "link", "params": SIXTEEN}, {"do": "add"}],
        [{"do": "widths", "C": math.inf}],
    ]
    js = run_node(cases)
    for actions, got in zip(cases, js):
        s = HeadState()
        for a in actions:
            s.act(a)
        assert s.message and got[-1]["state"]["message"] == s.message
    assert js[-2][-1]["state"]["message"] == "the editor stops at 16 tokens"
    assert js[4][-1]["state"]["message"] == "temperature is 1.23456e+06; expected a number from 0.05 to 5"


def test_a_link_that_matches_its_preset_keeps_the_presets_name_in_both_runtimes():
    """Found by the draw above (a CI run, 2026-12-01): a link naming a preset, with a setting the preset
    already holds beside refused ones, kept the preset's name in Python but dropped it in JavaScript."""
    link = {"scale": "x", "temp": "1,1", "preset": "tired", "norm": "softmax", "tied": ""}
    actions = [{"do": "x", "token": 2, "component": 0, "value": 0.11}, {"do": "link", "params": link}]
    done, seen = python_run(actions)
    (js,) = run_node([done])
    assert seen[-1]["state"]["preset"] == js[-1]["state"]["preset"] == "tired"
    assert js[-1]["state"]["message"] == seen[-1]["state"]["message"] != ""


def test_a_lone_huge_value_still_gets_a_blend_frame_in_both_runtimes():
    """Found by the draw above (2026-12-03): one token whose value is -1e100 gave the blend a frame whose
    edges were the same float (its margin was lost to rounding), and Python divided by its width of 0."""
    actions = [{"do": "remove"}] * 3 + [{"do": "x", "token": 0, "component": 0, "value": -1e100}]
    done, seen = python_run(actions)
    (js,) = run_node([done])
    view = seen[-1]["view"]
    assert not seen[-1]["state"]["message"] and len(view["blend"]["values"]["x"]) == 1
    x0, x1, y0, y1 = view["bounds"]
    assert x0 < min(view["blend"]["values"]["x"]) < x1 and y0 < y1
    assert js[-1]["view"]["bounds"] == view["bounds"] and js[-1]["state"] == seen[-1]["state"]


def test_links_write_a_sliders_value_at_its_step_in_both_runtimes():
    """Issue 26: a slider that adds steps lands a few roundings off them; a link writes the grid point
    (0.45, not 0.4500000000000002), and only within float noise of it (0.454 stays 0.454)."""
    noisy = 0.1 * 3 + 0.15  # 0.45000000000000007
    assert noisy != 0.45
    actions = [
        {"do": "x", "token": 3, "component": 0, "value": noisy},
        {"do": "x", "token": 2, "component": 1, "value": 0.454},
        {"do": "x", "token": 1, "component": 2, "value": -(0.1 + 0.2)},
        {"do": "x", "token": 0, "component": 0, "value": -1e-17},
        {"do": "option", "name": "temperature", "value": 0.1 * 3},
    ]
    done, seen = python_run(actions)
    (js,) = run_node([done])
    link = seen[-1]["link"]
    assert js[-1]["link"] == link
    rows = [row.split(",") for row in link["X"].split(";")]
    assert (rows[3][0], rows[2][1], rows[1][2], rows[0][0]) == ("0.45", "0.454", "-0.3", "0")
    assert link["temp"] == "0.3"
    declared = re.search(r"const STEP_NOISE = ([0-9.e-]+);", (ROOT / "static" / "explorer.js").read_text())
    assert declared and float(declared.group(1)) == STEP_NOISE


# --- rows that cannot see the future (issue 31 item 3) ---------------------------------------------


def test_a_slider_move_marks_the_rows_it_left_alone_the_same_in_both_runtimes():
    """With the mask on, a move of the last token's slider leaves every earlier row unchanged to the last
    bit, and both runtimes mark them so; with the mask off, the rows it changed (all of them here)."""
    last = {"do": "x", "token": 3, "component": 0}
    actions = [
        {**last, "value": 0.5},
        {**last, "value": 0.55},
        {"do": "query", "index": 1},  # another action: the marks go
        {**last, "value": 0.6},
        {"do": "option", "name": "causal", "value": False},
        {**last, "value": 0.3},
        {**last, "value": "abc"},  # refused: the marks stay
    ]
    done, seen = python_run(actions)
    (js,) = run_node([done])
    for step, (py, got) in enumerate(zip(seen, js)):
        found = mismatches(sorted_keys(py["state"]), sorted_keys(got["state"]), f"step {step} state")
        if py["view"] is not None:
            found += mismatches(py["view"], got["view"], f"step {step} view")
        assert not found, found[:5]
    masked = seen[1]["view"]
    assert seen[1]["state"]["moved"] == [3, 0, 0.5]  # the value before this move
    assert masked["moved"]["unchanged"] == {"x": [1.5], "y": [1.0], "width": [3.84], "height": [2.84]}
    assert masked["moved"]["changed"]["y"] == [3.0]
    checks = masked["checks"].replace("&#x27;", "'")
    assert "Moving it[0]: the rows of 'The' to 'sat' did not change, to the last bit" in checks
    assert "With the mask on, no token before 'it' can see it." in checks
    assert seen[2]["state"]["moved"] is None and seen[2]["view"]["moved"]["unchanged"]["x"] == []
    unmasked = seen[5]["view"]
    assert unmasked["moved"]["unchanged"]["x"] == [] and unmasked["moved"]["changed"]["height"] == [3.84]
    assert "With the mask off, tokens before &#x27;it&#x27; read it too." in unmasked["checks"]
    assert seen[6]["state"]["moved"] == seen[5]["state"]["moved"] and seen[6]["state"]["message"]


def test_a_page_reading_its_sliders_sees_each_move_as_the_action_does():
    """static/explorer_page.js follow reads a move from the sliders (HeadLogic.sliderMove): over drawn
    sequences, its `moved` and its view data after each action equal the action's own."""
    sequences = [done for done, _ in (python_run(actions) for actions in draw_sequences(90))]
    proc = node_batch.start_node(DRIVER, {"config": logic_config(), "sequences": sequences, "follow": True})
    steps = [step for seq in results(proc) for step in seq]
    assert all("error" not in step for step in steps)
    read = [step["follow"] for step in steps if "follow" in step]  # the page's own controls' changes
    assert len(read) > 150 and all(read)
    assert sum(step["state"]["moved"] is not None for step in steps) > 50
