"""The export's packed payloads (app/packing.py) come back whole in the browser's unpacker (static/unpack.js),
and the exported file carries its later payloads packed."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from app.packing import pack, unpack
from tests.node_batch import NODE

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["", "plain", '{"a": [1, 2.5, "é ∞ </script>"]}', "x" * 100_000, "".join(map(chr, range(32, 3000)))]


def test_pack_and_unpack_are_inverse_and_reproducible():
    for text in TEXTS:
        assert unpack(pack(text)) == text
        assert pack(text) == pack(text)  # no timestamp inside: the export is byte-for-byte reproducible


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_browsers_unpacker_reads_what_python_packed():
    program = (
        "const U = require(process.argv[1]); let input = '';"
        "process.stdin.on('data', (d) => input += d);"
        "process.stdin.on('end', async () => {"
        " const out = await Promise.all(JSON.parse(input).map((p) => U.text(p)));"
        " process.stdout.write(JSON.stringify(out)); });"
    )
    done = subprocess.run(
        [NODE, "-e", program, str(ROOT / "static" / "unpack.js")],
        input=json.dumps([pack(t) for t in TEXTS]),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout) == TEXTS


def test_the_export_packs_the_lab_and_the_tabs(tmp_path):
    from app.export_explorers import ITEMS, explorer_tabs
    from app.export_lab import lab_section
    from widgets.lab_data import lab_json

    section = lab_section()
    data = re.search(r'id="training-lab-data">([^<]*)</script>', section).group(1)
    assert unpack(data) == lab_json()
    scripts = explorer_tabs().scripts
    packed = json.loads(re.search(rf'id="{ITEMS}">(.*?)</script>', scripts, flags=re.S).group(1))
    assert {name: json.loads(unpack(p))["root_id"] is not None for name, p in packed.items()} == {
        name: True for name in packed
    }
