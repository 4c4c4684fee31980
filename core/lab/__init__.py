"""The training lab around the model in core/train.py: what it is trained on, and what it showed.

    tasks.py      the tasks' data (token sequences and next-token targets)
    scores.py     what a head does, as numbers (previous-token, induction, ...)
    runs.py       the shipped runs, declared once; training a run from a seed, evaluating it
    encoding.py   how numbers and matrices are written into the data files
    store.py      the data files in static/lab/
    findings.py   what each run showed, in sentences built from its numbers, and the verdicts
    cli.py        `python -m core.train` (RUN, or --all)
"""
