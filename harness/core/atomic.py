"""Files written whole or not at all: the caches under build/ and --golden-cache are shared by
several processes at once (xdist workers), and a reader must never see half an entry; a report
directory's run.json is read by the next run even when this one was killed mid-write."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary file beside it and a rename; nothing is left
    behind when writing fails."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
