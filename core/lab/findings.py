"""What each shipped run showed, as sentences built from its own numbers, and the verdict on its claim.

Nothing here is typed in: every number in a sentence, and every verdict, is computed from the runs' data
files (core/lab/store.py), so the lab's text changes when the runs do.
"""

from __future__ import annotations

import math

import numpy as np

from core.lab.encoding import snapshot_head, unf16


def first_step_below(data: dict, level: float):
    """The first step at which the (window-averaged) training loss is below `level`, or None."""
    for step, loss in zip(data["curve"]["step"], data["curve"]["loss"]):
        if loss < level:
            return step
    return None


def small(x: float) -> str:
    """A loss or ratio in a sentence: three decimals, or two significant figures below 0.01 (not "0.000")."""
    if x >= 0.01 or x <= 0:
        return f"{x:.3f}"
    return f"{x:.{1 - math.floor(math.log10(x))}f}"


def findings(runs: dict) -> dict:
    """What each run showed, as sentences built from its numbers, and whether the claim held at this size.

    `runs` maps names to the dicts `to_json` writes. Verdicts: "reproduced", "partly", "not reproduced".
    """
    out = {}

    def last(name):
        return runs[name]["evals"][-1]

    def tail_loss(name):
        return float(np.mean(runs[name]["curve"]["loss"][-5:]))

    if "previous-token" in runs:
        r, e = runs["previous-token"], last("previous-token")
        p = e["scores"][0]["previous_token"]
        seeds = [s["scores"][0]["previous_token"] for s in r.get("seeds", [])]
        out["previous-token"] = (
            "reproduced" if p >= 0.9 else "not reproduced",
            [
                f"After {r['steps']} steps the head puts {p:.2f} of its weight on the token just before "
                f"(previous-token score; {', '.join(f'{v:.2f}' for v in seeds)} over seeds 0, 1, 2), and the "
                f"held-out loss is {e['eval_loss']:.3f} (a uniform guess: ln {r['shape']['V']} = "
                f"{math.log(r['shape']['V']):.2f})."
            ],
        )
    if "tied-qk" in runs and "previous-token" in runs:
        r = runs["tied-qk"]
        full = [s["scores"][0]["previous_token"] for s in runs["previous-token"]["seeds"]]
        tied = [s["scores"][0]["previous_token"] for s in r["seeds"]]
        ratios = [t / f for t, f in zip(tied, full)]
        losses = [s["eval_loss"] for s in r["seeds"]]
        out["tied-qk"] = (
            "reproduced" if max(ratios) <= 0.8 else "partly" if min(ratios) <= 0.8 else "not reproduced",
            [
                f"Previous-token score with W_K = W_Q: {', '.join(f'{v:.2f}' for v in tied)} against "
                f"{', '.join(f'{v:.2f}' for v in full)} with separate matrices (seeds 0, 1, 2; ratio "
                f"{min(ratios):.2f}–{max(ratios):.2f}).",
                f"Held-out losses of the tied head: {', '.join(f'{v:.3f}' for v in losses)}: the rest of the "
                "model still solves the task, the head just cannot make i−1 its clear favourite.",
            ],
        )
    if "no-scale" in runs and "wide-scaled" in runs:
        n, w = runs["no-scale"], runs["wide-scaled"]
        sat = {
            k: float(np.mean(np.max(unf16(runs[k]["snapshots"][0]["maps"]["0"]), axis=-1)))
            for k in ("no-scale", "wide-scaled")
        }
        s_n, s_w = first_step_below(n, 1.0), first_step_below(w, 1.0)
        t_n, t_w = first_step_below(n, 0.1), first_step_below(w, 0.1)
        slower = s_n is not None and s_w is not None and s_n >= 1.5 * s_w
        learns = last("no-scale")["eval_loss"] < 0.1
        out["no-scale"] = (
            "partly" if slower and learns else "reproduced" if not learns else "not reproduced",
            [
                f"At initialisation (d = {n['shape']['d']}) the largest weight in a row averages "
                f"{sat['no-scale']:.2f} without ÷√d and {sat['wide-scaled']:.2f} with it (on the probe).",
                f"Training loss first below 1.0 at step {s_n} without ÷√d, {s_w} with it; below 0.1 at "
                f"{t_n} and {t_w}.",
                f"Final held-out loss {small(last('no-scale')['eval_loss'])} against "
                f"{small(last('wide-scaled')['eval_loss'])}: slower, "
                + (
                    "but it does learn: 'barely learns' does not hold at this size."
                    if learns
                    else "and it does not recover."
                ),
            ],
        )
    if "top-1" in runs:
        r, e = runs["top-1"], last("top-1")
        lnV = math.log(r["shape"]["V"])
        out["top-1"] = (
            "reproduced" if e["eval_loss"] > 0.8 * lnV else "not reproduced",
            [
                f"Held-out loss {e['eval_loss']:.3f} after {r['steps']} steps, against ln "
                f"{r['shape']['V']} = "
                f"{lnV:.2f} for a uniform guess and {last('previous-token')['eval_loss']:.3f} for the "
                "softmax head; "
                f"previous-token score {e['scores'][0]['previous_token']:.2f}."
            ],
        )
    if "raw" in runs:
        r, e = runs["raw"], last("raw")
        A = snapshot_head(r["snapshots"][-1], r["switches"]).weights
        sums = A.sum(axis=-1)
        out["raw"] = (
            "reproduced" if (np.abs(sums - 1) > 0.1).any() else "not reproduced",
            [
                f"Held-out loss {e['eval_loss']:.3f} (softmax head: "
                f"{last('previous-token')['eval_loss']:.3f}, "
                f"uniform guess {math.log(r['shape']['V']):.2f}): "
                + (
                    "raw weights learned this task too."
                    if e["eval_loss"] < 0.5 * math.log(r["shape"]["V"])
                    else "with raw weights this model did not learn the task."
                ),
                f"On the probe the learned weights run from {A.min():.2f} to {A.max():.2f} and the rows "
                "sum to "
                f"{sums.min():.2f}…{sums.max():.2f}, not 1: each output is a scaled combination of values, "
                "not "
                f"an average (mean weight on i−1: {e['scores'][0]['previous_token']:.2f}).",
            ],
        )
    if "induction" in runs:
        r, e = runs["induction"], last("induction")
        s0, s1 = e["scores"]
        ok = s1["induction"] >= 0.7 and e["repeat_loss"] < 0.5 * e["first_half_loss"]
        positional = s1["positional"] > 0.5
        out["induction"] = (
            ("partly" if positional else "reproduced") if ok else "not reproduced",
            [
                f"Layer 1's induction score is {s1['induction']:.2f}; the loss on the repeated half is "
                f"{e['repeat_loss']:.3f} against {e['first_half_loss']:.3f} on the first half.",
                f"Layer 0: previous-token score {s0['previous_token']:.2f}, duplicate-token score "
                f"{s0['duplicate_token']:.2f}, induction score {s0['induction']:.2f}.",
                f"On sequences that do not repeat, layer 1 still puts {s1['positional']:.2f} on position "
                f"i − {r['shape']['T'] // 2 - 1} (layer 0: {s0['positional']:.2f}): "
                + (
                    "layer 1 finds the spot by position, a positional look-up (the halves always have the "
                    "same "
                    "length), not the textbook previous-token + induction pair."
                    if positional
                    else "it matches tokens, not positions."
                ),
            ],
        )
    if "no-mask" in runs and "induction" in runs:
        e, ei = last("no-mask"), last("induction")
        lt, li = tail_loss("no-mask"), tail_loss("induction")
        ok = lt < 0.2 * li and e["honest_loss"] > ei["eval_loss"]
        out["no-mask"] = (
            "reproduced" if ok else "not reproduced",
            [
                f"Training loss {small(lt)} against {small(li)} for the masked model ({small(lt / li)}×).",
                "Generating one token at a time, so nothing ahead exists, its loss is "
                f"{e['honest_loss']:.2f}, "
                f"against {ei['eval_loss']:.3f} for the masked model and ln "
                f"{runs['no-mask']['shape']['V']} = "
                f"{math.log(runs['no-mask']['shape']['V']):.2f} for a uniform guess.",
            ],
        )
    if "triggers" in runs:
        r, e = runs["triggers"], last("triggers")
        s0, s1 = e["scores"]
        formed = s0["previous_token_after_triggers"] > 0.5 and s1["induction_at_triggers"] > 0.5
        out["triggers"] = (
            "reproduced" if formed else "not reproduced",
            [
                f"Layer 0: previous-token score {s0['previous_token']:.2f} over all positions, "
                f"{s0['previous_token_after_triggers']:.2f} on the tokens right after a trigger (where the "
                f"textbook circuit needs it), duplicate-token {s0['duplicate_token']:.2f}; layer 1: "
                f"induction score {s1['induction']:.2f} over every "
                f"repeated token, {s1['induction_at_triggers']:.2f} at repeated triggers.",
                f"Loss on the tokens after a repeated trigger: {e['recall_loss']:.2f} (ln "
                f"{r['shape']['V']} = "
                f"{math.log(r['shape']['V']):.2f}), over {e['recall_positions']} such positions.",
                "The textbook pair formed: layer 0 copies the previous token where it matters, layer 1 "
                "looks up what followed the trigger last time."
                if formed
                else f"No previous-token + induction pair formed in {r['steps']} steps at this size.",
            ],
        )
    return {k: {"verdict": v[0], "showed": v[1]} for k, v in out.items()}
