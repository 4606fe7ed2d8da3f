#!/bin/bash
# Input that used to be taken and then misreported, or reported wrongly:
#   a. spits-tm --end-time in the past, epoch 0 or +0: refused in one line;
#   b. a number with a blank or a sign in front, in every program's
#      options: refused in one line naming the option;
#   c. spits-plot that cannot write its output says why, naming the path,
#      and leaves what was there (a symlink, an older file) as it was;
#   d. a peer's host name with escape sequences, a newline, DEL or a C1
#      control reaches the JM's log and spits-status escaped;
#   e. the JM's log does not blame a key for a client that gave up on a
#      stopped JM;
#   f. --memory-limit's log line says how far over the limit the JM is;
#   g. spits-tm labels its hop "(relay)" by what answered, not by the
#      option that named it.
. "$(dirname "$0")/lib.sh"

ST=$top_builddir/tools/spits-status
PLOT=$top_builddir/tools/spits-plot
ALLOC=$top_builddir/tools/spits-alloc
# (HOSTILE: to run this file against binaries built without its "named")
H=${HOSTILE:-$top_builddir/tests/hostile}

# printable FILE: true if FILE is UTF-8 lines of no control character
printable() {
    "$PY" - "$1" <<'PY'
import sys
try:
    s = open(sys.argv[1], 'rb').read().decode('utf-8')
except UnicodeDecodeError:
    sys.exit(1)
sys.exit(any(c != '\n' and (ord(c) < 32 or 0x7f <= ord(c) <= 0x9f) for c in s))
PY
}

# expect RC LINE SECONDS COMMAND...: exit status RC within SECONDS and
# stderr exactly LINE
expect() {
    local want=$1 line=$2 secs=$3; shift 3
    timeout "$secs" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc = "$want" ] && [ "$(cat "$T/err")" = "$line" ] \
        || fail "$* exited $rc (not $want), said '$(cat "$T/err")', not '$line'"
}

# --- a. an end time that is not to come
for when in +0 1 1970-01-01T00:00:00 2000-01-01T00:00:00; do
    case $when in
    +0) iso="$(date -u +%Y-%m-%dT)*" ;;
    1) iso=1970-01-01T00:00:01Z ;;
    1970*) iso=1970-01-01T00:00:00Z ;;
    *) iso=2000-01-01T00:00:00Z ;;
    esac
    TZ=UTC timeout 10 "$TM" --connect tcp://127.0.0.1:1 --insecure --wait 1 \
        --end-time "$when" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc = 2 ] && case $(cat "$T/err") in
        "spits-tm: error: --end-time '$when' is "$iso", not in the future: give a time to come, +SEC with SEC above 0, or none (see spits-tm --help)") true ;;
        *) false ;; esac || fail "a: --end-time $when: exit $rc, '$(cat "$T/err")'"
done
# (what is to come still goes)
"$TM" --connect tcp://127.0.0.1:1 --insecure --check-options --end-time +3600 \
    || fail "a: --end-time +3600 refused"

# --- b. blanks and signs before a number
for v in ' 4' '+4' '4 '; do
    expect 2 "spits-tm: error: --workers wants a number from 1 to 4096, not '$v' (see spits-tm --help)" 10 \
        "$TM" --connect tcp://127.0.0.1:1 --insecure --wait 1 --workers "$v"
    expect 2 "spits-tm: error: --wait wants seconds, not '$v' (see spits-tm --help)" 10 \
        "$TM" --connect tcp://127.0.0.1:1 --insecure --wait "$v"
    expect 2 "spits-jm: error: --max-copies wants a number from 1 to 8, not '$v' (see spits-jm --help)" 10 \
        "$JM" --jobdir "$T/b" --check-options --max-copies "$v" "$MODS/pi.so"
    expect 2 "spits-jm: error: --tm-timeout wants seconds (at least 0.1), not '$v' (see spits-jm --help)" 10 \
        "$JM" --jobdir "$T/b" --check-options --tm-timeout "$v" "$MODS/pi.so"
    expect 2 "spits-run: error: --workers wants a number from 1 to 4096, not '$v' (see spits-run --help)" 10 \
        "$RUN" --workers "$v" "$T/none.so"
    expect 2 "spits-status: error: --timeout wants seconds, not '$v' (see spits-status --help)" 10 \
        "$ST" --jobdir "$T/none" --timeout "$v"
    expect 2 "spits-alloc: error: --max-queued wants a number from 1 to 10000, not '$v' (see spits-alloc --help)" 5 \
        "$ALLOC" --jobdir "$T/none" --dry-run --max-queued "$v"
