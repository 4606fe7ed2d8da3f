#!/bin/bash
# spits-status --serve against bad input and abuse: a bad or busy address
# is one clear line and a non-zero exit; an address beyond loopback is
# served with one warning; libmicrohttpd's own messages carry the prefix;
# a 405 says what is allowed; a stopped job manager is named as such; and
# a slowloris without the token (more slow sockets than the dashboard has
# slots, each sending a header line every second, reconnecting when
# dropped) neither keeps its connections past the header deadline nor
# keeps the token holder out.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || fail "curl is not installed"
ST=$top_builddir/tools/spits-status
usage="(see spits-status --help)"

# a. Bad addresses: one line naming the address and the problem, exit 2.
# (Each is run under timeout: a binary that takes one serves until killed.)
port=$(free_port)
while IFS='|' read -r bad why; do
    timeout 5 "$ST" --jobdir "$T/none" --serve "$bad" >"$T/bad.out" 2>&1
    rc=$?
    want="spits-status: error: --serve wants ADDR:PORT with an IPv4 address (127.0.0.1:8765), not '$bad': $why $usage"
    [ $rc = 2 ] && [ "$(cat "$T/bad.out")" = "$want" ] ||
        fail "--serve '$bad': exit $rc, said: $(cat "$T/bad.out")"
done <<EOF
127.0.0.1: $port|it has a space
 127.0.0.1:$port|it has a space
127.0.0.1:$port |it has a space
127.0.0.1:+$port|the port is not a number from 0 to 65535
127.0.0.1:-0|the port is not a number from 0 to 65535
127.0.0.1:99999|the port is not a number from 0 to 65535
127.0.0.1|it has no :PORT
:$port|it has no ADDR before the :PORT
localhost:$port|ADDR is not an IPv4 address
EOF

# b. A busy port: one line naming the address and the reason, exit 1.
"$PY" -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)" >"$T/busy.port" &
PIDS="$PIDS $!"
wait_for "[ -s '$T/busy.port' ]" 10 "a socket to hold a port"
busy=$(cat "$T/busy.port")
timeout 5 "$ST" --jobdir "$T/none" --serve "127.0.0.1:$busy" >"$T/busy.out" 2>&1
rc=$?
want="spits-status: error: cannot listen on 127.0.0.1:$busy: Address already in use (give another with --serve ADDR:PORT)"
[ $rc = 1 ] && [ "$(cat "$T/busy.out")" = "$want" ] ||
    fail "--serve on a busy port: exit $rc, said: $(cat "$T/busy.out")"

# c. Beyond loopback: served, with one warning (in a network namespace of
# its own where one can be made, so that nothing outside sees the port);
# on loopback, not a word. SIGINT stops it with exit 0.
ns="unshare -rn"
$ns true 2>/dev/null || ns=""
for a in 0.0.0.0:0 127.0.0.1:0; do
    $ns timeout --preserve-status -s INT 2 "$ST" --jobdir "$T/none" --serve "$a" >"$T/warn.out" 2>"$T/warn.err"
    rc=$?
    want=""
    [ "$a" = 0.0.0.0:0 ] &&
        want="spits-status: warning: serving on 0.0.0.0:0, beyond this host's loopback: the page and its token travel in plain HTTP (tunnel to 127.0.0.1 with ssh -L instead)"
    [ $rc = 0 ] && grep -q "^spits-status: serving on http://${a%:0}:[0-9]*/?token=[0-9a-f]*$" "$T/warn.out" &&
        [ "$(cat "$T/warn.err")" = "$want" ] ||
        fail "--serve $a: exit $rc, printed '$(cat "$T/warn.out")', said '$(cat "$T/warn.err")'"
done

# A job that stays up (no TM: nothing runs) and its page.
start_jm live "$MODS/bench.so" -n 100
wait_for "live live 'd[\"job_id\"]' >/dev/null" 30 "the job manager to answer STATUS"
start_serve live --timeout 1
base=$BASE token=$TOKEN url=$URL
sport=${base##*:}
sport=${sport%/}
code() { curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$@"; }
[ "$(code "${base}status.json?token=$token")" = 200 ] || fail "status.json with the token was refused"

# d. A 405 says which methods are allowed.
curl -s -D "$T/405.head" -o /dev/null --max-time 5 -X POST --data x "$url"
tr -d '\r' <"$T/405.head" >"$T/405.h"
head -1 "$T/405.h" | grep -q '^HTTP/1.1 405 ' && grep -qx 'Allow: GET, HEAD' "$T/405.h" ||
    fail "a POST with the token was answered: $(cat "$T/405.h")"

# e. libmicrohttpd's messages go through the program's log: a header too
# big for it, three times, is one prefixed line (repeats are counted).
for i in 1 2 3; do
    "$PY" - "$sport" >>"$T/431.out" <<'PY'
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)
s.sendall(b'GET / HTTP/1.1\r\nHost: x\r\nX-big: ' + b'a' * 70000 + b'\r\n\r\n')
print(s.recv(64).split(b'\r\n')[0].decode())
PY
done
[ "$(sort -u "$T/431.out")" = "HTTP/1.1 431 Request Header Fields Too Large" ] ||
    fail "a too big header was answered: $(cat "$T/431.out")"
wait_for "grep -q 431 '$T/live.serve.log'" 5 "libmicrohttpd's message about the big header"
[ "$(grep -c 431 "$T/live.serve.log")" = 1 ] &&
    grep -q "^spits-status: warning: libmicrohttpd: Error processing request (HTTP response code is 431" "$T/live.serve.log" ||
    fail "libmicrohttpd's message was not one prefixed line: $(cat "$T/live.serve.log")"
grep -v '^spits-status: ' "$T/live.serve.log" && fail "a line on stderr without the prefix"

# f. A slow header without the token is dropped at the deadline (3 s),
# however steadily it comes (a line a second).
"$PY" - "$sport" >"$T/slow.out" <<'PY'
import socket, sys, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=1)
t0 = time.monotonic()
s.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n')
while time.monotonic() - t0 < 10:
    try:
        if s.recv(4096) == b'':
            break
    except socket.timeout:
        try:
            s.sendall(b'X-slow: 1\r\n')
        except OSError:
            break
    except OSError:
        break
