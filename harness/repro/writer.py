"""Writing a reproducer's directory: repro.c, the input bytes, the golden bytes and README.txt."""
from __future__ import annotations

from pathlib import Path

from ..inputs import Arg
from ..model import Case
from . import plan as plan_mod
from .c_program import program
from .commands import BUILD_COMMAND, RUN_COMMAND

README = """Standalone reproducer of {case_id}
(expected on {family}: {expectation})

Build, after `source <cann>/set_env.sh` (the software CANN of the conformance suite has one too,
in build/swcann/<hash>/):

    {build}

Run (reads its data files from DIR, by default the directory of the program):

    {run}                    # on the software CANN: SWCANN_SOC={family} {run}

It prints the descriptor of every aclCreateTensor and aclCreateIntArray call, the phase-1 status
(with aclGetRecentErrMsg when it is not 0), the workspace size, the phase-2 and stream-sync
statuses, the SHA-256 digest of every output view (elements in view order, as the suite's records
carry it), the comparison with the golden under {standard} (every metric, then PASS or FAIL with the
reasons and the worst element), and last the verdict: PASS when the library did what the case
expects. It writes each downloaded output storage to <output>.actual.bin.

Exit status: 0 PASS, 1 FAIL, 2 a call outside the operator failed (no verdict), 3 the SoC is not of
family {family}.

Files: repro.c; {inputs}; {goldens}.
"""


def _readme(plan: plan_mod.Plan) -> str:
    expectation = f"phase-1 status {plan.status}" + (f" [{plan.check}]" if plan.check else "")
    if plan.numerics:
        expectation += f", numerics within {plan.standard}"
    inputs = ", ".join(f"{t.file} ({t.name}'s whole storage" + (": the poison in the view, the case's guard bytes outside it)"
                                                                 if t.is_output else ")")
                       for t in plan.tensors if t.data is not None) or "no inputs"
    goldens = ", ".join(f"{j.file} ({j.output}'s golden: {'int64' if j.integer else 'float64'}, little endian, "
                        f"channel-first order)" for j in plan.judgements) or \
        "no golden (the case compares no numerics here)"
    return README.format(case_id=plan.case_id, family=plan.family, expectation=expectation, build=BUILD_COMMAND,
                         run=RUN_COMMAND.replace(" [DIR]", ""), standard=plan.standard if plan.numerics else
                         "the case's standard (none here)", inputs=inputs, goldens=goldens)


def write_plan(plan: plan_mod.Plan, directory) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for t in plan.tensors:
        if t.data is not None:
            (out / t.file).write_bytes(t.data)
    for j in plan.judgements:
        (out / j.file).write_bytes(j.golden)
    (out / "repro.c").write_text(program(plan))
    (out / "README.txt").write_text(_readme(plan))
    return out


def write_c_repro(case: Case, args: list[Arg], golden: dict | None, directory, family: str | None = None) -> Path:
    """Write the reproducer of `case` into `directory` and return it.

    `args`: the argument list the backend received (harness.inputs.build_args), before or after the
    run: outputs are laid again as build_args lays them (poison in the view, guard bytes outside). `golden`: the golden outputs
    by name (None where the case compares no numerics on `family`). `family`: whose expected status
    the program holds the library to (default: plan.default_family(case))."""
    return write_plan(plan_mod.make(case, args, golden, family or plan_mod.default_family(case)), directory)
