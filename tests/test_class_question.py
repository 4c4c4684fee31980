"""Issue 24 item 3, the class answers a question together: the question and its tally
(core/class_question.py), and the whole round in one server process, headless (widgets/class_question_view.py
through the class bus). The same round through nginx, two processes and Redis is tests/test_class_ask.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.class_question import (
    TOP_KEY,
    add_tallies,
    answer_index,
    ask,
    ask_top_key,
    estimate_ranges,
    in_range,
    read_question,
    share,
    tally,
)
from core.lessons import QUESTIONS, pose
from widgets.broadcast import CLOSED, OPEN, REVEALED, ClassBus, question_message, read_question_message
from widgets.class_link import ClassLink
from widgets.state import HeadState
from widgets.teacher_desk import TeacherDesk


def test_the_tally_counts_each_choice_and_nothing_else():
    assert tally([0, 2, 2, 1, 2], 3) == [1, 1, 3]
    assert tally([], 4) == [0, 0, 0, 0]
    assert tally([3, -1, 1.0, True, "1", None, 1], 3) == [0, 1, 0]  # only whole choice indices count
    assert add_tallies([[1, 0, 2], [0, 4, 1], None, [9, 9], [1, -5, 0]], 3) == [2, 4, 3]
    assert share([1, 1, 2]) == [25, 25, 50] and share([0, 0]) == [0, 0]


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_every_question_of_the_bank_is_a_choice_whose_right_answer_is_the_banks(name):
    q = ask(name)
    posed = pose(name)
    assert read_question(json.loads(json.dumps(q))) == q  # travels as JSON, reads back as it went
    if posed.kind == "estimate":  # an estimate: the range that holds the head's number
        ranges = estimate_ranges(0.0, 1.0)
        (k,) = q["right"]
        assert ranges[k][0] - 1e-12 <= posed.value <= ranges[k][1] + 1e-12 and len(q["choices"]) == 10
        assert "range" in q["prompt"] and "slider" not in q["prompt"]
    else:
        assert q["choices"] == list(posed.choices) and q["right"] == list(posed.right)
    assert q["answer"].endswith(".")


def test_which_key_is_the_heads_own_top_key_ties_included():
    s = HeadState()
    q = ask_top_key(s.head, s.labels, s.query)
    assert q["name"] == TOP_KEY and q["choices"] == list(s.labels)
    assert q["right"] == [int(np.argmax(s.head.weights[s.query]))] == [1]  # "it" weighs "cat" most
    s.load("exercise-1")  # "it" splits 0.40 / 0.40 between "sat" and itself: both are right
    assert ask_top_key(s.head, s.labels, s.query)["right"] == [2, 3]
    assert in_range(1.0, estimate_ranges(0, 1)) == 9 and in_range(0.3, estimate_ranges(0, 1)) == 3


def test_an_answer_not_among_the_choices_and_a_malformed_message_are_refused_in_words():
    q = ask("no-scaling")  # three choices
    assert answer_index(q, 2) == 2
    for bad in (3, -1, 1.5, "1", None, True, float("nan")):
        with pytest.raises(ValueError, match="not one of the choices"):
            answer_index(q, bad)
    wrong_right = json.dumps({"state": "open", "question": {**q, "right": [7]}})
    for bad in ("{", "[]", '{"state": "open"}', wrong_right):
        with pytest.raises(ValueError):
            read_question_message(bad)
    revealed = question_message(REVEALED, q, [1, 2])  # counts of another length
    with pytest.raises(ValueError):
        read_question_message(json.dumps(revealed))


def round_trip(bus, n=5):
    """n students on `bus` and a teacher's desk (one process); returns (links, desk)."""
    students = [HeadState() for _ in range(n)]
    links = [ClassLink(s, bus=bus) for s in students]
    desk = TeacherDesk(HeadState(), "http://x/", bus=bus)
    return links, desk


