"""What each shipped run showed, counted over its seeds, in sentences built from its own numbers.

Nothing here is typed in: every number in a sentence, and every verdict, is computed from the runs' data
files (core/lab/store.py), so the lab's text changes when the runs do.

Each run's claim is put to one or more checks (`CHECKS`); a check is a test of one seed's record (and of
the same seed of the run it is set against), so "formed at 3 of 4 seeds" is a count, and a run trained
anywhere else (another seed, the browser) can be put to the same checks. The run's verdict counts the
checks that test the chapter's own claim: "reproduced" if they hold at every seed, "not reproduced" if at
none, "partly" otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.lab.encoding import curve_steps, snapshot_head


@dataclass(frozen=True)
class Check:
    name: str  # a few words, for the line of one seed
    says: str  # what holds when the test passes, as the lab lists it
    test: Callable  # (record, compared record or None, run) -> bool, for one seed
    claim: bool = True  # a test of the chapter's claim (counted in the verdict), or of what else happened


def end(record: dict, layer: int = 0) -> dict:
    """A layer's head scores at the end of training."""
    return record["end"]["scores"][layer]


def first_step_below(record: dict, level: float, steps: int):
    """The first step at which the (window-averaged) training loss is below `level`, or None."""
    for step, loss in zip(curve_steps(record["curve"], steps), record["curve"]["loss"]):
        if loss < level:
            return step
    return None


