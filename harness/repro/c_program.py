"""repro.c from a Plan: the fixed C of csrc/ (c_files.py), the case's declarations (c_decls.py), and
main(), which does what the harness's aclnn backend does for the case (harness/backends/aclnn.py)
and judges the outcome as the case runner does (harness/judge/runner.py)."""
from __future__ import annotations

import textwrap

from ..judge import reasons
from . import c_decls, c_files
from .commands import BUILD_COMMAND, RUN_COMMAND
from .plan import ArgPlan, Plan, TensorPlan


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _c_format(text: str) -> str:
    """`text` as a C printf format that prints it as it is."""
    return _c_string(text.replace("%", "%%"))


def _comment(text: str) -> str:
    return text.replace("*/", "* /")


def _header(plan: Plan) -> str:
    expectation = f"phase-1 status {plan.status}" + (f" (check {plan.check})" if plan.check else "")
    if plan.numerics:
        expectation += f", then every output within {plan.standard} of its golden"
    lines = [f"Standalone reproducer of {plan.case_id}",
             f"(cases/{plan.source}), written by `python -m harness.repro c`.", "",
             f"It calls {plan.aclnn} through the public CANN API exactly as the conformance",
             "suite's aclnn backend does, and judges the result as the suite does.",
             f"Expected on {plan.family}: {expectation}.", "",
             "Build (after `source <cann>/set_env.sh`):", f"  {BUILD_COMMAND}",
             f"Run:  {RUN_COMMAND}   (the data files are read from DIR, default: beside the program)",
             "Exit status: 0 PASS (the library did what the case expects), 1 FAIL, 2 a call outside the",
             "operator failed (no verdict), 3 the SoC is not of the family the expectation is for."]
    if plan.note:
        lines += ["", "Case note: " + " ".join(plan.note.split())]
    body = "\n".join(textwrap.fill(line, 100, subsequent_indent="   ") if len(line) > 100 else line
                     for line in lines)
    return "/*\n" + "\n".join((" * " + line).rstrip() for line in _comment(body).splitlines()) + "\n */\n"


def _arg_expr(a: ArgPlan) -> str:
    name = c_decls.ident(a.name)
    if a.kind == "out_pointer" or a.value is None:
        return f"NULL /* {a.name}: NULL, as the case passes it */"
    if a.kind == "tensor":
        return f"t_{name}.handle"
    if a.kind == "int_array":
        return f"a_{name}"
    return f"{c_decls.scalar(a.kind, a.value)} /* {a.name} */"


def _create_args(plan: Plan) -> str:
    """Tensors and attribute objects in signature order, as the backend converts its arguments."""
    out = []
    for a in plan.args:
        if a.value is None or a.kind == "out_pointer":
            continue
        name = c_decls.ident(a.name)
        if a.kind == "tensor":
            t: TensorPlan = a.value
            load = f"load_{'output' if t.is_output else 'input'}(&t_{name}, \"{t.file}\")"
            out.append(f"    if (!{load})\n        goto cleanup;\n" + c_decls.create_tensor(t))
        elif a.kind == "int_array":
            out.append(f"    a_{name} = aclCreateIntArray({name}_value, {len(a.value)});\n"
                       f"    if (!created(a_{name}, \"aclCreateIntArray({a.name})\"))\n        goto cleanup;\n"
                       f"    printf(\"aclCreateIntArray({a.name}): \");\n"
                       f"    print_ints({name}_value, {len(a.value)});\n    printf(\"\\n\");\n")
    return "".join(out)