def test_one_process_ask_answer_change_reveal_close_and_a_latecomer():
    bus = ClassBus()
    links, desk = round_trip(bus)
    assert not any(link.card.layout.visible for link in links)
    desk.question_desk.pick.value = "exercise-1"
    desk.question_desk.ask()
    q = bus.question["question"]
    assert all(link.card.layout.visible for link in links)
    assert "Which key will 'it' weigh most after the change?" in links[0].card.text.text
    assert links[0].card.choices.labels == ["A. The", "B. cat", "C. sat", "D. it"]
    for link, pick in zip(links, [2, 2, 3, 1, None], strict=True):
        link.card.choices.active = pick
    links[3].card.choices.active = 2  # changes their mind before the reveal
    links[4].card.choices.active = 7  # not a choice: refused, in words, nothing counted
    assert "not one of the choices" in links[4].card.status.text and links[4].card.choices.active is None
    desk.class_view.refresh()
    assert bus.class_view()["tally"] == [0, 0, 3, 1]
    assert "<b>4</b> of 5 students answered" in desk.question_desk.count.text
    assert desk.question_desk.source.data["students"] == [0, 0, 3, 1]
    assert "right answer" not in desk.question_desk.table.text  # the projector does not give it away
    assert [link.card.own for link in links] == [2, 2, 3, 2, None]
    assert all("Your answer" in link.card.status.text for link in links[:4])
    late = ClassLink(HeadState(), bus=bus)  # a latecomer gets the open question
    assert late.card.layout.visible and late.card.question_id == q["id"] and late.card.own is None

    desk.question_desk.reveal()
    assert bus.question["state"] == REVEALED and bus.question["counts"] == [0, 0, 3, 1]
    card = links[0].card
    assert card.choices.disabled and "You said C: right." in card.status.text
    assert "your answer" in card.status.text and "right answer" in card.status.text
    assert "You said D: right." in links[2].card.status.text  # "it" splits evenly: C and D are both right
    assert "You did not answer." in links[4].card.status.text
    links[1].card.choices.active = 0  # after the reveal an answer is refused
    assert "not open for answers" in links[1].card.status.text and links[1].card.own == 2
    desk.class_view.refresh()
    assert "right answer" in desk.question_desk.table.text
    assert desk.question_desk.source.data["colour"][2] != desk.question_desk.source.data["colour"][0]

    desk.question_desk.close()
    assert bus.question["state"] == CLOSED and not any(link.card.layout.visible for link in links)


def test_a_page_that_comes_back_gets_the_open_question_with_its_own_answer():
    bus = ClassBus()
    links, desk = round_trip(bus, 2)
    desk.question_desk.pick.value = TOP_KEY
    desk.question_desk.ask()
    links[0].card.choices.active = 1
    kept = links[0].published()
    assert kept["answer"] == {"id": bus.question["question"]["id"], "choice": 1}
    bus.leave(links[0].student)  # its server process died; the page comes back
    again = ClassLink(HeadState(), bus=bus, session_args={"class": [json.dumps(kept).encode()]})
    assert again.card.own == 1 and again.card.choices.active == 1
    assert bus.class_view()["tally"] == [0, 1, 0, 0]
    forged = {**kept, "answer": {"id": kept["answer"]["id"], "choice": 40}}  # a copy that does not read
    other = ClassLink(HeadState(), bus=bus, session_args={"class": [json.dumps(forged).encode()]})
    assert other.card.own is None and other.card.layout.visible
    assert bus.question["state"] == OPEN


def test_with_the_link_between_processes_down_the_desk_says_so_and_asks_nothing():
    bus = ClassBus()
    links, desk = round_trip(bus, 1)
    bus.link_up = False  # (as when Redis is not answering)
    desk.question_desk.ask()
    assert bus.question is None
    assert "link between the server processes is down" in desk.question_desk.alert.text
    bus.link_up = True
    desk.question_desk.ask()
    assert bus.question["state"] == OPEN and desk.question_desk.alert.text == ""
    assert links[0].card.layout.visible


def test_a_teachers_page_that_comes_back_brings_the_question_to_a_process_that_knows_none():
    bus = ClassBus()
    links, desk = round_trip(bus, 1)
    desk.question_desk.ask()
    kept = desk.published()
    assert kept["question"]["state"] == OPEN
    fresh = ClassBus()  # the teacher's process was started again
    TeacherDesk(HeadState(), "http://x/", bus=fresh, session_args={"class": [json.dumps(kept).encode()]})
    assert fresh.question["question"] == bus.question["question"]
    late = ClassLink(HeadState(), bus=fresh)  # and its students get it
    assert late.card.question_id == bus.question["question"]["id"]
    forged = ClassBus()  # a copy that does not read is left out; the desk works on
    bad = {**kept, "question": {"state": "open", "question": {"id": "x"}}}
    TeacherDesk(HeadState(), "http://x/", bus=forged, session_args={"class": [json.dumps(bad).encode()]})
    assert forged.question is None
