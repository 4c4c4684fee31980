"""A question the whole class answers together (issue 24 item 3): what it asks, its choices, which are right,
and the tally. Pure: the bank is core/lessons.py; this only turns a posed question into what travels to every
student's page (a plain dict, JSON-safe) and counts answers.

    ask(name)                         a question of the bank, for the class
    ask_top_key(head, labels, i)      "which key will row i weigh most in the head I am about to send?"
    answer_index(question, raw)       a student's answer as a choice index, or ValueError saying why not
    tally(answers, n)                 how many students picked each choice
    share(counts)                     each choice's share of the answers, in whole per cent

Every question is a choice among labelled answers (A, B, C…): an estimate of the bank becomes a choice among
ranges of ESTIMATE_BIN, the right one the range that holds the head's number, so that a class's answers add up
to one distribution on the teacher's page.
"""

from __future__ import annotations

import math
import uuid

from core.lessons import ESTIMATE_SLIDER, QUESTIONS, Posed, answer, pose, pose_top_key, short

TOP_KEY = "top-key"  # the question about the head the teacher is about to send
TOP_KEY_TITLE = "Which key will a row weigh most in the head I am about to send?"
ESTIMATE_BIN = 0.1  # an estimate's choices: ranges this wide over the estimate's slider
MAX_CHOICES = 16  # a head has at most 16 tokens


def letter(k: int) -> str:
    return chr(ord("A") + k)


def estimate_ranges(low: float, high: float, width: float = ESTIMATE_BIN) -> list[tuple[float, float]]:
    n = round((high - low) / width)
    return [(low + k * width, low + (k + 1) * width) for k in range(n)]


def in_range(value: float, ranges: list[tuple[float, float]]) -> int:
    """The range that holds `value` (a range holds its low end; the last one its high end too)."""
    low, width = ranges[0][0], ranges[0][1] - ranges[0][0]
    return max(0, min(len(ranges) - 1, math.floor((value - low) / width + 1e-9)))


def _question(posed: Posed, title: str) -> dict:
    if posed.kind == "estimate":
        low, high = ESTIMATE_SLIDER[0], ESTIMATE_SLIDER[1]
        ranges = estimate_ranges(low, high)
        choices = [f"{short(a)} to {short(b)}" for a, b in ranges]
        right = [in_range(posed.value, ranges)]
        prompt = posed.prompt.replace(" Set the slider to your estimate.", " Pick the range it falls in.")
    else:
        choices, right, prompt = list(posed.choices), list(posed.right), posed.prompt
    return {
        "id": uuid.uuid4().hex[:12],
        "name": posed.name,
        "title": title,
        "context": posed.context,
        "change": posed.change,
        "prompt": prompt,
        "choices": choices,
        "right": right,
        "answer": answer(posed)[:1].upper() + answer(posed)[1:] + ".",
    }


def ask(name: str) -> dict:
    """Question `name` of the bank (core/lessons.py QUESTIONS), as the class gets it."""
    if name not in QUESTIONS:
        raise ValueError(f"no question called {name!r} in the bank")
    return _question(pose(name), QUESTIONS[name].title)


def ask_top_key(head, labels, i: int) -> dict:
    """Which key row i of `head` will weigh most: the right answer is that head's own (ties: each top key)."""
    labels = [str(x) for x in labels]
    posed = pose_top_key(head, labels, i, name=TOP_KEY, title=TOP_KEY_TITLE)
    question = _question(posed, TOP_KEY_TITLE)
    question["context"] = (
        f"Your teacher is about to send a head of {len(labels)} tokens: "
        + ", ".join(f"'{t}'" for t in labels)
        + "."
    )
    return question


def read_question(data) -> dict:
    """A question from a message (Redis, a page's copy), checked as any input is; ValueError when it is not
    one."""
    if not isinstance(data, dict):
        raise ValueError("not a question")
    text = ("id", "name", "title", "context", "change", "prompt", "answer")
    if not all(isinstance(data.get(k), str) and len(data[k]) <= 2000 for k in text):
        raise ValueError("not a question")
    choices, right = data.get("choices"), data.get("right")
    if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES:
        raise ValueError("not a question's choices")
    if not all(isinstance(c, str) and len(c) <= 200 for c in choices):
        raise ValueError("not a question's choices")
    if (
        not isinstance(right, list)
        or not right
        or not all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < len(choices) for r in right)
    ):
        raise ValueError("not a question's right answer")
    return {k: data[k] for k in (*text, "choices", "right")}


def answer_index(question: dict, raw) -> int:
    """A student's answer as the index of one of the question's choices; ValueError with the reason (in
    words for the page) when it is not one."""
    ok = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)
    if not ok or raw != int(raw) or not 0 <= int(raw) < len(question["choices"]):
        raise ValueError(
            f"That answer is not one of the choices ({letter(0)} to {letter(len(question['choices']) - 1)})."
        )
    return int(raw)


def tally(answers, n: int) -> list[int]:
    """How many of `answers` (choice indices) picked each of n choices; anything else is not counted."""
    counts = [0] * n
    for a in answers:
        if isinstance(a, int) and not isinstance(a, bool) and 0 <= a < n:
            counts[a] += 1
    return counts


def add_tallies(tallies, n: int) -> list[int]:
    """The class's tally from each server process's."""
    counts = [0] * n
    for t in tallies:
        if isinstance(t, list) and len(t) == n:
            counts = [c + (v if isinstance(v, int) and v >= 0 else 0) for c, v in zip(counts, t)]
    return counts


def share(counts: list[int]) -> list[int]:
    """Each choice's share of the answers, in whole per cent (0 everywhere without an answer)."""
    total = sum(counts)
    return [round(100 * c / total) if total else 0 for c in counts]