def tail_loss(record: dict) -> float:
    """The training loss over about the last twentieth of the steps (the curve's last twentieth)."""
    losses = record["curve"]["loss"]
    return float(np.mean(losses[-max(1, len(losses) // 20) :]))


def ln_vocabulary(run: dict) -> float:
    """The loss of a uniform guess over the vocabulary."""
    return math.log(run["shape"]["V"])


def slower(record, ref, run) -> bool:
    """Reaches a training loss of 1.0 at least a quarter later than the run it is set against, or never."""
    mine, theirs = first_step_below(record, 1.0, run["steps"]), first_step_below(ref, 1.0, run["steps"])
    return theirs is not None and (mine is None or mine >= 1.25 * theirs)


def positional_layer(record: dict) -> int:
    """The layer that looks T/2 − 1 back most on sequences that do not repeat."""
    return int(np.argmax([s["positional"] for s in record["end"]["scores"]]))


NO_SCALE_CHECKS = [
    Check(
        "one-hot at the start",
        "starts nearly one-hot (a row's largest weight ≥ 0.8 at initialisation)",
        lambda r, ref, run: r["start"]["scores"][0]["largest_weight"] >= 0.8,
    ),
    Check("slower", "learns slower (training loss below 1.0 at least a quarter later than with ÷√d)", slower),
    Check(
        "barely learns",
        "barely learns (held-out loss above half a uniform guess's)",
        lambda r, ref, run: r["end"]["eval_loss"] > 0.5 * ln_vocabulary(run),
    ),
]
CHECKS: dict[str, list[Check]] = {
    "previous-token": [
        Check(
            "reads the token before",
            "the head puts ≥ 0.9 of its weight on the token before",
            lambda r, ref, run: end(r)["previous_token"] >= 0.9,
        )
    ],
    "tied-qk": [
        Check(
            "reads i−1 less well than untied",
            "the tied head reads the token before less well (≤ 0.8 × the untied head's score)",
            lambda r, ref, run: end(r)["previous_token"] <= 0.8 * end(ref)["previous_token"],
        ),
        Check(
            "reads itself most",
            "most tokens read themselves most",
            lambda r, ref, run: end(r)["self_first"] >= 0.5,
        ),
    ],
    "top-1": [
        Check(
            "stays near a uniform guess",
            "the loss stays near a uniform guess (above 0.8 ln V)",
            lambda r, ref, run: r["end"]["eval_loss"] > 0.8 * ln_vocabulary(run),
        )
    ],
    "raw": [
        Check(
            "larger outputs later",
            "later positions get larger outputs (the last third's ≥ 1.5 × the first third's)",
            lambda r, ref, run: end(r)["late_to_early_output"] >= 1.5,
        )
    ],
    "no-scale": NO_SCALE_CHECKS,
    "no-scale-sgd": NO_SCALE_CHECKS,
    "positional-lookup": [
        Check(
            "an induction head",
            "an induction head: a head that reads what followed the token last time (≥ 0.5) and does not "
            "look a fixed distance back where nothing repeats (< 0.5)",
            lambda r, ref, run: any(
                s["induction"] >= 0.5 and s["positional"] < 0.5 for s in r["end"]["scores"]
            ),
        ),
        Check(
            "the repeat learned",
            "the repeat is learned (its loss below 0.2 × the first half's)",
            lambda r, ref, run: r["end"]["repeat_loss"] < 0.2 * r["end"]["first_half_loss"],
            claim=False,
        ),
        Check(
            "a positional look-up",
            "a positional look-up: a head that looks a fixed distance back even where nothing repeats "
            "(≥ 0.5)",
            lambda r, ref, run: max(s["positional"] for s in r["end"]["scores"]) >= 0.5,
            claim=False,
        ),
    ],
    "no-mask": [
        Check(
            "training loss near zero",
            "the training loss falls to nearly zero (below 0.01)",
            lambda r, ref, run: tail_loss(r) < 0.01,
        ),
        Check(
            "worse than a guess when generating",
            "generating one token at a time it does worse than a uniform guess",
            lambda r, ref, run: r["end"]["honest_loss"] > ln_vocabulary(run),
        ),
    ],
    "triggers": [
        Check(
            "the pair formed",
            "the pair formed: layer 0 reads the token before where a trigger was (> 0.5) and layer 1 looks "
            "up what followed a repeated trigger (> 0.5)",
            lambda r, ref, run: (
                end(r, 0)["previous_token_after_triggers"] > 0.5 and end(r, 1)["induction_at_triggers"] > 0.5
            ),
        )
    ],
}


def held(run: dict, runs: dict, check: Check) -> list[bool]:
    """The check at each seed of the run (against the same seed of the run it is set against)."""
    ref = runs.get(run["compare"])
    refs = {r["seed"]: r for r in ref["seeds"]} if ref else {}
    return [bool(check.test(r, refs.get(r["seed"]), run)) for r in run["seeds"]]


def verdict(checks: list[dict]) -> str:
    claimed = [c["held"] for c in checks if c["claim"]]
    if all(all(h) for h in claimed):
        return "reproduced"
    if not any(any(h) for h in claimed):
        return "not reproduced"
    return "partly"


# --- sentences -----------------------------------------------------------------------------------------


def small(x: float) -> str:
    """A loss or ratio in a sentence: three significant figures, two below 0.01 (never "0.000")."""
    if x == 0:
        return "0"
    digits = (2 if abs(x) >= 0.01 else 1) - math.floor(math.log10(abs(x)))
    return f"{x:.{max(0, digits)}f}"


def seeds_of(run: dict) -> str:
    """The run's seeds, as a sentence names them: "seeds 0–3", or "seeds 0, 2, 5"."""
    seeds = [r["seed"] for r in run["seeds"]]
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))


def each(values, fmt=lambda v: f"{v:.2f}") -> str:
    """One number per seed, in seed order: "0.98, 0.97, 0.97, 0.99" ("never" for a step not reached)."""
    return ", ".join("never" if v is None else fmt(v) for v in values)


def which_seeds(run: dict, flags: list[bool]) -> str:
    """The seeds where `flags` holds, as words."""
    seeds = [r["seed"] for r, f in zip(run["seeds"], flags) if f]
    return ", ".join(map(str, seeds)) if seeds else "none"


def how_much_learned(run: dict, losses: list[float]) -> str:
    """Per seed: learned the task (held-out loss below 0.1), part of it, or almost nothing (> 0.8 ln V)."""
    lnV = ln_vocabulary(run)
    kinds = [
        "the task" if x < 0.1 else "almost nothing" if x > 0.8 * lnV else "part of the task" for x in losses
    ]
    groups = []
    for kind in ("the task", "part of the task", "almost nothing"):
        flags = [k == kind for k in kinds]
        if any(flags):
            groups.append(f"{kind} at seed{'s' if sum(flags) > 1 else ''} {which_seeds(run, flags)}")
    return "it learns " + "; ".join(groups)


def over(run: dict, f) -> list:
    """f(record) for each seed's record."""
    return [f(r) for r in run["seeds"]]


def scores_at_end(run: dict, key: str, layer: int = 0) -> list:
    """A head score of one layer at the end of training, per seed."""
    return over(run, lambda r: end(r, layer)[key])


def at_end(run: dict, key: str) -> list:
    """A number of the last evaluation (a loss), per seed."""
    return over(run, lambda r: r["end"][key])


def uniform_guess(run: dict) -> str:
    return f"a uniform guess: ln {run['shape']['V']} = {ln_vocabulary(run):.2f}"


def previous_token_text(run, runs) -> list[str]:
    text = [
        f"Previous-token score after {run['steps']} steps: {each(scores_at_end(run, 'previous_token'))}; "
        f"held-out loss {each(at_end(run, 'eval_loss'), small)} ({seeds_of(run)}; {uniform_guess(run)})."
    ]
    if "triggers" in runs:
        formed = held(runs["triggers"], runs, CHECKS["triggers"][0])
        text.append(
            "The task's answer is the previous token itself, so this run shows that a head can learn the job "
            "when trained for it. Whether such a head appears when nothing asks for it is the triggers run's "
            f"question: there it formed at {sum(formed)} of {len(formed)} seeds."
        )
    return text


def tied_text(run, runs) -> list[str]:
    ref = runs["previous-token"]
    losses = at_end(run, "eval_loss")
    itself = each(scores_at_end(run, "self_first"), lambda v: f"{100 * v:.0f} %")
    return [
        f"Previous-token score with W_K = W_Q: {each(scores_at_end(run, 'previous_token'))}, against "
        f"{each(scores_at_end(ref, 'previous_token'))} with separate matrices ({seeds_of(run)}).",
        f"Queries whose largest weight is on themselves: {itself}. A tied score q_i·q_j can still favour "
        "another token, one whose query is longer (q·k ≤ |q||k|), as the explorer's W_K = W_Q note shows: "
        "how many tokens read themselves most depends on the lengths the run learns.",
        f"Held-out loss of the tied model: {each(losses, small)}, against "
        f"{each(at_end(ref, 'eval_loss'), small)} untied ({uniform_guess(run)}): "
        f"{how_much_learned(run, losses)}.",
    ]


def top1_text(run, runs) -> list[str]:
    ref = runs["previous-token"]
    return [
        f"Held-out loss after {run['steps']} steps: {each(at_end(run, 'eval_loss'), small)} "
        f"({seeds_of(run)}; {uniform_guess(run)}; the softmax head: "
        f"{each(at_end(ref, 'eval_loss'), small)}); previous-token score "
        f"{each(scores_at_end(run, 'previous_token'))}."
    ]


def raw_text(run, runs) -> list[str]:
    ref = runs["previous-token"]
    losses = at_end(run, "eval_loss")
    weights = [snapshot_head(r["snapshots"][-1], run["switches"]).weights for r in run["seeds"]]
    visible = np.concatenate([w[np.tril(np.ones_like(w, dtype=bool))] for w in weights])
    sums = np.concatenate([w.sum(axis=-1) for w in weights])
    return [
        "The head's output at the last third of the positions, over its size at the first third: "
        f"{each(scores_at_end(run, 'late_to_early_output'))} ({seeds_of(run)}; the softmax head: "
        f"{each(scores_at_end(ref, 'late_to_early_output'))}).",
        f"On the probe the trained weights run from {visible.min():.2f} to {visible.max():.2f} and a row's "
        f"weights add up to {sums.min():.2f}…{sums.max():.2f} over the seeds: sums of values, not averages.",
        f"Held-out loss {each(losses, small)} (the softmax head: {each(at_end(ref, 'eval_loss'), small)}; "
        f"{uniform_guess(run)}): {how_much_learned(run, losses)}.",
    ]


def no_scale_text(run, runs) -> list[str]:
    ref = runs[run["compare"]]
    optimiser = {"adam": "Adam", "sgd": f"plain SGD (lr {run['lr']:g})"}[run["optimiser"]]
    losses = at_end(run, "eval_loss")

    def largest(r):
        return r["start"]["scores"][0]["largest_weight"]

    def steps_below(level):
        return [each([first_step_below(r, level, x["steps"]) for r in x["seeds"]], str) for x in (run, ref)]

    text = [
        f"At initialisation (d = {run['shape']['d']}) a row's largest weight averages "
        f"{each(over(run, largest))} without ÷√d and {each(over(ref, largest))} with it (held-out sequences, "
        f"{seeds_of(run)}).",
        "With {}, the training loss is first below 1.0 at step {} without ÷√d and {} with it; below 0.1 at "
        "{} and {}.".format(optimiser, *steps_below(1.0), *steps_below(0.1)),
        f"Final held-out loss {each(losses, small)} against {each(at_end(ref, 'eval_loss'), small)}: "
        + how_much_learned(run, losses)
        + (": 'barely learns' does not hold at this size." if all(x < 0.1 for x in losses) else "."),
    ]
    other = {"no-scale": "no-scale-sgd", "no-scale-sgd": "no-scale"}[run["name"]]
    if other in runs:
        o = runs[other]
        late = held(o, runs, NO_SCALE_CHECKS[1])
        text.append(
            f"Trained with {'plain SGD' if o['optimiser'] == 'sgd' else 'Adam'} instead (the run {other}), "
            f"the head without ÷√d is slower at {sum(late)} of {len(late)} seeds."
        )
    return text


def positional_text(run, runs) -> list[str]:
    h = run["shape"]["T"] // 2
    per_seed = []
    for r in run["seeds"]:
        k = positional_layer(r)
        s = r["end"]["scores"][k]
        per_seed.append(
            f"seed {r['seed']}: layer {k} puts {s['positional']:.2f} on position i − {h - 1} "
            f"(induction score {s['induction']:.2f})"
        )
    previous = each(scores_at_end(run, "previous_token"))
    return [
        f"Loss on the repeated half: {each(at_end(run, 'repeat_loss'), small)}, against "
        f"{each(at_end(run, 'first_half_loss'), small)} on the first half ({seeds_of(run)}).",
        "On sequences that do not repeat, the head that looks furthest back by position: "
        + "; ".join(per_seed)
        + ". A head that still looks there when nothing repeats finds the spot by its distance (the halves "
        "always have the same length), not by matching tokens.",
        f"Layer 0's previous-token score: {previous}"
        + (
            ": the previous-token head an induction head needs did not form."
            if all(v < 0.5 for v in scores_at_end(run, "previous_token"))
            else "."
        ),
    ]


def no_mask_text(run, runs) -> list[str]:
    ref = runs[run["compare"]]
    return [
        f"Training loss {each(over(run, tail_loss), small)} against {each(over(ref, tail_loss), small)} for "
        f"the masked model ({seeds_of(run)}).",
        "Generating one token at a time, so that nothing ahead exists: loss "
        f"{each(at_end(run, 'honest_loss'), small)}, against {each(at_end(ref, 'eval_loss'), small)} for the "
        f"masked model and {uniform_guess(run)}.",
    ]


def triggers_text(run, runs) -> list[str]:
    formed = held(run, runs, CHECKS["triggers"][0])
    text = [
        "Layer 0 on the tokens right after a trigger (where the pair needs a previous-token head): "
        f"previous-token score {each(scores_at_end(run, 'previous_token_after_triggers'))} "
        f"({each(scores_at_end(run, 'previous_token'))} over all positions); layer 1 at repeated triggers: "
        f"induction score {each(scores_at_end(run, 'induction_at_triggers', 1))} ({seeds_of(run)}).",
        f"Loss on the tokens after a repeated trigger: {each(at_end(run, 'recall_loss'), small)} "
        f"({uniform_guess(run)}).",
    ]
    if all(formed):
        text.append(
            "The pair formed at every seed: layer 0 copies the token before where it matters, layer 1 looks "
            "up what followed the trigger last time."
        )
    elif any(formed):
        text.append(
            f"The pair formed at seeds {which_seeds(run, formed)}, not at "
            f"{which_seeds(run, [not f for f in formed])}, in {run['steps']} steps: whether it forms in time "
            "depends on the seed."
        )
    else:
        text.append(f"No previous-token + induction pair formed in {run['steps']} steps at any seed.")
    return text


TEXT = {
    "previous-token": previous_token_text,
    "tied-qk": tied_text,
    "top-1": top1_text,
    "raw": raw_text,
    "no-scale": no_scale_text,
    "no-scale-sgd": no_scale_text,
    "positional-lookup": positional_text,
    "no-mask": no_mask_text,
    "triggers": triggers_text,
}


def findings(runs: dict) -> dict:
    """What each run showed: for each run with checks (the references have none) its verdict, each check
    held or not at each seed, and sentences quoting its numbers. `runs` maps names to data files' dicts."""
    out = {}
    for name, checks in CHECKS.items():
        run = runs.get(name)
        if run is None or (run["compare"] and run["compare"] not in runs):
            continue
        counted = [
            {"name": c.name, "says": c.says, "claim": c.claim, "held": held(run, runs, c)} for c in checks
        ]
        out[name] = {
            "verdict": verdict(counted),
            "seeds": [r["seed"] for r in run["seeds"]],
            "checks": counted,
            "showed": TEXT[name](run, runs),
        }
    return out


__all__ = ["CHECKS", "Check", "findings", "first_step_below", "held"]
