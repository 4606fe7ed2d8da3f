#!/bin/bash
# mutants-gen.sh - the suite's run of the generated mutants of serving/
# (tests/mutants-gen.py: operators swapped, constants off by one,
# statements deleted, in the files of tests/mutants-gen.files). The whole
# set takes minutes, so the suite runs a fixed stride of it
# (MUT_GEN_STRIDE, default 8: the same mutants while the code
# is the same) on both cores; `tests/mutants-gen.py --all` runs them all.
# It fails if the kill rate over the mutants run, those listed in
# tests/mutants.equiv aside, is under 90 %, or if that list names a
# mutant the code no longer has. Survivors are printed either way.
#
#   mutants-gen.sh [ARG...]   (ARGs go to mutants-gen.py instead of --sample)
. "$top_srcdir/tests/lib.sh"

# Plain builds whatever the tree's build, as in mutants.sh.
if sanitized; then
    echo "SKIP: the mutants are built without sanitizers; the plain build's check runs them"
    exit 77
fi
[ $# -gt 0 ] || set -- --sample "${MUT_GEN_STRIDE:-8}"
python3 "$top_srcdir/tests/mutants-gen.py" --jobs 2 "$@" >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc = 0 ] || fail "mutants-gen.py: status $rc (a self-test to add, or a mutant to list with why in tests/mutants.equiv)"
exit 0
