"""Executable models of each operator's phase-1 checks (spec section B), one module per op.

Every module exposes `MODEL`, a `golden._phase1.Phase1Model` whose rules are the op's section-B
checks in the spec's code order, written from `shared/spec` alone: an implementation independent
of the software CANN, so that the two can disagree. The op's golden sets it as `INFO.model`.
`_checks` holds the rule shapes several ops share (NULL pointers, dtype lists per SoC family,
formats, ranks, list lengths, the empty-input early return). Models are pure Python: they import
nothing of torch, the harness or the software CANN, and answer every Call without raising.
"""
