"""One command that reruns exactly one case on the same backend, family and simulator switches."""
from __future__ import annotations

import shlex
from pathlib import Path

from ..target import Target

# The software CANN is found (and built) by the harness itself, which then applies its set_env.sh:
# the install's ASCEND_* paths it exports are not switches, and a repro must not pin a build directory.
_KEPT_FOR_SOFTWARE_CANN = ("ASCEND_RT_VISIBLE_DEVICES",)


def command(nodeid: str, target: Target, switches: dict[str, str], root: Path | None = None) -> str:
    """`SWCANN_DEVIATIONS=1 ./run suite 'cases/x.yaml::group[...]' --backend aclnn --soc ascend910b ...`.

    The node id selects the case and nothing else (unlike -k, whose expression language cannot
    hold the brackets of a case id); --tier all keeps a slow case from being deselected; -n 0
    runs it in this process so a crash shows its own traceback."""
    software = target.software_cann
    env = {k: v for k, v in switches.items()
           if not (software and k.startswith("ASCEND_") and k not in _KEPT_FOR_SOFTWARE_CANN)}
    runner = "./run suite" if root is not None and (Path(root) / "run").is_file() else "python -m pytest"
    args = [nodeid, "--backend", target.backend or "torch"]
    file_part = nodeid.partition("::")[0]
    if file_part.endswith(".json"):     # an ATK list is collected as one only when --atk names it
        args.append(f"--atk={file_part}")
    if target.family:
        args += ["--soc", target.family]
    if target.backend == "torch" and target.device:
        args += ["--device", target.device]
    if target.determinism_level >= 2:      # the level a batch-slice or strong-consistency case ran at
        args += ["--determinism-level", str(target.determinism_level)]
    elif target.deterministic:
        args.append("--deterministic")
    if target.relaunch:
        args.append("--relaunch")
    args += ["--tier", "all", "-n", "0"]
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + runner + " " + shlex.join(args)
