"""The corner cases of aclnnAvgPool2dBackward's phase-1 model that no case may assert.

Policy 2 keeps undefined behaviour out of the case files, so these pin the model's UNDEFINED
answers, and how the L0 label rules decide by path (INFO.examples, run by tests/test_golden.py).
"""
from __future__ import annotations

from golden._phase1 import INNER_NULLPTR, INVALID, SUCCESS, UNDEFINED, Call, Phase1, TensorDesc

from . import avg_pool2d_backward as model       # not `MODEL` by name: explore's coverage report finds a
                                                # model's module by that name (harness/explore/reach.py)

INNER, _MODEL = model.INNER, model.MODEL


def _call(*, stride=(2, 2), padding=(1, 1), count_include_pad=False, null_out=(), self_dims=(2, 3, 9, 9)) -> Call:
    """self (2,3,9,9) fp16, kernel 3, gradOutput (2,3,5,5): the 910B/910_93 3-D path unless
    count_include_pad (then the cube path)."""
    def tensor(dims):
        return TensorDesc(tuple(dims), "float16", "NCHW", tuple(1 for _ in dims))
    attrs = {"kernelSize": (3, 3), "stride": stride, "padding": padding, "ceilMode": False,
             "countIncludePad": count_include_pad, "divisorOverride": 0, "cubeMathType": 0}
    return Call({"gradOutput": tensor((2, 3, 5, 5)), "self": tensor(self_dims), "gradInput": tensor(self_dims)},
                attrs, frozenset(null_out))


def null_stride_is_undefined_where_dereferenced():
    # G.2: the 950 non-global path and the 910B/910_93 3-D path dereference it; the cube path
    # (910/310P/310B always, 910B/910_93 with countIncludePad) reads it as stride = kernel
    assert _MODEL(_call(stride=None), "ascend950") == Phase1(UNDEFINED, "B2.3")
    assert _MODEL(_call(stride=None), "ascend910b") == Phase1(UNDEFINED, "B3.3")
    assert _MODEL(_call(stride=None, count_include_pad=True), "ascend910_93") == Phase1(SUCCESS)
    assert _MODEL(_call(stride=None), "ascend910") == Phase1(SUCCESS)


def labels_decide_by_path():
    # l0_format_rules.md 2.4: (a) a 3-D gradInput labelled NCHW, (b) a 4-D self labelled NCL
    def call(self_dims, grad_dims, self_fmt, out_fmt, count_include_pad=False, kernel=(3, 3), padding=(1, 1)):
        def t(dims, fmt):
            return TensorDesc(tuple(dims), "float32", fmt, tuple(1 for _ in dims))
        grad_fmt = "NCHW" if len(grad_dims) == 4 else "NCL"
        attrs = {"kernelSize": kernel, "stride": (2, 2), "padding": padding, "ceilMode": False,
                 "countIncludePad": count_include_pad, "divisorOverride": 0, "cubeMathType": 0}
        return Call({"gradOutput": t(grad_dims, grad_fmt), "self": t(self_dims, self_fmt),
                     "gradInput": t(self_dims, out_fmt)}, attrs)
    a = call((3, 9, 9), (3, 5, 5), "NCL", "NCHW")
    b = call((2, 3, 9, 9), (2, 3, 5, 5), "NCL", "NCHW", count_include_pad=True)
    assert _MODEL(a, "ascend950") == Phase1(INNER, "L0.R2.v2")
    assert _MODEL(a, "ascend910b") == Phase1(SUCCESS)                          # AvgPool3DGrad: ND result
    assert _MODEL(a, "ascend310p") == Phase1(INVALID, "L0.R2.cube")
    assert _MODEL(b, "ascend910_93") == Phase1(INVALID, "L0.R3.cube")          # cube conditions hold
    assert _MODEL(b, "ascend950") == Phase1(SUCCESS)
    glob = call((3, 10, 10), (3, 1, 1), "NCL", "NCHW", kernel=(10, 10), padding=(0, 0))
    for family in ("ascend950", "ascend910b", "ascend910"):
        assert _MODEL(glob, family) == Phase1(INNER_NULLPTR, "L0.R2.global")
    assert _MODEL(call((3, 9, 9), (3, 5, 5), "NCHW", "NCL"), "ascend910") == Phase1(SUCCESS)  # self's 3-D label


def null_out_pointer_is_undefined_on_success_only():
    # G.14: never checked, written through when phase 1 succeeds; a failing check returns first
    assert _MODEL(_call(null_out={"workspaceSize"}), "ascend910b") == Phase1(UNDEFINED, "out-pointers")
    assert _MODEL(_call(null_out={"executor"}), "ascend310p") == Phase1(UNDEFINED, "out-pointers")
    assert _MODEL(_call(null_out={"executor"}, padding=(2, 2)), "ascend950") == Phase1(INVALID, "B1.14")
    assert _MODEL(_call(null_out={"workspaceSize"}, self_dims=(0, 3, 9, 9)), "ascend950") == Phase1(UNDEFINED, "B1.18")


def int64_overflow_is_undefined():
    # 2*pad and the shape size are int64 in the code: signed overflow has no defined result
    assert _MODEL(_call(padding=(1, 1 << 62)), "ascend910b") == Phase1(UNDEFINED, "B1.14")
    assert _MODEL(_call(padding=(1, (1 << 62) - 1)), "ascend910b") == Phase1(INVALID, "B1.14")
    assert _MODEL(_call(self_dims=(2, 3, 1 << 31, 1 << 32)), "ascend910") == Phase1(UNDEFINED, "B1.18")
    assert _MODEL(_call(self_dims=(1, 1, 1 << 30, 1 << 32)), "ascend950") == Phase1(INNER_NULLPTR, "B2.4")


EXAMPLES = (null_stride_is_undefined_where_dereferenced, null_out_pointer_is_undefined_on_success_only,
            int64_overflow_is_undefined, labels_decide_by_path)
