"""core/one_head_by_hand.py run as the reader would run it: in a subprocess (`python -m` and by its path,
and the refusals, whose status and stderr are the process's own), the rest through its `main` in this
process with stdout and stderr caught (the same text, without a Python start-up for each)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.one_head_by_hand import main
from core.presets import PRESETS

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

CHAPTER_BLOCK = """\
weights (softmax per row) =
[[1.    0.    0.    0.   ]
 [0.007 0.993 0.    0.   ]
 [0.164 0.164 0.673 0.   ]
 [0.127 0.559 0.136 0.178]]
output = weights · V =
[[1.    0.   ]
 [0.007 0.993]
 [0.5   0.5  ]
 [0.23  0.681]]
"""


def run(*args: str, module: bool = True, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    target = ["-m", "core.one_head_by_hand"] if module else [str(ROOT / "core" / "one_head_by_hand.py")]
    return subprocess.run(
        [PYTHON, *target, *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", timeout=60,
    )


def ok(*args: str) -> str:
    status, out, err = run_in_process(list(args))
    assert status == 0, err
    assert err == ""
    return out


def matrices(stdout: str) -> tuple[np.ndarray, np.ndarray]:
    """Read back the two printed matrices (weights, output)."""
    block = stdout.split("\n\n")[0].splitlines()
    cut = block.index("output = weights · V =")

    def parse(lines):
        return np.array([[float(v) for v in ln.replace("[", " ").replace("]", " ").split()] for ln in lines])

    return parse(block[1:cut]), parse(block[cut + 1:])


# --- the chapter's block, to the character -----------------------------------


@pytest.mark.parametrize("module", [True, False], ids=["python -m", "python path"])
def test_default_output_is_the_chapters_block(module):
    r = run(module=module)
    assert r.returncode == 0
    assert r.stderr == ""
    assert r.stdout == CHAPTER_BLOCK


def test_the_script_runs_from_anywhere(tmp_path):
    r = run(module=False, cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, CHAPTER_BLOCK)


def test_explicit_chapter_preset_and_softmax_change_nothing():
    assert ok("--preset", "chapter", "--normaliser", "softmax", "--x-scale", "1") == CHAPTER_BLOCK


# --- each flag ---------------------------------------------------------------


def test_trace_uses_the_presets_query():
    out = ok("--trace")
    assert out.startswith(CHAPTER_BLOCK + "\n")
    assert "q_it · k_j = [0.30, 2.40, 0.40, 0.78]" in out
    assert "exp → [1.24, 5.46, 1.33, 1.74], sum 9.76" in out
    assert out.rstrip().endswith("= [0.23, 0.68]")


@pytest.mark.parametrize("token", ["cat", "1"])
def test_query_by_label_or_index(token):
    out = ok("--query", token, "--trace")
    assert "q_cat = x_cat·W_Q = [2.00, 0.00]" in out
    assert "'sat', 'it' come later: set to −∞" in out
    assert ok("--query", token) == out  # --query alone implies --trace


def test_exercise_1_by_flags():
    out = ok("--x", "it=0,0,1", "--query", "it", "--trace")
    W, O = matrices(out)
    assert W[3].tolist() == [0.098, 0.098, 0.402, 0.402]
    assert O[3].tolist() == [0.5, 0.5]
    for expected in (
        "q_it = x_it·W_Q = [0.00, 1.00]",
        "it [0.00, 2.00]",  # k_it = k_sat
        "q_it · k_j = [0.00, 0.00, 2.00, 2.00]",
        "divide by √2 = 1.414: [0.00, 0.00, 1.41, 1.41]",
        "exp → [1.00, 1.00, 4.11, 4.11], sum 10.23",
        "weights = [0.10, 0.10, 0.40, 0.40]",
        "= [0.50, 0.50]",
    ):
        assert expected in out, expected
    assert ok("--preset", "exercise-1", "--trace") == out


def test_exercise_3_no_scale_and_x_times_4_is_nearly_one_hot():
    out = ok("--no-scale", "--x-scale", "4")
    W, O = matrices(out)
    assert W.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]  # at 3 decimals
    assert O.tolist() == [[4, 0], [0, 4], [2, 2], [0, 4]]  # the values are 4 times larger too
    assert ok("--preset", "exercise-3-unscaled") == out


def test_x_is_repeatable_and_takes_an_index():
    W, _ = matrices(ok("--x", "0=0,1,0", "--x", "it=0,1,0"))
    W_one, _ = matrices(ok("--x", "it=0,1,0"))
    assert not np.array_equal(W, W_one)
    # 'The' now looks like 'cat', so 'cat' splits its attention evenly between the two
    assert W[1].tolist() == [0.5, 0.5, 0.0, 0.0]


def test_no_scale():
    W, _ = matrices(ok("--no-scale"))
    assert W[3].tolist() == [0.084, 0.687, 0.093, 0.136]
    assert "scaling is off" in ok("--no-scale", "--trace")


def test_no_mask_lets_the_future_in():
    W, _ = matrices(ok("--no-mask"))
    assert W[np.triu_indices(4, k=1)].min() > 0
    assert "the mask is off" in ok("--no-mask", "--query", "The")


def test_tied_qk():
    out = ok("--tied-qk", "--query", "cat")
    W, _ = matrices(out)
    assert int(np.argmax(W[1])) == 1
    assert "keys   The [0.00, 1.00]  cat [2.00, 0.00]" in out


@pytest.mark.parametrize(
    "normaliser, title", [("raw", "weights (raw scores per row) ="), ("top1", "weights (top-1 per row) =")]
)
def test_normaliser_says_so_in_the_title(normaliser, title):
    out = ok("--normaliser", normaliser)
    assert out.splitlines()[0] == title
    W, _ = matrices(out)
    if normaliser == "top1":
        assert W.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    else:
        assert W[3].tolist() == [0.212, 1.697, 0.283, 0.552]
        assert W[0].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_preset_options_apply_and_flags_override():
    assert ok("--preset", "no-softmax").splitlines()[0] == "weights (raw scores per row) ="
    assert ok("--preset", "top-1", "--normaliser", "softmax") == CHAPTER_BLOCK


@pytest.mark.parametrize("preset, referent", [("tired", "cat"), ("soft", "mat")])
def test_sentence_presets(preset, referent):
    tokens = ("The", "cat", "sat", "on", "the", "mat", "because", "it", "was")
    out = ok("--preset", preset, "--trace")
    W, O = matrices(out)
    assert W.shape == (10, 10) and O.shape == (10, 2)
    assert int(np.argmax(W[9])) == tokens.index(referent)  # the adjective, last, reads back to its noun
    assert np.triu(W, k=1).max() == 0  # with the mask on
    assert f"step 1 project  q_{preset}" in out
    W, _ = matrices(ok("--preset", f"{preset}-trace", "--trace"))
    assert int(np.argmax(W[7])) == tokens.index(referent)  # the thought experiment: "it", the mask off


def test_help():
    out = ok("--help")
    for flag in ("--preset", "--query", "--trace", "--x", "--no-scale", "--no-mask", "--x-scale", "--tied-qk",
                 "--normaliser"):
        assert flag in out


# --- bad input: status 2, one line, no traceback -----------------------------


@pytest.mark.parametrize(
    "args, says",
    [
        (["--x", "dog=1,2,3"], "unknown token 'dog'"),
        (["--x", "it=1,2"], "gives 2 values; expected 3"),
        (["--x", "it=1,2,3,4"], "gives 4 values; expected 3"),
        (["--x", "it=a,b,c"], "must be numbers"),
        (["--x", "it=1,,3"], "must be numbers"),
        (["--x", "it=nan,0,0"], "finite"),
        (["--x", "it=0,inf,0"], "finite"),
        (["--x", "it=0,0,-inf"], "finite"),
        (["--x", "it=1e400,0,0"], "finite"),
        (["--x", "it=1e300,0,0"], "X[3, 0] is 1e+300"),
        (["--x", "it"], "TOKEN=a,b,c"),
        (["--x", "9=1,2,3"], "unknown token '9'"),
        (["--query", "dog"], "unknown token 'dog'"),
        (["--query", "4", "--trace"], "unknown token '4'"),
        (["--query", "-1"], "unknown token '-1'"),
        (["--preset", "nope"], "unknown preset 'nope'"),
        (["--preset", "tired", "--x", "it=1,2,3"], "expected 4"),
        (["--x-scale", "abc"], "--x-scale"),
        (["--x-scale", "nan"], "x_scale is nan"),
        (["--x-scale", "inf"], "x_scale is inf"),
        (["--x-scale", "1e200"], "x_scale is 1e+200"),
        (["--x", "it=1e100,1e100,1e100", "--x-scale", "1e100"], "overflow"),
        # issue 27: only ÷τ overflows here; the softmax would have read +∞ as a masked score (row 0 all zeros)
        (["--x", "0=1e53,1e53,1e53", "--x-scale", "1e100", "--temperature", "0.05"], "infinity once"),
        (["--x", "0=1e53,1e53,1e53", "--x-scale", "1e100", "--temperature", "0.05", "--query", "0"], "τ = 0"),
        (["--normaliser", "max"], "invalid choice"),
        (["--bogus"], "unrecognized arguments"),
        (["--x"], "expected one argument"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, says):
    r = run(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n"), r.stderr
    assert "error" in r.stderr and says in r.stderr


def test_bad_input_in_script_form_too():
    r = run("--x", "it=nan,0,0", module=False)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


# --- fuzzing: whatever the flags, a head or one line of the command's own words ----------------

NUMBER_TEXTS = ("0", "1", "-2.5", "0.3", "3e52", "1e53", "-1e53", "3e53", "1e100", "1e101", "1e308", "1e400",
                "1e-320", "nan", "inf", "-inf", "abc", "", " 1 ", "1_0", "0x10", "−1", "1e", "٣")
TOKEN_TEXTS = ("The", "cat", "it", "tired", "mat", "0", "3", "9", "-1", "", "é", "it=1")
FLAG_VALUES = {
    "--preset": (*PRESETS, "nope", ""),
    "--query": TOKEN_TEXTS,
    "--x-scale": ("1", "4", "1e100", "-1e100", "0", "1e-300", *NUMBER_TEXTS),
    "--temperature": ("0.05", "0.049", "5", "5.01", "1", "0.3", *NUMBER_TEXTS),
    "--normaliser": ("softmax", "raw", "top1", "max", ""),
}
x_spec = st.builds(
    lambda token, eq, values: f"{token}{eq}{','.join(values)}",
    st.sampled_from(TOKEN_TEXTS), st.sampled_from(("=", "=", "=", ":", "")),
    st.lists(st.sampled_from(NUMBER_TEXTS), max_size=5),
)
flag = st.one_of(
    *(st.tuples(st.just(name), st.sampled_from(values)) for name, values in FLAG_VALUES.items()),
    st.tuples(st.just("--x"), x_spec),
    st.sampled_from((("--x-scale", "1e100"), ("--temperature", "0.05"), ("--temperature", "0.1"))),
    st.sampled_from((("--no-scale",), ("--no-mask",), ("--tied-qk",), ("--trace",), ("--bogus",), ("--x",))),
)
# Markers of an exception's own text (numpy's, Python's) rather than this command's words.
RAW = ("Traceback", "zero-size", "could not convert", "invalid literal", "object has no attribute", "index ",
       "numpy", "array", "NoneType", "overflow encountered", "KeyError", "please report")


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
    return status or 0, out.getvalue(), err.getvalue()


@settings(max_examples=400, deadline=None)
@given(st.lists(flag, max_size=6))
def test_any_flags_give_a_head_or_one_line_of_the_commands_own_words(flags):
    argv = [part for f in flags for part in f]
    status, out, err = run_in_process(argv)
    assert status in (0, 2), (argv, status, err)
    if status == 0:
        assert err == "" and out.startswith("weights (") and "nan" not in out and "inf" not in out, argv
        if out.startswith("weights (softmax") or out.startswith("weights (top-1"):  # every row a distribution
            W, _ = matrices(out)
            assert np.all(np.abs(W.sum(axis=1) - 1) <= 0.0005 * W.shape[1] + 1e-9), (argv, W)
    else:
        assert out == "" and err.count("\n") == 1 and "error:" in err, (argv, err)
        assert not any(marker in err for marker in RAW), (argv, err)


def test_an_unexpected_failure_is_still_one_line(monkeypatch):
    """A bug in the command (here planted) is reported in one line with status 1, never as a traceback."""
    import core.one_head_by_hand as cli

    def broken(*args, **kwargs):
        raise ValueError("zero-size array to reduction operation maximum which has no identity")

    monkeypatch.setattr(cli, "trace", broken)
    status, out, err = run_in_process(["--trace"])
    assert status == 1 and err.count("\n") == 1 and "zero-size" not in err and "please report" in err
