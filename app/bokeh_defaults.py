"""Bokeh's property defaults, worked out once per model class instead of on every read.

Bokeh re-derives a property's default each time an unset property is read (copy, theme lookup, validate,
transform: `Property.themed_default`) and asks again each time whether that default is "unstable" (a
list, dict or model that each instance must own), and looks for a theme by raising and catching an
AttributeError. For a student's page (~350 models, ~30 properties each) that was most of serialising the
document for its pull and a quarter of building it: with these caches the pull costs ~60 % less and the
build ~25 % less (cProfile and process time, bench/RESULTS-class-load.md).

`cache_stable_defaults()` remembers both answers per (model class, property) for the defaults that
are plain immutable values (None, bools, numbers, strings, and tuples of them) and not overridden by a
theme, and reads the theme from the model's own __dict__; everything else (containers, models,
functions, themed values) still goes through Bokeh's own code, so every read returns an equal value and
each instance still owns its mutable defaults (tests/test_bokeh_defaults.py).
"""

from __future__ import annotations

_IMMUTABLE = (type(None), bool, int, float, str)
_originals: dict = {}  # Bokeh's own functions, while the caches are installed


def _immutable(value) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return type(value) in _IMMUTABLE or isinstance(value, str)  # str: also an enum's value


def cache_stable_defaults() -> None:
    """Install the caches (once per process; idempotent)."""
    from bokeh.core.has_props import HasProps
    from bokeh.core.property.bases import Property
    from bokeh.core.property.descriptors import PropertyDescriptor

    if _originals:
        return
    _originals.update(
        themed_default=Property.themed_default,
        has_unstable_default=PropertyDescriptor.has_unstable_default,
        themed_values=HasProps.themed_values,
    )
    themed_default = Property.themed_default
    has_unstable_default = PropertyDescriptor.has_unstable_default
    defaults: dict = {}  # (model class, property name) -> the prepared default
    unstable: dict = {}  # (model class, property name) -> whether each instance must own its default

    def cached_themed_default(self, cls, name, theme_overrides, *, no_eval=False):
        if no_eval or (theme_overrides is not None and name in theme_overrides):
            return themed_default(self, cls, name, theme_overrides, no_eval=no_eval)
        try:
            return defaults[cls, name]
        except KeyError:
            value = themed_default(self, cls, name, theme_overrides)
            if _immutable(value):
                defaults[cls, name] = value
            return value

    def cached_has_unstable_default(self, obj) -> bool:
        key = (type(obj), self.name)
        try:
            return unstable[key]
        except KeyError:
            answer = unstable[key] = has_unstable_default(self, obj)
            return answer

    def themed_values(self):
        # as HasProps.themed_values, without raising and catching an AttributeError on every read of
        # an unthemed model (apply_theme keeps the values in the instance's __dict__)
        return self.__dict__.get("__themed_values__")

    HasProps.themed_values = themed_values
    Property.themed_default = cached_themed_default
    PropertyDescriptor.has_unstable_default = cached_has_unstable_default


def remove_cache() -> None:
    """Bokeh's own code again (for tests that compare the two)."""
    from bokeh.core.has_props import HasProps
    from bokeh.core.property.bases import Property
    from bokeh.core.property.descriptors import PropertyDescriptor

    if _originals:
        HasProps.themed_values = _originals.pop("themed_values")
        Property.themed_default = _originals.pop("themed_default")
        PropertyDescriptor.has_unstable_default = _originals.pop("has_unstable_default")
