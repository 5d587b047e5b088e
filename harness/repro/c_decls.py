"""The case-specific declarations of a reproducer: the operator's two entry points (from the case
file's signature), each tensor's descriptor arrays and Tensor record, each attribute's value,
and the thresholds of each compared output. C literals are written here, nowhere else."""
from __future__ import annotations

import math
import re

from ..core import dtypes, formats
from .plan import Judgement, Plan, TensorPlan

# C parameter types of the signature's object kinds (acl_abi.md 2.3); an output tensor is written to.
# A scalar attribute is one element of the dtype its kind names (int8, int64, double), or C's bool.
TENSOR, INT_ARRAY, OUTPUT_TENSOR = "const aclTensor *", "const aclIntArray *", "aclTensor *"
PHASE1_TAIL = "uint64_t *workspaceSize, aclOpExecutor **executor"
PHASE2_PARAMS = "void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream"


def c_type(kind: str, output: bool = False) -> str:
    """The C parameter type of one signature type."""
    if kind == "tensor":
        return OUTPUT_TENSOR if output else TENSOR
    if kind == "int_array":
        return INT_ARRAY
    if kind == "bool":
        return "bool"
    c = dtypes.lookup(kind).c_type
    if c is None:
        raise ValueError(f"no C type for a {kind!r} parameter")
    return c


def acl_dtype(name: str) -> str:
    """The aclDataType a Tensor record carries (csrc/elements.c switches on it): the enumerator of
    acl.h for a dtype the program reads, the cast value for one it only digests (a newer dtype may
    be missing from an older acl.h)."""
    d = dtypes.lookup(name)
    return d.acl_name if d.c_type else f"(aclDataType){d.acl} /* {d.acl_name}: only digested */"


def ident(name: str) -> str:
    """A C identifier for a parameter name."""
    out = re.sub(r"\W", "_", name)
    return out if out and not out[0].isdigit() else f"p_{out}"


def int64(v: int) -> str:
    """An int64_t literal: plain where an int holds it, else INT64_C (INT64_MIN has no literal)."""
    v = int(v)
    if v == -2**63:
        return "INT64_MIN"
    return str(v) if -2**31 < v < 2**31 else f"INT64_C({v})"


def scalar(kind: str, value) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int64":
        return int64(value)
    if kind == "int8":
        return f"(int8_t){int(value)}"
    if kind == "double":
        v = float(value)
        if math.isnan(v):
            return "NAN"
        return ("-INFINITY" if v < 0 else "INFINITY") if math.isinf(v) else repr(v)
    raise ValueError(f"no C literal for a {kind!r} argument")


def int_list(values) -> str:
    """The initializer of a C array (at least one element: C has no empty arrays)."""
    return ", ".join(int64(v) for v in values) if len(values) else "0"


def signature(plan: Plan) -> str:
    """Both entry points, declared from the case file's signature (no operator header needed)."""
    params = []
    for name, kind, output in plan.signature:
        ctype = c_type(kind, output)
        params.append(f"{ctype}{'' if ctype.endswith('*') else ' '}{ident(name)}")
    phase1 = ",\n    ".join(params + [PHASE1_TAIL])
    return (f"/* {plan.aclnn}'s two entry points, declared from the signature in cases/{plan.source}:\n"
            f"   the program needs no operator header. */\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
            f"aclnnStatus {plan.aclnn}GetWorkspaceSize(\n    {phase1});\n"
            f"aclnnStatus {plan.aclnn}({PHASE2_PARAMS});\n"
            "#ifdef __cplusplus\n}\n#endif\n")


def _storage_words(t: TensorPlan) -> str:
    if t.unbacked:
        return f"an unbacked descriptor: {t.storage_bytes} bytes behind it, phase 1 only"
    source = f"from {t.file}" if not t.is_output else \
        f"from {t.file}: the poison 0x{t.fill[::-1].hex()} in the view, the case's guard bytes outside it"
    return f"{t.storage_dims[0]}-element storage {source}"


