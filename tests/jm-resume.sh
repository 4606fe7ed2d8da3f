#!/bin/bash
# Job Manager crash recovery: kill -9 of spits-jm mid-job, then
# spits-jm --resume: the completed phase is replayed from the journal, the
# interrupted one continues, the TMs that were running re-attach, and the
# output equals an uninterrupted run's (filetasks fails commit_job if it
# sees a task twice). Also: a second JM on a running job, a torn tail, a
# damaged record, non-deterministic generation, a changed module, SIGTERM
# then resume, a job that already finished, and kept results of tasks
# that are generated differently after the resume.
. "$(dirname "$0")/lib.sh"

seq 1 1000 >"$T/in.txt"
expect=$("$PY" -c "
s = sum(k*k for k in range(1, 1001)); c = sum(k**3 for k in range(1, 1001))
print('filetasks: squares=%d total=%d' % (s, s + c))")
cp "$TMODS/filetasks.so" "$T/ft.so"
MOD=$T/ft.so

# jlen NAME: bytes in NAME's journal
jlen() { stat -c %s "$T/$1/journal" 2>/dev/null || echo 0; }

# crash NAME PHASE: a job with two TMs, kill -9 of its JM once PHASE began
# and some of its results are journaled. TMS holds the TMs' pids.
crash() {
    local name=$1 phase=$2
    start_jm "$name" -v --heartbeat 0.2 "$MOD" "$T/in.txt" 4000
    local jm=$JM_PID
    TMS=""
    start_tm "$name" "$name.tm1" -n 2; TMS="$TMS $TM_PID"
    start_tm "$name" "$name.tm2" -n 2; TMS="$TMS $TM_PID"
    wait_for "grep -q 'phase $phase starts' $T/$name.jm.log" 30 "phase $phase of $name"
    local base; base=$(jlen "$name")
    wait_for "[ \$(jlen $name) -gt $((base + 8000)) ]" 30 "results in $name's journal"
    kill -0 $jm 2>/dev/null || fail "$name ended before the kill"
    kill -9 "$(json "$T/$name/jm.json" "d['pid']")"   # spits-jm, not its timeout
    wait $jm 2>/dev/null
}

# resume NAME: spits-jm --resume; RC, and NAME.out2 / NAME.jm2.log
resume() {
    timeout -s KILL 120 "$JM" --resume --jobdir "$T/$1" --bind tcp://127.0.0.1:0 \
        --heartbeat 0.2 >"$T/$1.out2" 2>"$T/$1.jm2.log"
    RC=$?
}

# 1. Crash in phase 2; a second JM is refused while the first runs.
crash a 2
resume a
[ $RC = 0 ] || fail "the resumed job exited $RC"
[ "$(cat "$T/a.out2")" = "$expect" ] || fail "resumed output '$(cat "$T/a.out2")'"
r=$T/a/report.json
[ "$(json $r "(d['resumed'], d['status'])")" = "(True, 'ok')" ] || fail "report: not resumed ok"
[ "$(json $r "[(p['tasks'], p['committed']) for p in d['phases']]")" = "[(1000, 1000), (1000, 1000)]" ] \
    || fail "phase counts $(json $r "d['phases']")"
[ "$(json $r "d['phases'][0]['replayed']")" = 1000 ] || fail "phase 1 was not replayed whole"
[ "$(json $r "0 < d['phases'][1]['replayed'] < 1000")" = True ] || fail "phase 2 replayed $(json $r "d['phases'][1]['replayed']")"
grep -q "phase 1: replayed from the journal (1000 result(s), commit_job returned 0)" "$T/a.jm2.log" \
    || fail "no replay line"
for p in $TMS; do wait $p || fail "a re-attached TM exited $?"; done
grep -q "now runs job" "$T"/a.tm*.log && fail "a TM saw a new job instead of the same one"
grep -q "job manager now at" "$T/a.tm1.log" || fail "TM 1 did not re-attach"
# The finished job cannot be resumed again; it says so and exits 0.
resume a
[ $RC = 0 ] || fail "resuming a finished job exited $RC"
grep -q "already finished" "$T/a.jm2.log" || fail "no 'already finished' line"
[ -s "$T/a.out2" ] && fail "a finished job ran again"

# 2. A second JM on a running job is refused, and changes nothing.
start_jm b --heartbeat 0.2 "$MOD" "$T/in.txt" 4000
jmb=$JM_PID
start_tm b b.tm1 -n 2; tmb=$TM_PID
wait_for "[ \$(jlen b) -gt 4000 ]" 30 "results in b's journal"
out=$("$JM" --resume --jobdir "$T/b" --bind tcp://127.0.0.1:0 2>&1); rc=$?
[ $rc = 1 ] || fail "a second JM on a running job exited $rc"
case $out in *"job dir $T/b is in use: job "*" is running there (spits-jm pid "*) ;; *) fail "second JM said: $out" ;; esac
wait $jmb || fail "job b exited $? after the refused second JM"
[ "$(cat "$T/b.out")" = "$expect" ] || fail "job b printed '$(cat "$T/b.out")'"
wait $tmb