def _phase1(plan: Plan) -> str:
    args = [_arg_expr(a) for a in plan.args if a.kind != "out_pointer"]
    null = plan.null_out_pointers
    for out in ("workspaceSize", "executor"):
        args.append(_arg_expr(ArgPlan(out, "out_pointer", None)) if out in null else f"&{out}")
    call = f"{plan.aclnn}GetWorkspaceSize(\n        " + ",\n        ".join(args) + ")"
    size = ('    printf("workspace size: not asked (NULL workspaceSize)\\n");\n' if "workspaceSize" in null else
            '    printf("workspace size: %llu\\n", (unsigned long long)workspaceSize);\n')
    return (f"    (void)aclGetRecentErrMsg();     /* drained: a failure below reports only its own text */\n"
            f"    status = {call};\n"
            f"    printf(\"phase 1: {plan.aclnn}GetWorkspaceSize returned %d\\n\", (int)status);\n"
            f"    if (status != 0) {{\n        snprintf(message, sizeof message, \"%s\", recent_error());\n"
            f"        printf(\"phase 1 message: %s\\n\", message);\n    }}\n" + size)


def _not_run(plan: Plan) -> str | None:
    """Why phase 2 is not run after a successful phase 1 (the backend's `not_run`), or None."""
    if plan.null_out_pointers:
        return f"NULL {', '.join(sorted(plan.null_out_pointers))} passed to phase 1"
    unbacked = [t.name for t in plan.tensors if t.unbacked]
    if unbacked:
        return f"{', '.join(unbacked)} unbacked (descriptors without memory)"
    return None


def _phase2(plan: Plan) -> str:
    why = _not_run(plan)
    if why is not None:
        return (f"    if (status == 0) {{\n        not_run = {_c_string(why)};\n        executor_unused = 1;\n"
                f"        printf(\"phase 2: not run (%s)\\n\", not_run);\n    }}\n")
    outputs = [t for t in plan.tensors if t.is_output]
    inputs = [t for t in plan.tensors if not t.is_output]
    downloads = "".join(f"            if (!to_host(t_{c_decls.ident(t.name)}.host, t_{c_decls.ident(t.name)}.dev, "
                        f"t_{c_decls.ident(t.name)}.nbytes))\n                goto cleanup;\n" for t in outputs)
    written = "".join(f"            if (input_changed(&t_{c_decls.ident(t.name)}))\n"
                      f"                snprintf(written + strlen(written), sizeof written - strlen(written), "
                      f"\"%s%s\", written[0] ? \", \" : \"\", {_c_string(t.name)});\n" for t in inputs)
    return f"""    if (status == 0) {{
        if (workspaceSize > 0 && !workspace_alloc(&workspace, workspaceSize, g_workspace_guard)) {{
            executor_unused = 1;
            goto cleanup;
        }}
        phase2 = {plan.aclnn}(workspace, workspaceSize, executor, stream);
        printf("phase 2: {plan.aclnn} returned %d\\n", (int)phase2);
        if (phase2 != 0)
            printf("phase 2 message: %s\\n", recent_error());
        sync = aclrtSynchronizeStream(stream);     /* also surfaces asynchronous kernel errors */
        printf("sync: aclrtSynchronizeStream returned %d\\n", (int)sync);
        if (sync != 0)
            printf("sync message: %s\\n", recent_error());
        if (phase2 == 0 && sync == 0) {{
            downloaded = 1;
{downloads}{written}            if (workspace)
                overrun = workspace_overrun(workspace, workspaceSize, g_workspace_guard, overrun_at, sizeof overrun_at);
        }}
    }}
"""


def _digests(plan: Plan) -> str:
    out = ["    (void)digest;     /* no output to digest: NULL or an unbacked descriptor */\n    (void)downloaded;\n"]
    for t in plan.tensors:
        if not t.is_output or t.unbacked:
            continue
        n = c_decls.ident(t.name)
        out.append(f"    view_digest(&t_{n}, digest);\n"
                   f"    printf(\"digest({t.name}): sha256:%s%s\\n\", digest, downloaded ? \"\" : "
                   f"\" (not downloaded: the poison fill)\");\n"
                   f"    write_file(\"{t.name}.actual.bin\", downloaded ? t_{n}.host : NULL, t_{n}.nbytes);\n")
    return "".join(out[1:] or out)


