"""What an example must do, before it runs: the op's phase-1 model read on the very call the case
makes, and the Case that holds the library to it.

The Call is built the way the runner builds the backend's arguments (inputs.prepare, mutate,
build_args), so the model sees exactly the descriptors the library will be given. Then:

* model answers UNDEFINED: the spec gives phase 1 no result; never asserted, the example is skipped;
* an example without defects that the model passes: a valid case, judged by the golden under the
  envelope's standard (and its early return, e.g. an empty input, keeps the status-0 promise);
  skipped where the golden has no result for it (a non-empty self with an empty gradOutput: the
  spec leaves gradInput unwritten). A relative standard (MERE/MARE) holds each element to its own
  value, which means nothing where the element is a sum whose terms cancel: whatever order a
  correct kernel adds in (spec C leaves it free), its rounding is relative to the terms, not to
  the tiny sum. The case files pair such standards with same-sign gradients, windows where each
  gradient lands once, or small windows where a few gradients meet; an explored configuration whose
  golden has an element its terms do not bound that way is judged by the standard the case file
  gives its other sums (OpFacts.plain_standard). An example whose gradients (a value class with
  +-FLT_MAX) could sum past the dtype's largest value, or cancel to a much smaller result, has no
  order-independent result: skipped; so is one whose golden is past the resolution of the
  standard's absolute cap (beyond_resolution);
* a refusal (status != 0): an invalid case expecting that status, raised by that check;
* defects that end in an early successful return (status 0 at a check): an invalid case whose
  status-0 promise is held (phase 2 and sync succeed, workspace 0, nothing launched);
* defects that pass every check: what the kernel does with a call no valid configuration makes is
  undefined (spec B.2 "kernel-level", policy 2): skipped.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import torch

import golden
from golden._phase1 import UNDEFINED, Phase1

from .. import inputs
from ..core import dtypes
from ..judge import compare, sums
from ..judge.phase1_model import call_of
from ..model import Case
from .example import Example, invalid_case, valid_case
from .facts import RELATIVE_STANDARDS

MAX_ELEMENTS = 1_500_000      # all prepared tensors of one example together (a few hundred thousand each)
# A relative standard judges an element whose terms' magnitudes sum to at most this many times its
# own (|g| + 1e-7): a correct fp32 sum of n terms in any order is then within n * 2^-24 * 4 of it,
# under MERE/MARE's fp32 limit (10 * 2^-13) for any n below 5,000
CONDITION_LIMIT = 4.0
RE_EPS = 1e-7
# What a correct fp32 sum in a free order may be off by, in ulps of its terms' magnitudes (a few
# dozen terms: about their square root, times 1/2, with room; see beyond_resolution)
RESOLUTION_ULPS = 8


@dataclass
class Plan:
    example: Example
    case: Case | None           # None: skipped (see `skip`)
    answer: Phase1 | None       # the model's answer on the example's family
    fired: tuple[str, ...] = ()  # the model's rules evaluated, in order (the last one decided)
    skip: str = ""              # why the example is not run

    @property
    def kind(self) -> str:
        return self.case.kind if self.case is not None else "skipped"


class Oracle:
    def __init__(self, facts, cache_size: int = 48):
        self.facts = facts
        self._prepared: OrderedDict = OrderedDict()
        self._size = cache_size

    def __repr__(self) -> str:
        return f"Oracle({self.facts.name})"

    def prepared(self, ex: Example) -> dict[str, torch.Tensor]:
        """The example's base inputs (its config prepared as a valid call); ValueError when the
        golden refuses the config (a window entirely in the padding, a shape no valid call has)."""
        key = (ex.config, ex.op)
        hit = self._prepared.get(key)
        if hit is None:
            base = valid_case(replace(ex, defects=()))
            try:
                hit = inputs.prepare(base)
            except (ValueError, RuntimeError, IndexError) as e:
                hit = ValueError(f"the golden cannot prepare the configuration: {e}")
            if not isinstance(hit, ValueError):
                total = sum(t.numel() for t in hit.values())
                if total > MAX_ELEMENTS:
                    hit = ValueError(f"{total} elements in the prepared inputs, more than {MAX_ELEMENTS}")
            self._prepared[key] = hit
            if len(self._prepared) > self._size:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(key)
        if isinstance(hit, ValueError):
            raise hit
        return hit

    def tensor_shapes(self, ex: Example) -> dict[str, tuple[int, ...]]:
        """Every tensor's logical shape in the example's base call (outputs take output_like's)."""
        prepared = self.prepared(ex)
        out_shape = tuple(prepared[self.facts.op.output_like].shape)
        return {p.name: (out_shape if p.output else tuple(prepared[p.name].shape)) for p in self.facts.op.tensor_params}

    def call(self, ex: Example, case: Case):
        prepared = self.prepared(ex)
        mutated = inputs.mutate(case, prepared)
        return call_of(inputs.build_args(case, mutated, tuple(prepared[case.op.output_like].shape)))

    def answer(self, ex: Example) -> tuple[Phase1, tuple[str, ...]]:
        """The model's answer for the example on its family, and the rules it evaluated."""
        probe = invalid_case(ex, 0, None) if ex.defects else valid_case(ex)
        call = self.call(ex, probe)
        model = self.facts.model
        return model(call, ex.family), tuple(model.fired(call, ex.family))

    def plan(self, ex: Example, note: str | None = None) -> Plan:
        try:
            answer, fired = self.answer(ex)
        except ValueError as e:
            return Plan(ex, None, None, skip=str(e))
        if answer.status == UNDEFINED:
            return Plan(ex, None, answer, fired, f"the spec gives phase 1 no result here ({answer.check}): "
                                                 "never asserted (policy 2)")
        if not ex.defects and answer.status == 0:
            ex, why = self.judged(ex)
            return Plan(ex, None if why else valid_case(ex, note), answer, fired, why)
        if ex.defects and answer == Phase1(0, None):
            return Plan(ex, None, answer, fired, "passes every phase-1 check: what a kernel does with a call "
                                                 "no valid configuration makes is undefined (policy 2)")
        return Plan(ex, invalid_case(ex, answer.status, answer.check, note), answer, fired)


    def judged(self, ex: Example) -> tuple[Example, str]:
        """A valid example with the standard its numbers are held to, or why it is not run."""
        ex = replace(ex, standard=None)
        env, module = ex.config.envelope, golden.load(self.facts.op.golden)
        prepared, attrs = self.prepared(ex), valid_case(ex).call_attrs
        try:
            expected = module.golden(dict(prepared), attrs)
        except (ValueError, RuntimeError, IndexError) as e:
            return ex, f"the golden has no result for this call: {e}"
        if env.standard not in RELATIVE_STANDARDS and not env.overflowing and not resolution_bounded(env.standard, env.dtype):
            return ex, ""
        grads = self.facts.op.incoming_gradients
        bound = sums.term_bounds(module, prepared, attrs, grads)
        if env.overflowing:
            # stricter than the case-file audit (harness/audit/order_free.py, the fp32 accumulator's
            # range): a random fp16 sum past 65504 may land next to where its rounding turns to inf,
            # and a skipped example costs the search little
            largest = torch.finfo(prepared[grads[0]].dtype).max if grads else math.inf
            why = sums.order_dependence(expected, bound, largest)
            if why:
                return ex, why
        if env.standard not in RELATIVE_STANDARDS or all(_bounded(bound[name], expected[name]) for name in expected):
            return ex, beyond_resolution(env.standard, env.dtype, expected, bound)
        plain = self.facts.plain_standard
        if plain is None:
            return ex, f"terms that cancel, which {env.standard} cannot judge, and no other standard in the case file"
        return replace(ex, standard=plain), beyond_resolution(plain, env.dtype, expected, bound)


def _thresholds(standard: str, dtype: str) -> dict:
    try:
        return compare.thresholds(standard, dtype)
    except ValueError:                      # integers, or no threshold for the dtype: nothing to bound
        return {}


def resolution_bounded(standard: str, dtype: str) -> bool:
    """Does the standard hold an error to a limit that a correct sum can exceed (beyond_resolution)?"""
    return bool({"max_abs_err", "error", "mare"} & set(_thresholds(standard, dtype)))


def _ulps(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """One unit in the last place of `dtype` at each |x| (0 where x is 0 or not finite)."""
    x = x.double().abs().nan_to_num(nan=0.0, posinf=0.0)
    _, exponent = torch.frexp(x)
    info = torch.finfo(dtype)
    # under the smallest normal the spacing stops shrinking: the subnormals' (2^-24 for fp16)
    normal = info.eps * torch.pow(2.0, (exponent - 1).double())
    return torch.where(x > 0, torch.clamp(normal, min=info.smallest_normal * info.eps), 0.0)


def _room(expected: torch.Tensor, terms: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """What a correct kernel may be off by at each element: the store's rounding to the output
    dtype (half an ulp), or an fp32 sum of the element's terms in an order spec C leaves free
    (RESOLUTION_ULPS ulps of fp32 at their summed magnitude), whichever is larger. Not their sum:
    the standards are built to pass a correctly rounded result exactly (single_bm's bf16 2^-8 is
    half an ulp just above 1), and an fp32 sum of ordinary gradients tips such a result over only
    when it sits within a few fp32 ulps of a rounding boundary."""
    return torch.maximum(0.5 * _ulps(expected, dtype), RESOLUTION_ULPS * _ulps(terms, torch.float32))


def beyond_resolution(standard: str, dtype, expected: dict[str, torch.Tensor],
                      terms: dict[str, torch.Tensor] | None = None) -> str:
    """Why the standard cannot judge this golden, or "": at some element, what a correct kernel may
    be off by (_room) exceeds what the standard allows there. TTK mixed's cap (0.01 for fp32) holds
    the largest error anywhere; single_bm's `error` holds each element, absolute under |g| = 1 and
    relative above; MARE each element relative to its own value (|g| + 1e-7), which a correctly
    rounded fp16 result of 2^-25 (a tie, rounded to 0) misses by 0.23. The case files keep their
    sums small or exact (131072 / 256); explored ones are not. Found by exploring the fault-free 910b: AvgPool2d fp32 over the case file's 131072
    gradients, golden 152917.33 and kernel 152917.34 (one ulp is 0.0156), then 53172.15 and 4 ulps
    away (36 terms), both over TTK's 0.01; MaxPool3d fp32 with a 3x386x17 window, -0.90906 from
    thousands of argmax terms and the kernel 6.6e-5 away, over single_bm's 2^-14."""
    thr = _thresholds(standard, dtype)
    torch_dtype = dtypes.torch_or_none(dtype)       # dtype: a DType or its name
    if not thr or torch_dtype is None:
        return ""
    for name, g in expected.items():
        if not g.numel() or not g.is_floating_point():
            continue
        room = _room(g, (terms or expected)[name], torch_dtype)
        mag = g.double().abs()
        if "max_abs_err" in thr:
            over, allowed = room, torch.full_like(room, thr["max_abs_err"])
        elif "error" in thr:
            over, allowed = room, thr["error"] * torch.clamp(mag, min=1.0)
        elif "mare" in thr:         # MERE/MARE: each element against its own value, |a - g| / (|g| + 1e-7)
            over, allowed = room / (mag + RE_EPS), torch.full_like(room, thr["mare"])
        else:
            continue
        bad = (over > allowed) & torch.isfinite(mag)
        if bool(bad.any()):
            i = int(torch.argmax((over / allowed).masked_fill(~bad, 0)).item())
            at = tuple(int(k) for k in torch.unravel_index(torch.tensor(i), g.shape))
            # the general words first: explore.md counts skips by the reason's words before its first colon
            return (f"past the standard's resolution (a correct kernel may be off by more than it allows): "
                    f"{standard} allows {dtype} {float(allowed.reshape(-1)[i]):.3g} at {name}{list(at)} (golden "
                    f"{float(g.reshape(-1)[i]):.6g}), under what a correct kernel may be off by there: "
                    f"{float(room.reshape(-1)[i]):.3g}, half an ulp of {dtype} or {RESOLUTION_ULPS} fp32 ulps of "
                    f"its terms' sum {float((terms or expected)[name].reshape(-1)[i]):.6g} in a free order")
    return ""


def _bounded(terms: torch.Tensor, result: torch.Tensor) -> bool:
    """Every finite element well conditioned for a relative standard (CONDITION_LIMIT)."""
    return sums.bounded(terms, result, CONDITION_LIMIT, RE_EPS)


def elements(shape) -> int:
    return math.prod(shape) if shape else 1