# 3. A torn tail (the last record half-written) is cut off and reported.
crash c 1
truncate -s -5 "$T/c/journal"
start_tm c c.tm3 -n 2
resume c
[ $RC = 0 ] || fail "resume after a torn tail exited $RC"
[ "$(cat "$T/c.out2")" = "$expect" ] || fail "output after a torn tail '$(cat "$T/c.out2")'"
grep -q "cut off a torn tail of [0-9]* byte(s)" "$T/c.jm2.log" || fail "the torn tail was not reported"

# 4. A damaged record before the end stops the resume; the journal is kept.
crash d 1
size=$(jlen d)
cp "$T/d/journal" "$T/d.journal.copy"
printf 'X' | dd of="$T/d/journal" bs=1 seek=$((size / 3)) conv=notrunc status=none
cp "$T/d/journal" "$T/d.journal.damaged"
resume d
[ $RC = 1 ] || fail "resume over a damaged record exited $RC"
[ "$(wc -l <"$T/d.jm2.log")" = 1 ] || fail "not one line: $(cat "$T/d.jm2.log")"
grep -q "journal is damaged at byte [0-9]* (record [0-9]*): .*cannot be resumed" "$T/d.jm2.log" \
    || fail "no damage line: $(cat "$T/d.jm2.log")"
cmp -s "$T/d/journal" "$T/d.journal.damaged" || fail "the damaged journal was changed"
cp "$T/d.journal.copy" "$T/d/journal"     # undamaged: it resumes
resume d
[ $RC = 0 ] && [ "$(cat "$T/d.out2")" = "$expect" ] || fail "resume d after repair: $RC"

# 5. Generation that changed since the crash is caught by the task hashes.
crash e 1
sed -i '1s/.*/424242/' "$T/in.txt"
start_tm e e.tm3 -n 2
resume e
sed -i '1s/.*/1/' "$T/in.txt"
[ $RC = 1 ] || fail "resume with different tasks exited $RC"
grep -q "task 0 is not the task the journal recorded: next_task does not generate deterministically" \
    "$T/e.jm2.log" || fail "divergence not named: $(cat "$T/e.jm2.log")"

# 6. A module that changed since the job started is refused. (New files
# are renamed over it: TMs have the old one mapped.)
crash f 1
cp "$MOD" "$T/ft.so.orig"
cp "$MOD" "$T/ft.so.new" && printf 'x' >>"$T/ft.so.new" && mv "$T/ft.so.new" "$MOD"
resume f
mv "$T/ft.so.orig" "$MOD"
[ $RC = 1 ] || fail "resume with a changed module exited $RC"
grep -q "changed since job .* started (its BLAKE2b hash differs)" "$T/f.jm2.log" \
    || fail "changed module not named: $(cat "$T/f.jm2.log")"

