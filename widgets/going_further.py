"""The words of the "Going further" tabs, in one place for the served page and the static export.

app/served_page.py shows them as Panel tabs; app/export_explorers.py as the
export's tab strip (MORE_INTRO's **bold** becomes <b>).
"""

TAB_TITLE = "Going further"
SATURATION_TITLE = "Why ÷√d"
COST_TITLE = "Long-context cost"
TILES_TITLE = "In tiles"  # short: five tab titles fit a 390 px phone
LAB_TITLE = "Training lab"

MORE_INTRO = (
    "Four more explorers: **Why ÷√d** shows how raw dot products spread out as the head "
    "width d grows, and what dividing by √d does to the weights and their gradient; **Long-context cost** "
    "works out how the score matrix grows with the context length; **In tiles** computes the "
    "query's row of the head above a tile of keys at a time, as FlashAttention does; the **Training lab** "
    "shows heads that tiny models grew in training, and what happened when a piece of the head was taken "
    "away."
)