def tensor(t: TensorPlan) -> str:
    """The descriptor arrays aclCreateTensor gets, and the Tensor record of one tensor."""
    n = ident(t.name)
    rank = len(t.dims)
    ldims, lstrides = (t.logical_dims, t.logical_strides) if not t.unbacked else (t.dims, t.strides)
    lines = [f"/* {t.name}: {t.dtype} ({t.acl_dtype_name}), format {t.format}, {_storage_words(t)} */",
             f"static const int64_t {n}_dims[{max(rank, 1)}] = {{{int_list(t.dims)}}};",
             f"static const int64_t {n}_strides[{max(rank, 1)}] = {{{int_list(t.strides)}}};",
             f"static const int64_t {n}_storage[1] = {{{int_list(t.storage_dims)}}};",
             f"static const int64_t {n}_ldims[{max(rank, 1)}] = {{{int_list(ldims)}}};",
             f"static const int64_t {n}_lstrides[{max(rank, 1)}] = {{{int_list(lstrides)}}};"]
    fill = "NULL"
    if t.is_output:
        lines.append(f"static const unsigned char {n}_fill[{len(t.fill)}] = "
                     f"{{{', '.join(f'0x{b:02x}' for b in t.fill)}}};")
        fill = f"{n}_fill"
    lines.append(f"static Tensor t_{n} = {{\"{t.name}\", {acl_dtype(t.dtype)}, {t.itemsize}, {t.storage_bytes}, {rank}, "
                 f"{n}_dims, {n}_strides, {int64(t.offset)}, {n}_ldims, {n}_lstrides, {fill}, NULL, NULL, NULL, NULL}};")
    return "\n".join(lines) + "\n"


def create_tensor(t: TensorPlan) -> str:
    """aclCreateTensor with the descriptor the harness's backend passes (objects.CaseObjects.tensor).
    Enum values are cast rather than named: a newer dtype may be missing from an older header."""
    n = ident(t.name)
    fmt_name = formats.TABLE[t.format][0]
    dtype = f"(aclDataType){t.acl_dtype} /* {t.acl_dtype_name} */"
    fmt = f"(aclFormat){t.acl_format} /* {fmt_name} */"
    return (f"    t_{n}.handle = aclCreateTensor({n}_dims, {len(t.dims)}, {dtype},\n"
            f"        {n}_strides, {int64(t.offset)}, {fmt}, {n}_storage, 1, t_{n}.dev);\n"
            f"    if (!created(t_{n}.handle, \"aclCreateTensor({t.name})\"))\n        goto cleanup;\n"
            f"    print_descriptor(&t_{n}, {t.acl_dtype}, \"{t.dtype}\", {t.acl_format}, \"{t.format}\", {n}_storage);\n")


def int_array(name: str, values) -> str:
    return f"static const int64_t {ident(name)}_value[{max(len(values), 1)}] = {{{int_list(values)}}};\n"


def thresholds(j: Judgement) -> str:
    entries = ", ".join(f"{{\"{k}\", {repr(float(v))}}}" for k, v in j.thresholds.items())
    return f"static const Thr {ident(j.output)}_thresholds[] = {{{entries}, {{NULL, 0.0}}}};\n"


def soc_patterns(plan: Plan) -> str:
    quoted = ", ".join(f"\"{p}\"" for p in plan.soc_patterns)
    return (f"static const char FAMILY[] = \"{plan.family}\";\n"
            f"static const char *const SOC_PATTERNS[] = {{{quoted}, NULL}};\n")


def workspace_guard(plan) -> str:
    """The guard bytes the program lays after the workspace's rounded end: the case's pattern."""
    data = plan.workspace_guard
    rows = ",\n    ".join(", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16))
    return (f"/* the guard bytes after the workspace's rounded end (harness/inputs/guard.py, this case's pattern) */\n"
            f"static const unsigned char g_workspace_guard[{len(data)}] = {{\n    {rows}}};\n")
