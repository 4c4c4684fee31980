"""The words of the "Going further" tabs, in one place for the served page and the static export.

app/served_page.py shows them as Panel tabs; app/export_explorers.py as the
export's tab strip (MORE_INTRO's **bold** becomes <b>).
"""

TAB_TITLE = "Going further"
SATURATION_TITLE = "Why ÷√d"
COST_TITLE = "Long-context cost"

MORE_INTRO = (
    "Two more explorers, one tab each: **Why ÷√d** shows how raw dot products spread out as the head "
    "width d grows, and what dividing by √d does to the weights; **Long-context cost** works out how the "
    "scores matrix grows with the context length."
)
