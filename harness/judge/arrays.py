"""--dump-failures, the arrays: a failing case's inputs, golden and actual output in one .npz.

Written by the case worker, where the arrays are (harness/execution/child.py); the pytest
process adds the `meta` entry (harness/reporting/dump_meta.py) once the record is complete.
Keys: `input.<name>`, `golden.<name>`, `actual.<name>` (numpy arrays in logical dim order;
bfloat16, which numpy lacks, widened exactly to float32).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import torch


def _array(x) -> tuple[np.ndarray, str]:
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        name = str(t.dtype).removeprefix("torch.")
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.contiguous().numpy(), name
    arr = np.asarray(x)
    return arr, arr.dtype.name


PREFIX_CHARS = 120      # of the readable part: with the hash and ".npz", far below a file system's 255 bytes


def file_name(case_id: str, suffix: str = ".npz") -> str:
    """A file name for a case id: a readable prefix (no characters a shell or a file system minds)
    and a hash of the whole id, so two ids never share a file however long their common start, and
    two ids that differ only in characters the prefix replaces do not either."""
    readable = re.sub(r"[^A-Za-z0-9._=-]+", "_", case_id)[:PREFIX_CHARS].strip("._-") or "case"
    return f"{readable}-{hashlib.sha256(case_id.encode('utf-8')).hexdigest()[:16]}{suffix}"


def write_arrays(directory: Path, case_id: str, capture: dict) -> dict:
    """Write the captured arrays; {"path", "dtypes": {key: original dtype}} for the record."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    arrays, dtypes = {}, {}
    for prefix in ("input", "golden", "actual"):
        for name, value in (capture.get({"input": "inputs"}.get(prefix, prefix)) or {}).items():
            if value is not None:
                arrays[f"{prefix}.{name}"], dtypes[f"{prefix}.{name}"] = _array(value)
    path = directory / file_name(case_id)
    np.savez_compressed(path, **arrays)
    return {"path": str(path), "dtypes": dtypes}
