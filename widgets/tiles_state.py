"""The "Attention in tiles" view's settings: the tile size and how many tiles are done so far.

The head itself is the explorer's (a HeadState): this view reads the head on screen and its query's
row.  `apply(settings, action)` is the pure rule static/tiles.js repeats (tests/test_tiles.py holds the
two equal): the tile size comes from a slider (1 to T), "Next tile" does one more, "Start again" none.
A new tile size starts again; a new head keeps both, shown within what that head allows (`settle`).
"""

from __future__ import annotations

import math

import param

from core.tiles import AGREEMENT

DEFAULT_SIZE = 2
ACTIONS = ("size", "next", "again")


def settle(size: int, step: int, T: int) -> tuple[int, int, int]:
    """The tile size, the tiles done and the number of tiles for a head of T tokens: the size at most T,
    the tiles done at most all of them."""
    size = min(max(int(size), 1), T)
    count = math.ceil(T / size)
    return size, min(max(int(step), 0), count), count


def apply(settings: dict, action: dict, T: int) -> dict:
    """The settings after one action ({"do": "size", "value"}, {"do": "next"}, {"do": "again"})."""
    size, step, count = settle(settings["size"], settings["step"], T)
    do = action["do"]
    if do == "size":
        return {"size": settle(action["value"], 0, T)[0], "step": 0}
    if do == "next":
        return {"size": settings["size"], "step": min(step + 1, count)}
    if do == "again":
        return {"size": settings["size"], "step": 0}
    raise ValueError(f"unknown action {do!r}")


class TilesSettings(param.Parameterized):
    """The tile size and the tiles done; no GUI."""

    size = param.Integer(default=DEFAULT_SIZE, bounds=(1, None), doc="Keys per tile")
    step = param.Integer(default=0, bounds=(0, None), doc="Tiles computed so far")

    def act(self, action: dict, T: int) -> None:
        self.param.update(**apply({"size": self.size, "step": self.step}, action, T))


def js_config(settings: TilesSettings | None = None) -> dict:
    """What static/tiles.js needs to know, from the one place each fact is declared."""
    s = settings or TilesSettings()
    return {"agreement": AGREEMENT, "start": {"size": s.size, "step": s.step}}
