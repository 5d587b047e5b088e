"""How a reproducer is built and run: one line each, the same against an installed CANN and against
the software CANN (whose tree has the same include/ and lib64/ names and its own set_env.sh).

Libraries as the ops-nn examples link them (acl_abi.md 1.3): the operator library libopapi_nn with
the ops-math library it depends on, the meta API libnnopbase, and the runtime libacl_rt. Not
libascendcl: CANN 9 keeps it only as a compatibility name (acl_abi.md 1.8), and a compatibility
library that only NEEDs libacl_rt (the software CANN's, for one) gives the linker no symbols.
"""
from __future__ import annotations

BUILD_COMMAND = ('cc repro.c -o repro -I"$ASCEND_HOME_PATH/include" -L"$ASCEND_HOME_PATH/lib64" '
                 '-lopapi_nn -lopapi_math -lnnopbase -lacl_rt -lm')
RUN_COMMAND = "./repro [DIR]"