done
# (the documented relative end time keeps its sign, and seconds their
# decimals)
"$TM" --connect tcp://127.0.0.1:1 --insecure --check-options --end-time +5.5 --wait .5 \
    || fail "b: +SEC or .5 refused"
# and the port of an endpoint is a number too
expect 2 "spits-tm: error: --connect tcp://127.0.0.1:+80: '+80' is not a port (1-65535) (see spits-tm --help)" 10 \
    "$TM" --connect tcp://127.0.0.1:+80 --insecure --wait 1

# --- c. spits-plot that cannot write
echo '{"seconds": 2, "timeline": {"points": [[0, 0], [1, 3], [2, 5]], "tm_events": []}, "tms": []}' \
    >"$T/r.json"
mkdir "$T/c"
# The disk is full (a link to /dev/full): the error, and the link stays.
ln -s /dev/full "$T/c/full.svg"
expect 1 "spits-plot: error: cannot write $T/c/full.svg: No space left on device" 10 \
    "$PLOT" --report "$T/r.json" -o "$T/c/full.svg"
[ "$(readlink "$T/c/full.svg")" = /dev/full ] || fail "c: the user's symlink was removed"
# rsvg-convert missing, or failing: an older PNG is kept as it was, and no
# temporary file is left.
mkdir "$T/c/bin" && printf '#!/bin/sh\necho broken >&2; exit 1\n' >"$T/c/bin/rsvg-convert" &&
    chmod +x "$T/c/bin/rsvg-convert" && echo older >"$T/c/keep.png" || fail "c: setup"
expect 1 "spits-plot: error: a PNG needs rsvg-convert (Debian package librsvg2-bin); -o FILE.svg needs nothing" 10 \
    env PATH="$T/nopath" "$PLOT" --report "$T/r.json" -o "$T/c/keep.png"
