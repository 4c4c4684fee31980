"""The long-context cost explorer's settings: a model shape, a context length, a GPU.

`CostSettings` holds what the user chose (a model shape, a GPU, the tile size
B of attention computed in tiles) and the `LongContextCost` it gives.
It imports no Panel or Bokeh, so it runs headless in tests and scripts, and
static/cost.js repeats its checks word for word for the static page.  The
defaults are the chapter's case (Llama 3.1 8B at 128,000 tokens: d = 128, 32
query heads, 2 bytes a number).  A change the core refuses leaves every
input as it was and says why in `message` (widgets/refusal.py).
"""

from __future__ import annotations

import dataclasses

import param

from core.attention import AttentionError
from core.cost import (
    CHAPTER_GPU_MEMORY_GB,
    DEFAULT_TILE,
    GPU_MEMORY_GB,
    GPU_PARTS_GB,
    LARGEST,
    LARGEST_ELEMENT_BYTES,
    LARGEST_TILE,
    PRESETS,
    CostInputs,
    as_count,
    as_finite,
    long_context_cost,
)
from core.notes import CHAPTER_CONTEXT
from widgets.refusal import REFUSED, Refusing

DEFAULT_PRESET = "Llama 3.1 8B (128k)"
CUSTOM = "custom"
MAX_T = 1_000_000  # this explorer's context limit (the core allows more)
SHAPE = ("T", "d", "heads", "kv_heads", "layers", "C", "element_bytes")
INPUTS = (*SHAPE, "gpu_gb", "tile")


def check_gpu(value) -> float:
    """One GPU's memory in GB, within the range of data-centre GPUs on sale today (GPU_MEMORY_GB)."""
    x = as_finite("GPU memory", value)
    low, high = GPU_MEMORY_GB
    if not low <= x <= high:
        raise AttentionError(f"GPU memory is {x:g} GB; GPUs on sale today hold {low} to {high} GB")
    return x


def check_shape(values: dict) -> CostInputs:
    """A CostInputs from the shape fields, with the explorer's own limit on T."""
    T = as_count("T", values["T"], MAX_T)
    return CostInputs(**{**{name: values[name] for name in SHAPE}, "T": T})


def preset_name(shape: CostInputs) -> str:
    """The preset this shape is, or CUSTOM."""
    for name, preset in PRESETS.items():
        if preset == shape:
            return name
    return CUSTOM


class CostSettings(Refusing):
    """A model shape, a context length, a GPU, and the cost figures they give; no GUI."""

    preset = param.Selector(default=DEFAULT_PRESET, objects=[*PRESETS, CUSTOM])
    T = param.Integer(default=PRESETS[DEFAULT_PRESET].T, doc="Context length in tokens")
    d = param.Integer(default=PRESETS[DEFAULT_PRESET].d, doc="Head width")
    heads = param.Integer(default=PRESETS[DEFAULT_PRESET].heads, doc="Query heads per layer")
    kv_heads = param.Integer(default=PRESETS[DEFAULT_PRESET].kv_heads, doc="Key/value heads per layer")
    layers = param.Integer(default=PRESETS[DEFAULT_PRESET].layers)
    C = param.Integer(default=PRESETS[DEFAULT_PRESET].C, doc="Model width")
    element_bytes = param.Number(default=PRESETS[DEFAULT_PRESET].element_bytes, doc="Bytes per stored number")
    gpu_gb = param.Number(default=GPU_MEMORY_GB[0], doc="One GPU's memory in GB")
    tile = param.Integer(default=DEFAULT_TILE, doc="Queries and keys a tile holds (attention in tiles)")

    cost = param.Parameter(default=None, constant=True, doc="The LongContextCost of the current inputs")

    def __init__(self, **params):
        named = params.get("preset")
        if named in PRESETS:  # CostSettings(preset=...) starts from that preset; other fields override it
            preset = PRESETS[named]
            params = {**{field: getattr(preset, field) for field in SHAPE}, **params}
        super().__init__(**params)
        values = {name: getattr(self, name) for name in INPUTS}
        check_gpu(values["gpu_gb"])
        as_count("tile", values["tile"], LARGEST_TILE)
        shape = check_shape(values)
        with param.edit_constant(self):
            self.param.update(cost=long_context_cost(shape), preset=preset_name(shape))

    def inputs(self) -> dict:
        """The current inputs by name (what static/cost.js calls the state)."""
        return {name: getattr(self, name) for name in INPUTS}

    def apply(self, **changes) -> bool:
        """Change any inputs together; refuse (and say why) if the core does.  True when taken."""
        unknown = set(changes) - set(INPUTS)
        if unknown:
            raise TypeError(f"not an input of CostSettings: {', '.join(sorted(unknown))}")
        values = {**self.inputs(), **changes}
        try:
            gpu = check_gpu(values["gpu_gb"])
            tile = as_count("tile", values["tile"], LARGEST_TILE)
            shape = check_shape(values)
            cost = long_context_cost(shape)
        except REFUSED as exc:
            return self.refuse(exc)
        fields = {name: getattr(shape, name) for name in SHAPE}
        with param.parameterized.batch_call_watchers(self), param.edit_constant(self):
            self.param.update(**fields, gpu_gb=gpu, tile=tile, preset=preset_name(shape), message="")
            self.cost = cost
        return True

    def load(self, name: str) -> bool:
        """Take a preset's shape (the GPU stays as it is)."""
        if name not in PRESETS:
            return self.refuse(f"there is no preset called '{name}'; try one of {', '.join(PRESETS)}")
        preset = PRESETS[name]
        return self.apply(**{field: getattr(preset, field) for field in SHAPE})


def js_config(settings: CostSettings | None = None) -> dict:
    """What static/cost.js needs to know, from the one place each fact is declared: limits, presets, start."""
    s = settings or CostSettings()
    return {
        "max_T": MAX_T,
        "largest": dict(LARGEST),
        "largest_element_bytes": LARGEST_ELEMENT_BYTES,
        "largest_tile": LARGEST_TILE,
        "gpu_memory_gb": list(GPU_MEMORY_GB),
        # for the footnote (core/notes.py gpu_note)
        "chapter_gpu_memory_gb": list(CHAPTER_GPU_MEMORY_GB),
        "gpu_parts_gb": list(GPU_PARTS_GB),
        "chapter_context": CHAPTER_CONTEXT,
        "presets": {name: dataclasses.asdict(p) for name, p in PRESETS.items()},
        "custom": CUSTOM,
        "start": {"inputs": s.inputs(), "preset": s.preset},
    }
