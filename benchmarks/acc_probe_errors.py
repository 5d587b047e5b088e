"""How far an fp16/bf16 accumulator lands from the float64 sum on the accumulation probes.

The probe groups (MaxPool2d `cov_accumulation_950`, MaxPool3d `cov_accumulation`, Adaptive
`dev_half_accumulation_950`) make many windows share an argmax, each adding 0.1. This prints, per
probe and dtype, the largest error of (a) an fp32 accumulator rounded once to the dtype, what the
spec documents for the max-pool kernels, and (b) a storage-dtype accumulator rounded after every
add (the fault `acc_storage_dtype`, and the 950 Adaptive kernel's documented behaviour), next to
the single-benchmark high-precision threshold the probes are judged with.

    python benchmarks/acc_probe_errors.py
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

# single benchmark, high precision (spec README): error threshold per dtype
THRESHOLD = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}

PROBES = [  # name, self shape, forward returning (y, flat plane indices)
    ("MaxPool2d k7 s1 p3", (7, 7, 17, 19), lambda x: F.max_pool2d(x, 7, 1, 3, return_indices=True)),
    ("MaxPool2d k5 s1 p2 ceil", (7, 7, 17, 19), lambda x: F.max_pool2d(x, 5, 1, 2, ceil_mode=True, return_indices=True)),
    ("MaxPool3d k5 s1 p2", (7, 7, 5, 9, 11), lambda x: F.max_pool3d(x, 5, 1, 2, return_indices=True)),
    ("MaxPool3d k3x5x5 s1 p1x2x2 ceil", (7, 7, 5, 9, 11),
     lambda x: F.max_pool3d(x, (3, 5, 5), 1, (1, 2, 2), ceil_mode=True, return_indices=True)),
    ("Adaptive 5x5 -> 40x40", (2, 3, 5, 5), lambda x: F.adaptive_max_pool2d(x, (40, 40), return_indices=True)),
    ("Adaptive 5x5 -> 23x31", (2, 3, 5, 5), lambda x: F.adaptive_max_pool2d(x, (23, 31), return_indices=True)),
]


def _errors(golden: torch.Tensor, got: torch.Tensor) -> float:
    """The single benchmark's error: absolute where |golden| < 1, relative elsewhere."""
    err = (got.double() - golden).abs()
    big = golden.abs() >= 1
    err[big] = err[big] / golden.abs()[big]
    return float(err.max())


def main() -> None:
    torch.manual_seed(0)
    print(f"{'probe':34} {'dtype':9} {'max hits':>8} {'fp32 acc':>10} {'dtype acc':>10} {'threshold':>10}")
    for name, shape, forward in PROBES:
        x = torch.randn(shape, dtype=torch.float64)
        _, idx = forward(x)
        planes = idx.reshape(x.shape[0] * x.shape[1], -1)
        plane = x[0, 0].numel()
        for dt in (torch.float16, torch.bfloat16):
            g = torch.tensor(0.1, dtype=dt)
            golden = torch.zeros(planes.shape[0], plane, dtype=torch.float64)
            golden.scatter_add_(1, planes, torch.full(planes.shape, float(g), dtype=torch.float64))
            fp32 = golden.float().to(dt)                       # exact here: at most a few hundred adds
            acc = torch.zeros(planes.shape[0], plane, dtype=dt)
            for o in range(planes.shape[1]):                   # one rounding per add, in output order
                acc.scatter_(1, planes[:, o:o + 1], acc.gather(1, planes[:, o:o + 1]) + g)
            hits = int(torch.stack([torch.bincount(p, minlength=plane) for p in planes]).max())
            print(f"{name:34} {str(dt).replace('torch.', ''):9} {hits:8d} {_errors(golden, fp32):10.2e} "
                  f"{_errors(golden, acc):10.2e} {THRESHOLD[dt]:10.2e}")


if __name__ == "__main__":
    main()