def _judge(plan: Plan) -> str:
    """The verdict, in the order harness/judge/runner.py judges (every failed step is listed)."""
    check = f" [{plan.check}]" if plan.check else ""
    lines = [f"        if (status != {plan.status})",
             f"            fail(\"phase-1 status %d, expected {plan.status}%s\", (int)status, {_c_string(check)});"]
    if plan.status and plan.check:
        # as the runner holds the record to it: the refusal must come from the expected check, where
        # the library names its checks (the software CANN does; a real CANN's message names none)
        lines += [f"        else if (named_check(message, named, sizeof named) && strcmp(named, {_c_string(plan.check)}) != 0)",
                  f"            fail(\"status %d as expected, but raised by %s instead of {plan.check}: %s\", (int)status, "
                  "named, message);",
                  f"        else if (!named[0])",
                  f"            printf(\"note: the library's message names no check: only the status is compared, not "
                  f"check {plan.check}\\n\");"]
    lines += ["        else if (status == 0 && not_run[0]) {"]
    if plan.kind == "valid":        # a valid case must run; only scenarios may stop after phase 1
        lines.append("            fail(\"phase 2 not run: %s\", not_run);")
    lines += ["        } else if (status == 0 && (phase2 != 0 || sync != 0))",
              "            fail(\"phase 1 returned 0 but phase 2 status %d, stream sync %d\", (int)phase2, (int)sync);",
              "        else if (status == 0) {"]
    if plan.empty_inputs:
        empty = ", ".join(plan.empty_inputs)
        lines += ["            if (workspaceSize)",
                  f"                fail(\"empty %s: phase 1 returned workspace %llu, expected 0\", {_c_string(empty)}, "
                  "(unsigned long long)workspaceSize);",
                  "            printf(\"note: kernel launches of an empty case are not observable through the public "
                  "API\\n\");"]
    lines += ["            if (overrun)",
              f"                fail(\"{reasons.WORKSPACE_OVERRUN}: %lld of the guard bytes after the %llu bytes phase 1 "
              "asked for changed: %s\", (long long)overrun, (unsigned long long)workspaceSize, overrun_at);",
              "            if (written[0])",
              f"                fail(\"{reasons.WROTE_INTO_INPUT} %s: its device buffer changed during phase 2 "
              "(aclnn inputs are const)\", written);"]
    judged = {j.output: j for j in plan.judgements}
    for t in plan.tensors:          # in signature order, as the runner holds each output to both
        if not t.is_output or t.unbacked:
            continue
        n = c_decls.ident(t.name)
        lines += [f"            if (outside_view_damage(&t_{n}, damage, sizeof damage))",
                  f"                fail({_c_format(f'{t.name}: the library {reasons.OUTSIDE_VIEW}: ')[:-1]}%s\", damage);"]
        j = judged.get(t.name)
        if j is None:
            continue
        lines += [f"            compare_output(&t_{n}, \"{j.file}\", {int(j.integer)}, \"{plan.standard}\", \"{j.dtype}\", "
                  f"{n}_thresholds, {j.golden_not_whole}LL, {_c_string(j.shape_mismatch)});"]
    lines.append("        }")
    return "    (void)damage;\n    if (!g_setup_failed) {\n" + "\n".join(lines) + "\n    }\n"


