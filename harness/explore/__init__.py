"""Exploration: property-based search for the library bugs no case names (`./run explore`).

Hypothesis draws configurations of each op from what the op declares (its case file's valid groups,
invalid scenarios and signature, its golden's generator and phase-1 model: facts.py, strategies.py,
defects.py), each example
becomes a real Case (example.py) that the op's model or golden judges (oracle.py), runs in the
suite's case workers with its journal and records (session.py), and every disagreement is shrunk
to a minimal case (search.py) and written as a case-file group, a repro line and a C reproducer
(emit.py). reach.py says how far the search got; summary.py writes explore.json and explore.md.
"""
