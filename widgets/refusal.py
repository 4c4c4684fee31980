"""The one way every state refuses bad input, and the one way a page shows why.

`HeadState`, `CostSettings` and `SaturationSettings` all inherit `Refusing`:
a change the core cannot use (NaN, ±inf, text, a number out of range, an
empty box) is not taken, the last good state stays on show, and `message`
says why in a sentence that names the field.  A taken change clears it.
Views put `message_html(state.message)` into a text panel styled by
static/explorer.css (class "alert"); static/cost.js and static/saturation.js
write the same markup in the static page.
"""

from __future__ import annotations

import html

import param

from core.attention import AttentionError

# What a state's checks raise for input it cannot use (anything else is a bug, not the user's input).
REFUSED = (AttentionError, ValueError, TypeError)


class Refusing(param.Parameterized):
    """A state that can refuse a change and say why."""

    message = param.String(default="", doc="Why the last change was refused, or ''")

    def refuse(self, reason) -> bool:
        """Keep every input as it is and say why; False, so `return self.refuse(exc)` reads well."""
        self.message = str(reason)
        return False

    def refuse_empty(self, name: str) -> bool:
        """An emptied number box (its value is None): keep the input `name` and say so."""
        return self.refuse(needs_number(name, f"{getattr(self, name):,}"))


def needs_number(field: str, kept) -> str:
    """What an emptied number box says (a box sends None when it holds no number)."""
    return f"{field} needs a number; kept {kept}."


def failed(exc: BaseException) -> str:
    """What a view says when a change hit a bug: the session goes on with the last good state."""
    return f"That change could not be applied ({type(exc).__name__})."


def message_html(text: str) -> str:
    """The message as page markup: an escaped alert box, or nothing."""
    return f'<div class="alert">{html.escape(text)}</div>' if text else ""
