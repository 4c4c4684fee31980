"""An older BokehJS (3.4.3) for the tests that put the explorer beside another Bokeh on one page.

`bash setup.sh` runs this module once: it downloads Bokeh 3.4.3's wheel from PyPI with pip and keeps only
the two scripts a chapter would load for a figure of its own (bokeh.min.js and bokeh-api.min.js), in the
git-ignored folder tests/.old-bokehjs/. Tests call `old_bokehjs()`, which fetches them the same way if
setup.sh has not.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSION = "3.4.3"
FOLDER = Path(__file__).resolve().parent / ".old-bokehjs" / VERSION
SCRIPTS = ("bokeh.min.js", "bokeh-api.min.js")


def old_bokehjs() -> Path:
    """The folder holding BokehJS VERSION's scripts, fetched from PyPI the first time."""
    if all((FOLDER / name).exists() for name in SCRIPTS):
        return FOLDER
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
             f"bokeh=={VERSION}", "-d", tmp],
            check=True,
        )
        wheel = next(Path(tmp).glob(f"bokeh-{VERSION}-*.whl"))
        FOLDER.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as whl:
            for name in SCRIPTS:
                (FOLDER / name).write_bytes(whl.read(f"bokeh/server/static/js/{name}"))
    return FOLDER


if __name__ == "__main__":
    print(f"old BokehJS in {old_bokehjs()}")
