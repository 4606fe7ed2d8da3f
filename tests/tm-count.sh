#!/bin/bash
# Counting Task Managers: a TM that re-attaches is the same TM.
# Two TMs join; the JM is stopped (SIGSTOP) until both TMs have found it
# silent and said HELLO again (each TM logs that once per outage), then
# resumed: it declares each TM lost once (silent past --tm-timeout, or
# replaced by its own new HELLO) and each re-attaches once, however many
# copies of its HELLO it queued meanwhile (they carry one outage number).
# The job's result is exact, and report.json counts 2 TMs, 2 joins, 2
# re-attaches, 2 losses and no TM lost for good; the JM's log and
# spits-status say the same. With --max-copies 1 a task runs twice only if
# a loss requeued it, so the duplicates are at most the tasks the 2 losses
# requeued (not 0: a resumed JM may find a TM silent before reading the
# results it queued, and send those tasks to the other TM). A queued HELLO
# copy taken for a new outage requeued the TM's fresh tasks each time.
. "$(dirname "$0")/lib.sh"

n=300
start_jm job --tm-timeout 3 --heartbeat 0.5 --max-copies 1 "$MODS/bench.so" -n $n -s 20000 -G "$T/gate"
jm=$JM_PID
start_tm job tm1 -n 2; t1=$TM_PID
start_tm job tm2 -n 2; t2=$TM_PID
wait_for "[ \$(grep -c joined $T/job.jm.log) -ge 2 ]" 30 "both TMs to join"
wait_for "[ \"\$(committed job)\" -ge 4 ] 2>/dev/null" 30 "the job to commit tasks"
# $jm is timeout(1); the JM itself is the pid in jm.json.
jmpid=$(json "$T/job/jm.json" "d['pid']")
kill -STOP $jmpid
wait_for "grep -q 'saying HELLO again' $T/tm1.log && grep -q 'saying HELLO again' $T/tm2.log" \
    60 "both TMs to say HELLO again to the stopped JM"
kill -CONT $jmpid
wait_for "grep -q 'TM .*:$t1 re-attached' $T/job.jm.log && grep -q 'TM .*:$t2 re-attached' $T/job.jm.log" \
    60 "both TMs to re-attach"
touch "$T/gate"
wait $jm || fail "the job exited $?"
wait $t1 || fail "TM 1 exited $?"
wait $t2 || fail "TM 2 exited $?"
[ "$(cat "$T/job.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/job.out")'"

r=$T/job/report.json
count() { json "$r" "d['counters']['$1']"; }
joined=$(grep -c '^spits-jm: .*TM .* joined with' "$T/job.jm.log")
reattached=$(grep -c '^spits-jm: .*TM .* re-attached with' "$T/job.jm.log")
lost=$(grep -c '^spits-jm: .*TM .* lost (' "$T/job.jm.log")
echo "tm-count: $joined join(s), $reattached re-attach(es), $lost loss(es) logged"
[ "$joined" = 2 ] || fail "the JM logged $joined joins, not 2"
[ "$reattached" = 2 ] || fail "the JM logged $reattached re-attaches, not 2 (one per TM)"
[ "$lost" = 2 ] || fail "the JM logged $lost losses, not 2 (one per TM)"
[ "$(count committed)" = $n ] || fail "committed $(count committed), not $n"
[ "$(count tms)" = 2 ] || fail "report.json counts $(count tms) TMs, not 2"
[ "$(count tm_joins)" = 2 ] || fail "report.json counts $(count tm_joins) joins, not 2"
[ "$(count tm_reattaches)" = "$reattached" ] || fail "report.json counts $(count tm_reattaches) re-attaches, the log $reattached"
[ "$(count tm_losses)" = "$lost" ] || fail "report.json counts $(count tm_losses) losses, the log $lost"
requeued=$(sed -n 's/^spits-jm: .*TM .*; \([0-9]*\) task(s) requeued$/\1/p' "$T/job.jm.log" | awk '{s += $1} END {print s + 0}')
[ "$(count requeued)" = "$requeued" ] || fail "report.json counts $(count requeued) requeued, the log $requeued"
[ "$(count duplicates)" -le "$requeued" ] || fail "report.json counts $(count duplicates) duplicates, more than the $requeued tasks requeued"
[ "$(count tms_lost_for_good)" = 0 ] || fail "report.json counts $(count tms_lost_for_good) TMs lost for good, not 0"
[ "$(json "$r" "len(d['tms'])")" = 2 ] || fail "report.json lists $(json "$r" "len(d['tms'])") TMs, not 2"
[ "$(json "$r" "sorted(t['reattaches'] for t in d['tms']) == sorted([$(grep -c "TM .*:$t1 re-attached" "$T/job.jm.log"), $(grep -c "TM .*:$t2 re-attached" "$T/job.jm.log")])")" = True ] \
    || fail "report.json's per-TM re-attaches differ from the log"
# spits-status on the finished job says the same.
"$top_builddir/tools/spits-status" --jobdir "$T/job" >"$T/status.txt" || fail "spits-status failed"
grep -qF "2 task manager(s) ($reattached re-attach(es), $lost loss(es), 0 lost for good)" "$T/status.txt" \
    || fail "spits-status said: $(cat "$T/status.txt")"
echo ok
