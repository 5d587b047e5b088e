"""Per-op metadata for the harness's own tests (in the spirit of PyTorch's OpInfo).

Each golden module sets `INFO = OpInfo(...)`; tests/ loop over `golden.available()`
and read it, so an operator's test needs live with the operator and no test names one.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable

import torch

from platforms import FAMILIES as PLATFORM_FAMILIES

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def params(shape, dtype, attrs, index_dtype=None):
    """The `p` a golden's prepare receives (shape, dtype, index_dtype, attrs)."""
    return types.SimpleNamespace(shape=tuple(shape), dtype=dtype, index_dtype=index_dtype, attrs=attrs)


def list_form(rng, vals, kernel=None):
    """An ABI list for per-axis values: sometimes length 1 (all equal), and
    for stride sometimes empty (== kernel)."""
    vals = list(vals)
    if kernel is not None and vals == list(kernel) and rng.random() < 0.35:
        return []
    if len(set(vals)) == 1 and rng.random() < 0.5:
        return [vals[0]]
    return vals


def lead_dims(rng, batched, cmax=3):
    """(N, C) when batched, else (C,)."""
    return (rng.randint(1, 2), rng.randint(1, cmax)) if batched else (rng.randint(1, cmax),)


@dataclass(frozen=True)
class Forward:
    """What a real forward pass says a prepared case must hold."""
    grad_shape: tuple[int, ...]                 # gradOutput's shape
    indices: torch.Tensor | None = None         # the forward's indices (int64), if the op takes any
    index_dtype: torch.dtype | None = None      # indices' dtype when the case names none


FAMILIES = tuple(f.name for f in PLATFORM_FAMILIES)
# SocVersion ASCEND910B / ASCEND910_93, the families the ops' A2/A3 branches name: those of NpuArch DAV_2201
A2A3 = tuple(f.name for f in PLATFORM_FAMILIES if f.arch == "DAV_2201")


def families_but(*names: str) -> tuple[str, ...]:
    return tuple(f for f in FAMILIES if f not in names)


@dataclass(frozen=True)
class ImplDeviation:
    """A place where the spec (sections C and G) says the real library departs from the documented
    (PyTorch) semantics: README policy 4, a finding, never a golden rule. Either `groups` names the
    `dev_*` case groups that assert the documented semantics and so fail on a library with the
    deviation (the software CANN models it under SWCANN_DEVIATIONS=1, on `families` only), or
    `no_case` says why nothing can expose it (undefined behaviour, policy 2; or below every
    tolerance). tests/test_deviations.py holds the two together."""
    name: str
    spec: str                          # the spec sections that document it, e.g. "C.4, G.8"
    families: tuple[str, ...]          # where the source says it occurs
    what: str
    groups: tuple[str, ...] = ()       # dev_* groups of the op's case file that expose it
    no_case: str | None = None         # why it has no case


@dataclass(frozen=True)
class DocDeviation:
    """Where the public aclnn documentation allows what the real code refuses (or the reverse): the
    cases follow the code (spec README policy 1), and this entry says what the doc claims, what the
    code does with its status, and which case groups or scenarios (`group` or `group[scenario]` of
    the op's case file) show it. tests/test_labels.py holds the names to the case file."""
    name: str
    doc: str                           # the documented claim, with its place in the doc
    code: str                          # what the real code does instead, with the status
    families: tuple[str, ...]
    cases: tuple[str, ...]


@dataclass(frozen=True)
class OpInfo:
    # (random.Random) -> (p, tags): a random valid configuration and the features it exercises
    gen_config: Callable
    required_tags: frozenset[str]               # features the generated configs must cover
    # (inputs as NumPy, attrs) -> expected output: an independent loop reference sharing no code
    # with the golden (golden/_reference.py helpers only)
    reference: Callable
    exact: bool = True                          # golden == reference exactly (else 1e-12 relative)
    # (inputs, attrs) -> d(sum(y * gradOutput))/d(self) via torch autograd, None where torch has none
    autograd: Callable | None = None
    # (p, draw, inputs) -> Forward: the real forward pass prepare() must agree with
    forward: Callable | None = None
    # name -> (patch) -> golden-like fn: broken goldens the reference check must catch;
    # `patch(obj, attr, value)` is pytest's monkeypatch.setattr
    mutants: dict[str, Callable] = field(default_factory=dict)
    # zero-argument checks of the spec's documented examples and corner cases
    examples: tuple[Callable, ...] = ()
    # every documented implementation deviation (spec C and G), with the cases that expose it
    deviations: tuple[ImplDeviation, ...] = ()
    # spec section B as code (golden/_phase1.py): (Call, family) -> Phase1, the check that fires first
    model: Callable | None = None
    # gradOutput's shape is itself the op's output size (an adaptive pool without an outputSize
    # parameter): another gradOutput shape is another valid call, not a mistake the golden refuses
    grad_shape_free: bool = False
    # (shape, attrs, family) -> why the real library's bits may vary between runs of this call by
    # themselves (spec C "Determinism"), or None: such a call has no batch-slice check at
    # --determinism-level 3 (harness/judge/batch_slice.py). None here: deterministic everywhere.
    order_varies: Callable | None = None
    # the documentation's claims the real code contradicts (l0_format_rules.md section 3: labels)
    doc_deviations: tuple[DocDeviation, ...] = ()