# 7. SIGTERM: the JM stops cleanly, the journal is complete, and it resumes.
start_jm g --heartbeat 0.2 "$MOD" "$T/in.txt" 4000
jmg=$JM_PID
start_tm g g.tm1 -n 2; tmg=$TM_PID
wait_for "[ \$(jlen g) -gt 20000 ]" 30 "results in g's journal"
kill -TERM "$(json "$T/g/jm.json" "d['pid']")"
wait $jmg; rc=$?
[ $rc = 143 ] || fail "SIGTERM: spits-jm exited $rc"
wait $tmg || fail "the TM exited $? after the JM's SIGTERM"
start_tm g g.tm2 -n 2
resume g
[ $RC = 0 ] && [ "$(cat "$T/g.out2")" = "$expect" ] || fail "resume after SIGTERM: $RC '$(cat "$T/g.out2")'"
grep -q "torn tail" "$T/g.jm2.log" && fail "SIGTERM left a torn journal"
# 9. Work done during the outage is kept: the TM finishes its two running
# tasks while there is no JM, re-attaches to the resumed one with those
# results, and they are committed (adopted) instead of run again.
seq 1 6 >"$T/six.txt"
# (Tasks of 3 s: the kill lands well inside the first two even when the
# machine is loaded.)
start_jm i --heartbeat 0.2 "$MOD" "$T/six.txt" 3000000
jmi=$JM_PID
mkdir "$T/i.marks"
FILETASKS_MARKS=$T/i.marks start_tm i i.tm -n 2 --prefetch 0; tmi=$TM_PID
# The TM has started its two tasks (what the JM counts as sent may still
# sit in its own queue), and the kill lands long before they end; then
# both end with no JM to take their results.
wait_for "[ \$(ls $T/i.marks | grep -c '^start\.1\.') = 2 ]" 30 "job i's TM to start its two tasks"
kill -9 "$(json "$T/i/jm.json" "d['pid']")"
wait $jmi 2>/dev/null
[ "$(ls "$T/i.marks" | grep -c '^end\.1\.')" = 0 ] || fail "job i: a task ended before the JM's kill"
wait_for "[ \$(ls $T/i.marks | grep -c '^end\.1\.') = 2 ]" 30 "job i's two tasks to end with no JM"
resume i
[ $RC = 0 ] || fail "job i resumed exited $RC"
[ "$(cat "$T/i.out2")" = "filetasks: squares=91 total=532" ] || fail "job i printed '$(cat "$T/i.out2")'"
[ "$(json "$T/i/report.json" "d['counters']['adopted']")" = 2 ] \
    || fail "adopted $(json "$T/i/report.json" "d['counters']['adopted']"), not the 2 results of the outage"
[ "$(json "$T/i/report.json" "d['counters']['adopt_dropped']")" = 0 ] \
    || fail "job i dropped results of the outage"
wait $tmi || fail "the re-attached TM exited $?"

# 10. The same outage, but every line of the input changes before the
# resume, so the TM's kept results are of tasks the resumed JM no longer
# generates: the journal's generation checkpoint does not match, they are
# dropped (one line says so), and every task runs again.
printf '1\n2\n' >"$T/two.txt"
start_jm k --heartbeat 0.2 "$MOD" "$T/two.txt" 1500000
jmk=$JM_PID
mkdir "$T/k.marks"
FILETASKS_MARKS=$T/k.marks start_tm k k.tm -n 2 --prefetch 0; tmk=$TM_PID
# (the checkpoint of both tasks is journaled: a record of type 6)
wait_for "$PY -c \"
import struct,sys; b=open('$T/k/journal','rb').read(); o=16; t=set()
while o+32<=len(b): t.add(b[o]); o+=40+struct.unpack_from('<I',b,o+24)[0]
sys.exit(6 not in t)\"" 30 "job k's generation checkpoint"
wait_for "[ \$(ls $T/k.marks | grep -c '^start\.1\.') = 2 ]" 30 "job k's TM to start its two tasks"
kill -9 "$(json "$T/k/jm.json" "d['pid']")"
wait $jmk 2>/dev/null
[ "$(ls "$T/k.marks" | grep -c '^end\.1\.')" = 0 ] || fail "job k: a task ended before the JM's kill"
wait_for "[ \$(ls $T/k.marks | grep -c '^end\.1\.') = 2 ]" 30 "job k's two tasks to end with no JM"
printf '11\n12\n' >"$T/two.txt"
resume k
# 11^2 + 12^2 = 265; 265 + 11^3 + 12^3 = 3324
[ $RC = 0 ] && [ "$(cat "$T/k.out2")" = "filetasks: squares=265 total=3324" ] \
    || fail "job k with changed tasks: $RC '$(cat "$T/k.out2")'"
[ "$(json "$T/k/report.json" "(d['counters']['adopted'], d['counters']['adopt_dropped'])")" = "(0, 2)" ] \
    || fail "job k: adopted/dropped $(json "$T/k/report.json" "(d['counters']['adopted'], d['counters']['adopt_dropped'])")"
grep -q "phase 1: 2 result(s) that task managers kept from the previous job manager were not adopted.*checkpoint at [12] task(s) does not match" "$T/k.jm2.log" \
    || fail "job k: no line about the dropped results"
wait $tmk || fail "job k's re-attached TM exited $?"

# 8. --journal off: no journal, so nothing to resume.
start_jm h --journal off "$MODS/bench.so" -n 100
jmh=$JM_PID
start_tm h h.tm -n 2
wait $jmh || fail "the job without a journal exited $?"
[ -e "$T/h/journal" ] && fail "--journal off wrote a journal"
[ "$(json "$T/h/report.json" "d['counters']['journal_syncs']")" = 0 ] || fail "journal syncs without a journal"
resume h
[ $RC = 1 ] && grep -q "has no journal" "$T/h.jm2.log" || fail "resume without a journal: $RC"
echo ok