print('%.1f' % (time.monotonic() - t0))
PY
slow=$(cat "$T/slow.out")
"$PY" -c "import sys; sys.exit(not 2.5 <= $slow <= 4.5)" ||
    fail "a slow header without the token was dropped after $slow s, not 3 to 4.5 s"
echo "a slow header without the token: dropped after $slow s"

# g. Slowloris: 80 sockets without the token (the dashboard takes 64
# without it), each sending a header line a second and reconnecting when
# dropped. Its state file: connections made, open now, the oldest's age.
cat >"$T/loris.py" <<'PY'
import os, socket, sys, time
port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks, made, tick = {}, 0, time.monotonic()
while True:
    while len(socks) < n:
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=2)
            s.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n')
        except OSError:
            break
        s.setblocking(False)
        socks[s] = time.monotonic()
        made += 1
    now = time.monotonic()
    line = now >= tick + 1
    for s in list(socks):
        try:
            gone = s.recv(4096) == b''
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if not gone and line:
            try:
                s.sendall(b'X-slow: 1\r\n')
            except OSError:
                gone = True
        if gone:
            del socks[s]
            s.close()
    if line:
        tick = now
    oldest = now - min(socks.values()) if socks else 0
    with open(out + '.tmp', 'w') as f:
        f.write('%d %d %.1f\n' % (made, len(socks), oldest))
    os.replace(out + '.tmp', out)
    time.sleep(0.1)
PY
fds() { ls "/proc/$SERVE_PID/fd" | wc -l; }
fds0=$(fds)
"$PY" "$T/loris.py" "$sport" 80 "$T/loris.state" 2>"$T/loris.log" &
LORIS=$!
PIDS="$PIDS $LORIS"
wait_for "[ -s '$T/loris.state' ] && [ \$(cut -d' ' -f1 '$T/loris.state') -ge 80 ]" 20 \
    "the slowloris to open 80 connections"
sleep 2
# The token holder gets in, each time within the 5 s curl allows.
for i in 1 2 3 4 5; do
    got=$(curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' "${base}status.json?token=$token")
    [ "${got% *}" = 200 ] || fail "under a slowloris, request $i with the token got '$got' ($(cat "$T/loris.state"))"
    echo "under a slowloris, request $i with the token: $got s"
    sleep 1
done
# No slow connection lived past the deadline (3 s, and a tick).
read -r made open oldest <"$T/loris.state"
"$PY" -c "import sys; sys.exit(not $oldest < 4.5)" ||
    fail "under a slowloris, a connection without the token is $oldest s old ($made made, $open open)"
[ "$made" -ge 160 ] || fail "the slowloris made only $made connections in 7 s: they are not dropped"
echo "slowloris: $made connections made, $open open, the oldest $oldest s old"
kill "$LORIS"
# Every dropped connection is closed: the server is back to its descriptors.
wait_for "[ \$(fds) -le $fds0 ]" 10 "the server to close the slowloris' connections ($(fds) open, $fds0 before)"

# h. A stopped job manager is not "no job yet": the 503 names it.
jm=$(pgrep -P "$JM_PID") || fail "no job manager under pid $JM_PID"
endpoint=$(json "$T/live/jm.json" "d['endpoint']")
kill -STOP "$jm"
curl -s -o "$T/503.body" --max-time 10 -w '%{http_code}' "${base}status.json?token=$token" >"$T/503.code"
kill -CONT "$jm"
[ "$(cat "$T/503.code")" = 503 ] &&
    [ "$(cat "$T/503.body")" = "the job manager at $endpoint did not answer within 1 s" ] ||
    fail "with the job manager stopped: $(cat "$T/503.code") '$(cat "$T/503.body")'"
[ "$(code "${base}status.json?token=$token")" = 200 ] || fail "the job manager answers again, the page does not"
# All the while, libmicrohttpd's messages (a line per dropped connection)
# were counted, not printed: a few lines, all prefixed.
[ "$(wc -l <"$T/live.serve.log")" -le 10 ] && ! grep -v '^spits-status: ' "$T/live.serve.log" ||
    fail "the log of all this is $(wc -l <"$T/live.serve.log") lines: $(head -20 "$T/live.serve.log")"
echo ok