# ------------------------------------------------------------------ shared by the max pools
# (generators, autograd, forward and mutants that MaxPool2d and MaxPool3d both use)

def gen_max_pool(rng, nsp):
    from . import _common
    kmax, extra = (4, 5) if nsp == 2 else (3, 2)
    while True:
        k = [rng.randint(1, kmax) for _ in range(nsp)]
        s = [rng.randint(1, kmax) for _ in range(nsp)]
        d = [rng.choice([1, 1, 2, 3] if nsp == 2 else [1, 1, 2]) for _ in range(nsp)]
        p = [rng.randint(0, kk // 2) for kk in k]
        ceil = rng.random() < 0.5
        sp = []
        for a in range(nsp):
            lo = max(1, d[a] * (k[a] - 1) + 1 - 2 * p[a])
            sp.append(rng.randint(lo, lo + extra))
        out = [_common.pool_out_size(*a, ceil) for a in zip(sp, k, s, p, d)]
        # windows made only of padding (dilation) have no defined index: skip
        if not _common.empty_windows(sp, k, s, p, d, out):
            break
    batched = rng.random() < 0.5
    shape = lead_dims(rng, batched, 3 if nsp == 2 else 2) + tuple(sp)
    attrs = {"kernelSize": list_form(rng, k), "stride": list_form(rng, s, k), "padding": list_form(rng, p),
             "dilation": list_form(rng, d), "ceilMode": ceil}
    tags = {f"rank{len(shape)}", f"ceil={ceil}"}
    eff = [dd * (kk - 1) + 1 for dd, kk in zip(d, k)]
    tags |= {"overlap"} if any(e > ss for e, ss in zip(eff, s)) else set()
    tags |= {"gaps"} if any(ss > e for e, ss in zip(eff, s)) else set()
    tags |= {"padding"} if any(p) else set()
    tags |= {"dilation>1"} if max(d) > 1 else set()
    for a in range(nsp):
        fl = _common.pool_out_size(sp[a], k[a], s[a], p[a], d[a], False)
        raw = (sp[a] + 2 * p[a] - eff[a] + s[a] - 1) // s[a] + 1
        if ceil and _common.pool_out_size(sp[a], k[a], s[a], p[a], d[a], True) != fl:
            tags.add("ceil changes shape")
        if ceil and (raw - 1) * s[a] >= sp[a] + p[a]:
            tags.add("drop last window")
    return params(shape, rng.choice(FLOATS), attrs, rng.choice([None, torch.int32, torch.int64])), tags


MAX_POOL_TAGS = frozenset({"ceil=True", "ceil=False", "overlap", "gaps", "padding", "dilation>1",
                           "ceil changes shape", "drop last window"})


def max_pool_forward(nsp):
    """forward(x, k, s, p, d, ceil) of the n-D max pool, returning (y, indices)."""
    import torch.nn.functional as F
    from . import _common
    fwd = F.max_pool2d if nsp == 2 else F.max_pool3d

    def run(x, attrs):
        k, s, p, d, ceil = _common.pool_attrs(attrs, nsp)
        return fwd(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    return run


def max_pool_autograd(nsp):
    run = max_pool_forward(nsp)

    def autograd(inputs, attrs):
        x = inputs["self"].double().requires_grad_(True)
        y, _ = run(x, attrs)
        y.backward(inputs["gradOutput"].double())
        return x.grad
    return autograd


def max_pool_checked_forward(nsp):
    run = max_pool_forward(nsp)

    def forward(p, draw, inputs):
        y, idx = run(inputs["self"].double(), p.attrs)
        return Forward(tuple(y.shape), idx, torch.int32)
    return forward


def swap_first_two(t):
    flat = t.reshape(-1).clone()
    if flat.numel() >= 2:
        flat[[0, 1]] = flat[[1, 0]].clone()
    return flat.reshape(t.shape)


def swapped_indices(golden_fn):
    """A golden that reads the indices in the wrong order (first two swapped)."""
    return lambda inputs, attrs: golden_fn({**inputs, "indices": swap_first_two(inputs["indices"])}, attrs)


def scatter_overwrite(grad_out, indices, self_shape, n):
    """Mutant of _common.scatter_backward: last writer wins instead of a sum."""
    import math
    lead = self_shape[:-n]
    go = grad_out.double().reshape(math.prod(lead), -1)
    out = torch.zeros(go.shape[0], math.prod(self_shape[-n:]), dtype=torch.float64)
    out.scatter_(1, indices.long().reshape(go.shape), go)
    return out.reshape(self_shape)


def scatter_mutants(golden_fn):
    """The two ways a scatter-based backward goes wrong, as OpInfo.mutants."""
    from . import _common
    return {
        "swapped indices": lambda patch: swapped_indices(golden_fn),
        "overwrite instead of sum": lambda patch: (patch(_common, "scatter_backward", scatter_overwrite),
                                                   golden_fn)[1],
    }


def scatter_op_info(golden_fn, **fields) -> OpInfo:
    """OpInfo of an op whose backward is an index scatter (the max pools, adaptive max pool)."""
    return OpInfo(mutants=scatter_mutants(golden_fn), **fields)


# The A2/A3 Scatter template (non-overlapping windows) stores each gradient instead of adding it
# (MaxPool2d/MaxPool3d spec C "Duplicates"; AdaptiveMaxPool2d's divisible path uses it too).
SCATTER_LAST_WRITER_WINS = ImplDeviation(
    "scatter_last_writer_wins", "C (Duplicates)", A2A3,
    "non-overlapping windows: the Scatter template stores each gradient (last writer wins) instead of summing",
    no_case="forward-generated indices never coincide when windows do not overlap; coinciding "
            "indices there are artificial, implementation-dependent input (spec C: 'only use indices "
            "produced by a real forward pass'; policy 2)")


def empty_grad_unwritten(spec: str, why: str) -> ImplDeviation:
    """The scatter ops' empty gradOutput with a non-empty self: success, gradInput never written."""
    return ImplDeviation("empty_grad_leaves_grad_input", spec, A2A3 + ("ascend950",),
                         "an empty gradOutput with a non-empty self returns success and leaves gradInput unwritten",
                         no_case=f"no documented result to assert: {why}")


def max_pool_info(nsp, golden_fn, reference, rank_tags, examples, deviations=(), model=None,
                  doc_deviations=()) -> OpInfo:
    """OpInfo of the windowed n-D max pools: everything but the reference, examples and phase-1
    model is shared."""
    return scatter_op_info(golden_fn, gen_config=lambda rng: gen_max_pool(rng, nsp),
                           required_tags=MAX_POOL_TAGS | frozenset(rank_tags), reference=reference,
                           autograd=max_pool_autograd(nsp), forward=max_pool_checked_forward(nsp),
                           examples=tuple(examples), deviations=(SCATTER_LAST_WRITER_WINS,) + tuple(deviations),
                           model=model, doc_deviations=tuple(doc_deviations),
                           order_varies=overlap_summed_atomically(
                               nsp, True, "the A2/A3 Normal tiling splits overlapping windows over cores by "
                                          "GetDeterministic(), spec C Determinism"))


def overlap_summed_atomically(nsp: int, dilation: bool, where: str) -> Callable:
    """order_varies of a windowed pool whose A2/A3 kernel sums overlapping windows (a window's
    extent (k-1)*d+1 past its stride on some axis) with atomic adds in an order only deterministic
    mode fixes: such a call run without that mode may change its bits between runs (spec C
    Determinism of MaxPool2d, MaxPool3d and AvgPool2d). `where` names the kernel and the spec."""
    def varies(shape, attrs, family, deterministic=True):
        if deterministic or family not in A2A3:
            return None
        from . import _common
        try:
            k, s, _p, d, _ceil = _common.pool_attrs(attrs, nsp, dilation=dilation)
        except (ValueError, TypeError):
            return None                 # not a call the op takes: nothing is allowed
        if not any((kk - 1) * dd + 1 > ss for kk, ss, dd in zip(k, s, d)):
            return None
        return (f"overlapping windows are summed with atomic adds whose order {family} fixes only in "
                f"deterministic mode, which this run did not ask for ({where})")
    return varies
