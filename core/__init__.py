"""One attention head in plain numpy: the computation Chapter 3 walks through.

Nothing here imports Panel or Bokeh, so the command line, the tests, the served widget and the static
export's parity check all share one source.  The package offers the chapter's steps, the head that runs
them all (`attend`, `Head`) and the table of switches (`SWITCHES`, `Options`); the rules that turn scores
into weights are `NORMALISE`, one per choice of the table's "normaliser" switch.
"""

from types import ModuleType as _ModuleType

from core.attention import (  # noqa: F401  (exported: __all__ is made of the names imported here)
    NORMALISE,
    AttentionError,
    Head,
    attend,
    blend,
    causal_mask,
    cool,
    key,
    mask,
    normalise,
    query,
    scale,
    scores,
    softmax,
    value,
)
from core.options import OPTION_NAMES, SWITCHES, Options  # noqa: F401

# Everything imported above, and nothing else (not the submodules): the list is not written twice.
__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, _ModuleType))