[ "$(cat "$T/c/keep.png")" = older ] || fail "c: the older PNG was removed or changed"
PATH="$T/c/bin:$PATH" timeout 10 "$PLOT" --report "$T/r.json" -o "$T/c/keep.png" 2>"$T/err"
rc=$?
[ $rc = 1 ] && [ "$(cat "$T/err")" = "broken
spits-plot: error: rsvg-convert could not render the PNG" ] || fail "c: a failing rsvg-convert: exit $rc, '$(cat "$T/err")'"
[ "$(cat "$T/c/keep.png")" = older ] || fail "c: a failed render changed the older PNG"
# A PNG that renders (a stand-in rsvg-convert that echoes the SVG it was
# piped) replaces the older one whole.
printf '#!/bin/sh\nexec cat\n' >"$T/c/bin/rsvg-convert"
PATH="$T/c/bin:$PATH" "$PLOT" --report "$T/r.json" -o "$T/c/keep.png" || fail "c: a PNG exited $?"
head -c 4 "$T/c/keep.png" | grep -q "<svg" || fail "c: the PNG is not what rsvg-convert made"
# A symlink to a file stays a symlink, its target replaced.
echo older >"$T/c/target.svg" && ln -s target.svg "$T/c/link.svg"
"$PLOT" --report "$T/r.json" -o "$T/c/link.svg" || fail "c: through a symlink: exit $?"
[ "$(readlink "$T/c/link.svg")" = target.svg ] && head -c 4 "$T/c/target.svg" | grep -q "<svg" \
    || fail "c: the symlink was replaced, or its target not written"
[ "$(ls "$T/c" | tr '\n' ' ')" = "bin full.svg keep.png link.svg target.svg " ] \
    || fail "c: files left behind: $(ls "$T/c")"

# --- d. a host name made to clear the screen, set the terminal's title,
# ring its bell and forge a log line, with DEL and a C1 control (CSI); a
# letter of another script passes (bytes that are no UTF-8 are no JSON:
# the JM drops the HELLO, and tests/unit escapes them)
start_jm d "$MODS/bench.so" -n 2
wait_for "[ -s $T/d/jm.json ]" 30 "d: the JM to announce itself"
ep=$(json "$T/d/jm.json" "d['endpoint']")
evil=$'ev\e[2J\e]0;x\a\nspits-jm: TM forged joined\x7f\xc2\x9b-n\xc3\xb3'
shown='ev\x1b[2J\x1b]0;x\x07\x0aspits-jm: TM forged joined\x7f\xc2\x9b-n'$'\xc3\xb3'
"$H" named "$ep" "$T/d/tm.key" "$evil" 4 >"$T/d.hostile.log" 2>&1 &
hpid=$!
PIDS="$PIDS $hpid"
wait_for "grep -q 'joined with 1 worker' $T/d.jm.log" 30 "d: the named peer to join"
grep -qF "spits-jm: TM $shown:$hpid joined with 1 worker(s)" "$T/d.jm.log" \
    || fail "d: the JM logged: $(grep -a joined "$T/d.jm.log" | cat -A)"
printable "$T/d.jm.log" || fail "d: raw bytes in the JM's log: $(cat -A "$T/d.jm.log")"
grep -q "^spits-jm: TM forged" "$T/d.jm.log" && fail "d: a forged log line"
"$ST" --jobdir "$T/d" >"$T/d.table" || fail "d: spits-status exited $?"
grep -qF "  ${shown:0:20} " "$T/d.table" || fail "d: spits-status showed: $(cat -A "$T/d.table")"
printable "$T/d.table" || fail "d: raw bytes in spits-status's table: $(cat -A "$T/d.table")"
wait $hpid || fail "d: the named peer was not welcomed: $(cat "$T/d.hostile.log")"
jm_d=$(json "$T/d/jm.json" "d['pid']")   # (JM_PID is its timeout's)

# --- e. a spits-status that gives up on a stopped JM
kill -STOP $jm_d
"$ST" --jobdir "$T/d" --timeout 1 >/dev/null 2>"$T/err" && fail "e: a stopped JM answered"
kill -CONT $jm_d
wait_for "grep -q 'failed the CurveZMQ handshake' $T/d.jm.log" 30 "e: the JM to log the handshake"
grep -q "refused a connection that failed the CurveZMQ handshake: no or a wrong server key, or a client that gave up waiting (1 so far)\$" \
    "$T/d.jm.log" || fail "e: the JM logged: $(grep handshake "$T/d.jm.log")"
kill $jm_d

# --- f. far over --memory-limit (40 MB tasks, a 64 MiB limit) is not
# "near" it
start_jm f --memory-limit 67108864 "$MODS/bench.so" -n 2 -t 40000000
start_tm f f.tm -n 1
wait $JM_PID || fail "f: spits-jm exited $?"
wait $TM_PID || fail "f: the TM exited $?"
grep -Eq "phase 1: the job manager's memory \(([0-9]+) MiB, and [0-9]+ MiB of tasks in flight\) is [0-9]+\.[0-9] times --memory-limit \(64 MiB\)" \
    "$T/f.jm.log" || fail "f: the JM logged: $(grep memory "$T/f.jm.log")"
"$PY" - "$T/f.jm.log" <<'PY' || fail "f: the ratio logged is not the JM's memory over the limit"
import re, sys
m = re.search(r"memory \((\d+) MiB, and (\d+) MiB of tasks in flight\) is ([\d.]+) times", open(sys.argv[1]).read())
sys.exit(not abs((int(m[1]) + int(m[2])) / 64 - float(m[3])) < 0.1)
PY

# --- g. "(relay)" by what answered: --via the JM's own endpoint is no
# relay, and --connect to a relay is one
start_jm g "$MODS/bench.so" -n 200 -s 2000 -G "$T/gate-g"
wait_for "[ -s $T/g/jm.json ]" 30 "g: the JM to announce itself"
jm_g=$(json "$T/g/jm.json" "d['endpoint']")
start_tm g g.via -n 1 --via "$jm_g"
port=$(free_port)
start_relay g g.relay "$port"
"$TM" --connect "tcp://127.0.0.1:$port" --key-file "$T/g/tm.key" --wait 60 \
    --reconnect-timeout 30 -n 1 >"$T/g.conn.log" 2>&1 &
PIDS="$PIDS $!"
wait_for "grep -q 'joined job' $T/g.via.log && grep -q 'joined job' $T/g.conn.log" 30 \
    "g: both TMs to join"
grep -q "spits-tm: joined job [0-9a-f]* at $jm_g with 1 worker(s)\$" "$T/g.via.log" \
    || fail "g: --via the JM: $(grep joined "$T/g.via.log")"
grep -q "spits-tm: joined job [0-9a-f]* at tcp://127.0.0.1:$port (relay) with 1 worker(s)\$" \
    "$T/g.conn.log" || fail "g: --connect to a relay: $(grep joined "$T/g.conn.log")"
grep -q "spits-tm: relay joined job [0-9a-f]* at $jm_g\$" "$T/g.relay.log" \
    || fail "g: the relay: $(grep joined "$T/g.relay.log")"
touch "$T/gate-g"
exit 0
