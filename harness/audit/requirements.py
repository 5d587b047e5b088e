"""What the default tier must hold for every operator, family and dtype it accepts (the coverage
gates of harness/audit/coverage.py, and what harness/audit/scaffold.py writes into a new case file)."""

TILE_ELEMENTS = 256     # a plane larger than this spans more than one kernel tile
AI_CORES = 48           # the AI cores of a 950 / 910B: more planes than this reach every core

# Value classes, each satisfied by any of the named distributions (presets in model/distributions.py).
FLOAT_CLASSES = {
    "ties": ("small_int", "constant"),
    "zeros": ("zeros", "g_zeros"),
    "-0.0": ("neg_zero",),
    "subnormal": ("subnormal", "g_subnormal"),
    "large": ("large",),
    "specials in gradOutput": ("g_specials", "specials", "g_specials_sum_safe"),
    "specials in self": ("x_specials", "specials"),
}
INT_CLASSES = {"ties": ("small_int", "constant"), "zeros": ("zeros", "g_zeros"), "large": ("large", "specials")}
