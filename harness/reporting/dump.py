"""--dump-failures: a failing case's inputs, golden, actual output and metrics in one .npz.

Keys: `input.<name>`, `golden.<name>`, `actual.<name>` (numpy arrays in logical dim order;
bfloat16, which numpy lacks, widened exactly to float32) and `meta` (a JSON string: case id,
status, reason, metrics, worst element, repro command, and each array's original dtype).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from .records import jsonable


def _array(x) -> tuple[np.ndarray, str]:
    try:
        import torch
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu()
            name = str(t.dtype).removeprefix("torch.")
            if t.dtype == torch.bfloat16:
                t = t.float()
            return t.contiguous().numpy(), name
    except ImportError:        # pragma: no cover - torch is a dependency
        pass
    arr = np.asarray(x)
    return arr, arr.dtype.name


def file_name(case_id: str) -> str:
    """A file name for a case id: readable, and no characters a shell or a file system minds."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", case_id)[:200] + ".npz"


def write(directory: Path, record: dict, inputs: dict, golden: dict | None, actual: dict | None) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    arrays, dtypes = {}, {}
    for prefix, group in (("input", inputs), ("golden", golden or {}), ("actual", actual or {})):
        for name, value in group.items():
            if value is None:
                continue
            arrays[f"{prefix}.{name}"], dtypes[f"{prefix}.{name}"] = _array(value)
    meta = {k: record.get(k) for k in ("case_id", "nodeid", "status", "raw_status", "reason", "metrics", "worst",
                                      "standard", "repro", "family", "soc_name")}
    meta["dtypes"] = dtypes
    path = directory / file_name(record["case_id"])
    np.savez_compressed(path, meta=np.array(json.dumps(jsonable(meta))), **arrays)
    return path


def load(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, arrays) of a dump."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        return meta, {k: z[k] for k in z.files if k != "meta"}
