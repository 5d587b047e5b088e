"""One command that reruns exactly one case on the same backend, family and simulator switches."""
from __future__ import annotations

import shlex
from pathlib import Path

# Switches that the harness itself sets for the software CANN; a user's value is kept, ours is not.
_HARNESS_SET = ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH")


def command(nodeid: str, props: dict, switches: dict[str, str], root: Path | None = None) -> str:
    """`SWCANN_DEVIATIONS=1 ./run suite 'cases/x.yaml::group[...]' --backend aclnn --soc ascend910b ...`.

    The node id selects the case and nothing else (unlike -k, whose expression language cannot
    hold the brackets of a case id); --tier all keeps a slow case from being deselected; -n 0
    runs it in this process so a crash shows its own traceback."""
    env = {k: v for k, v in switches.items()
           if not (k in _HARNESS_SET and props.get("software_cann_built") == "True")}
    runner = "./run suite" if root is not None and (Path(root) / "run").is_file() else "python -m pytest"
    args = [nodeid, "--backend", props.get("backend") or "torch"]
    if props.get("family"):
        args += ["--soc", props["family"]]
    if props.get("backend") == "torch" and props.get("device"):
        args += ["--device", props["device"]]
    if props.get("deterministic") == "True":
        args.append("--deterministic")
    args += ["--tier", "all", "-n", "0"]
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + runner + " " + shlex.join(args)
