#!/bin/bash
# Broken links: two TMs reach the JM through slowlink.py, 20 ms
# one way at 10 MB/s. Mid-job every link stalls (no byte crosses, no
# connection closes, as in a network partition) for longer than the JM's
# --tm-timeout: the JM declares both TMs lost (silent) and takes their
# tasks back, and each TM looks for the JM; when the links flow again both
# re-attach as the same TMs. Then every connection is cut with a reset:
# the TMs connect again and re-attach. The result is exact and no task is
# committed twice (the bench module fails a job that commits one twice),
# and at the end both TMs get the JM's END over the delayed link and exit
# at once.
. "$(dirname "$0")/lib.sh"

# (Under a sanitizer the stall and the re-attaches take longer while the
# tasks, sleeps, do not: with 400 every task but the gated last one was
# done before the cut, and no commit could follow it.)
n=400
sanitized && n=1200
start_jm st --heartbeat 0.5 --tm-timeout 3 "$MODS/bench.so" -n $n -s 50000 -G "$T/st.gate"
jm=$JM_PID
start_proxy st st 10000000 20
proxy=$PROXY_PID
tms=
for i in 1 2; do
    "$TM" --connect "$PROXY_EP" --key-file "$T/st/tm.key" \
        --reconnect-timeout 120 -n 2 >"$T/st.tm$i.log" 2>&1 &
    tms="$tms $!"
    PIDS="$PIDS $!"
done
counts() { live st "(lambda c: $1)(d['tm_counts'])"; }
wait_for "[ \"\$(counts \"c['joins']\")\" = 2 ] && [ \"\$(committed st)\" -ge 40 ] 2>/dev/null" 60 \
    "both TMs to join and 40 commits"
lost0=$(counts "c['losses']")
back0=$(counts "c['reattaches']")

# The stall: both TMs go silent for the JM, and the JM for them.
kill -USR1 $proxy
wait_for "[ \"\$(counts \"c['losses']\")\" -ge $((lost0 + 2)) ] 2>/dev/null" 60 \
    "the JM to lose both TMs behind the stalled links"
[ "$(live st "d['tasks']['requeued'] > 0")" = True ] || fail "no task taken back from the silent TMs"
wait_for "grep -q 'looking for it' $T/st.tm1.log && grep -q 'looking for it' $T/st.tm2.log" 60 \
    "both TMs to look for the silent JM"
c1=$(committed st)
kill -USR2 $proxy
wait_for "[ \"\$(counts \"c['reattaches']\")\" -ge $((back0 + 2)) ] 2>/dev/null" 60 \
    "both TMs to re-attach once the links flow"
wait_for "[ \"\$(committed st)\" -gt $c1 ] 2>/dev/null" 60 "commits after the stall"

# The cut: every connection reset at once.
back1=$(counts "c['reattaches']")
c2=$(committed st)
kill -HUP $proxy
wait_for "[ \"\$(counts \"c['reattaches']\")\" -ge $((back1 + 2)) ] 2>/dev/null" 60 \
    "both TMs to re-attach after their connections were cut"
wait_for "[ \"\$(committed st)\" -gt $c2 ] 2>/dev/null" 60 "commits after the cut"

touch "$T/st.gate"
wait $jm || fail "the job exited $?"
# END reaches both over the long link, though the JM closes right after
# it: they exit at once, not after --reconnect-timeout.
t0=$SECONDS
for p in $tms; do wait $p || fail "a TM exited $?"; done
[ $((SECONDS - t0)) -le 30 ] || fail "the TMs took $((SECONDS - t0)) s to exit: END was lost"
[ "$(cat "$T/st.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/st.out")'"
r=$T/st/report.json
[ "$(json $r "d['counters']['committed']")" = $n ] || fail "committed: $(json $r "d['counters']")"
# Two TMs, each the same TM throughout: two joins, the rest re-attaches.
[ "$(json $r "d['counters']['tm_joins']")" = 2 ] || fail "joins: $(json $r "d['counters']")"
grep -q "links stalled" "$T/st.proxy.log" && grep -q "links flow again" "$T/st.proxy.log" &&
    grep -Eq "([2-9]|[1-9][0-9]+) connection\(s\) cut" "$T/st.proxy.log" ||
    fail "proxy: $(cat "$T/st.proxy.log")"
json $r "'counters: ' + ', '.join('%s %s' % (k, d['counters'][k]) for k in ('tm_joins', 'tm_reattaches', 'tm_losses', 'requeued', 'resent', 'duplicates'))"
cat "$T/st.jm.log"
echo ok
