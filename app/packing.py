"""Payloads the export reads later, stored gzip-compressed (base64) instead of as plain JSON.

The exported file carries two large payloads that nothing needs before the reader asks: the explorer
tabs' Bokeh documents (made when a tab first opens) and the training lab's runs (drawn once the head is
whole). As JSON they were a fifth of the file; compressed they are an eighth of that. The page unpacks
them with the browser's own DecompressionStream (static/unpack.js), so no code of ours inflates and
nothing is fetched. `mtime=0` keeps the export byte-for-byte reproducible.
"""

from __future__ import annotations

import base64
import gzip

UNPACK_JS = "unpack.js"  # in static/: Unpack.text / Unpack.json, the browser's side of `pack`


def pack(text: str) -> str:
    """`text` as base64 of its gzip (what static/unpack.js Unpack.text turns back into `text`)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def unpack(packed: str) -> str:
    """The inverse of `pack` (for tests and tools that read an exported file)."""
    return gzip.decompress(base64.b64decode(packed)).decode("utf-8")
