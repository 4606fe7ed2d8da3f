#!/bin/bash
# What a module's workers print on stdout is the Task Manager's log, not
# the job's result: spits-run's stdout holds the committer's output only,
# and each worker line reaches stderr after "spits-tm: module stdout: ",
# with threads, with --isolate, and from a spits-tm started by hand.
. "$(dirname "$0")/lib.sh"

CHATTY=${CHATTY:-$TMODS/chatty.so}
sum=$((50 * 51 / 2))

# check NAME: NAME.out is the result alone; NAME.err has the 50 lines
check() {
    [ "$(cat "$T/$1.out")" = "chatty: sum=$sum" ] || fail "$1: stdout is '$(head -c 300 "$T/$1.out")'"
    local n
    n=$(grep -c "^spits-tm: module stdout: worker: chunk [0-9]*$" "$T/$1.err")
    [ "$n" = 49 ] || fail "$1: $n prefixed worker lines, not 49: $(head -5 "$T/$1.err")"
    grep -q "^spits-tm: module stdout: worker: no newline hereworker: chunk 1$" "$T/$1.err" \
        || fail "$1: the unfinished line was not joined: $(grep -n chunk "$T/$1.err" | head -3)"
}

for iso in "" --isolate; do
    name=run${iso:+-isolate}
    timeout 60 "$RUN" -q -n 2 $iso "$CHATTY" 50 >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
    [ $rc = 0 ] || fail "spits-run $iso exited $rc: $(tail -3 "$T/$name.err")"
    check "$name"
done

# A TM started by hand (as from a batch script): the same.
start_jm h "$CHATTY" 50
jm=$JM_PID
"$TM" --jobdir "$T/h" --wait 60 -n 2 >"$T/tm.out" 2>"$T/tm.err" &
tm=$!
PIDS="$PIDS $tm"
wait $jm || fail "the JM exited $?"
wait $tm || fail "the TM exited $?"
[ -s "$T/tm.out" ] && fail "the TM wrote on its stdout: $(head -3 "$T/tm.out")"
cp "$T/h.out" "$T/hand.out"
cp "$T/tm.err" "$T/hand.err"
check hand
echo ok
