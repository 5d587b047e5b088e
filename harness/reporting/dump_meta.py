"""--dump-failures, the meta: what the record says about a dumped case, added to its .npz.

The case worker wrote the arrays (harness/judge/arrays.py, in a file named by `arrays.file_name`:
a readable prefix of the case id and a hash of all of it); `meta` (a JSON string: case id,
status, reason, metrics, worst element, repro command, and each array's original dtype) is
added here, in the pytest process, where the record has its identity and repro command.
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from .records import jsonable


def add_meta(path: Path, record: dict, dtypes: dict) -> Path:
    meta = {k: record.get(k) for k in ("case_id", "nodeid", "status", "raw_status", "reason", "metrics", "worst",
                                      "standard", "repro", "family", "soc_name")}
    meta["dtypes"] = dtypes
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array(json.dumps(jsonable(meta))))
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        if "meta.npy" not in z.namelist():
            z.writestr("meta.npy", buf.getvalue())
    return Path(path)


def load(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, arrays) of a dump."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        return meta, {k: z[k] for k in z.files if k != "meta"}