def _cleanup(plan: Plan) -> str:
    """Every release, in reverse order of creation (as CaseObjects releases), then the session."""
    out = ["    if (executor_unused && executor) {\n"
           "        /* the documented way to free an executor no phase 2 consumes: repeatable, then destroyed */\n"
           "        aclSetAclOpExecutorRepeatable(executor);\n"
           "        release(aclDestroyAclOpExecutor(executor), \"aclDestroyAclOpExecutor\");\n    }\n",
           "    if (workspace)\n        release(aclrtFree(workspace), \"aclrtFree(workspace)\");\n"]
    for a in reversed(plan.args):
        if a.value is None or a.kind not in ("tensor", "int_array"):
            continue
        n = c_decls.ident(a.name)
        if a.kind == "int_array":
            out.append(f"    if (a_{n})\n        release(aclDestroyIntArray(a_{n}), \"aclDestroyIntArray({a.name})\");\n")
        else:
            out.append(f"    if (t_{n}.handle)\n        release(aclDestroyTensor(t_{n}.handle), "
                       f"\"aclDestroyTensor({a.name})\");\n"
                       f"    if (t_{n}.dev)\n        release(aclrtFree(t_{n}.dev), \"aclrtFree({a.name})\");\n")
    out.append("    close_session(stream, initialised, device_set);\n")
    out += [f"    free(t_{c_decls.ident(t.name)}.host);\n    free(t_{c_decls.ident(t.name)}.initial);\n"
            for t in plan.tensors]
    return "".join(out)


def _deterministic(plan: Plan) -> str:
    if not plan.deterministic:
        return ""
    # the case's group runs in deterministic mode: both levels, as torch_npu and the harness set it
    return "    if (!set_deterministic())\n        goto cleanup;\n"


def _main(plan: Plan) -> str:
    arrays = [f"*a_{c_decls.ident(a.name)} = NULL" for a in plan.args if a.kind == "int_array" and a.value is not None]
    array_decl = f"    aclIntArray {', '.join(arrays)};\n" if arrays else ""
    named_decl = "\n    char named[64] = \"\";" if plan.status and plan.check else ""     # _judge compares the check
    expectation = f"phase-1 status {plan.status}" + (f" [{plan.check}]" if plan.check else "") + \
        (f", numerics under {plan.standard}" if plan.numerics else "")
    return f"""
int main(int argc, char **argv)
{{
    aclrtStream stream = NULL;
    aclOpExecutor *executor = NULL;
    aclnnStatus status = -1, phase2 = -1;
    aclError sync = -1;
    uint64_t workspaceSize = 0;
    void *workspace = NULL;
    const char *not_run = "";
    char digest[65], written[1024] = "", overrun_at[256] = "", damage[256] = "";
    char message[2048] = "";{named_decl}
    int64_t overrun = 0;
    int initialised = 0, device_set = 0, soc_ok = 0, executor_unused = 0, downloaded = 0;
{array_decl}
    set_data_dir(argc, argv);
    printf("case: %s\\n", {_c_string(plan.case_id)});
    printf("%s\\n", {_c_string(f"expected on {plan.family}: {expectation}")});
    if (!open_session(&stream, &initialised, &device_set))
        goto cleanup;
{_deterministic(plan)}    soc_ok = soc_of_family(SOC_PATTERNS, FAMILY);

{_create_args(plan)}
{_phase1(plan)}
{_phase2(plan)}
{_digests(plan)}
{_judge(plan)}
cleanup:
{_cleanup(plan)}
    return verdict(soc_ok, FAMILY);
}}
"""


def program(plan: Plan) -> str:
    """The whole of repro.c."""
    max_rank = max([len(t.dims) for t in plan.tensors] + [1])
    parts = [_header(plan), c_files.fixed(max_rank, plan.standard if plan.numerics else None)]
    parts += ["\n/* ------------------------------------------------------------------ the case */\n\n",
              c_decls.signature(plan), "\n", c_decls.soc_patterns(plan), "\n"]
    parts += [c_decls.tensor(t) + "\n" for t in plan.tensors]
    parts.append(c_decls.workspace_guard(plan) + "\n")
    parts += [c_decls.int_array(a.name, a.value) for a in plan.args if a.kind == "int_array" and a.value is not None]
    parts += [c_decls.thresholds(j) for j in plan.judgements]
    parts.append(_main(plan))
    return "".join(parts)
