#!/bin/bash
# progress-tty.sh - the progress line as a person sees it: spits-run in a
# real terminal (tmux, its own server), captured during and after a job
# whose TMs log while the bar is up. At every capture at most one line
# holds the bar, that line holds nothing else and fits the width (also
# after the window grows: SIGWINCH); at the end the module's output and
# a 100% bar are on screen. Off a terminal: plain lines, no '\r'.
. "$top_srcdir/tests/lib.sh"
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; exit 77; }

SOCK=spits-test-$$
tmux_cleanup() { tmux -L "$SOCK" kill-server 2>/dev/null; cleanup; }
trap tmux_cleanup EXIT
N=2000
# A worker process crashes on task 900 (--isolate): its TM logs that
# mid-run, through the JM's writer.
JOB="$RUN --tms 2 --workers 2 --isolate $TMODS/faulty.so $N sleep=10000 once=900:$T"
# The whole bar line, and its two forms (before and after the total is known).
BAR='^spits-jm: phase [0-9]+ \[[#.]{20}\] [0-9]+/[0-9]+ [0-9.]+% [0-9]+ tasks/s ETA [0-9?:]+, [0-9]+ TM\(s\), [0-9]+ running, [0-9]+ queued(, [0-9]+ to commit( \(waiting for the disk\))?)?$'
EARLY='^spits-jm: phase [0-9]+: [0-9]+ committed, [0-9]+ generated so far, [0-9]+ tasks/s, [0-9]+ TM\(s\), [0-9]+ running, [0-9]+ queued(, [0-9]+ to commit( \(waiting for the disk\))?)?$'

tmux -L "$SOCK" -f /dev/null new-session -d -x 60 -y 40 \
    "TERM=xterm timeout --foreground -s KILL 120 $JOB; echo \$? >$T/rc; exec sleep 300" ||
    fail "tmux cannot start a session"

# check_capture FILE WIDTH: every rule that holds at any moment. The bar is
# whole, or cut to the width less one (59 columns at first, also just after a
# resize; the new width's after) and then holds one program's text only.
check_capture() {
    local f=$1 w=$2 bars
    bars=$(grep -c 'spits-jm: phase ' "$f")
    [ "$bars" -le 1 ] || fail "$f: $bars lines hold the progress line: $(cat "$f")"
    grep 'spits-jm: phase ' "$f" | while IFS= read -r line; do
        [ ${#line} -lt "$w" ] ||
            fail "$f: the progress line is ${#line} columns wide (terminal: $w): '$line'"
        printf '%s\n' "$line" | grep -Eq "$BAR|$EARLY" && continue
        { [ ${#line} = 59 ] || [ ${#line} = $((w - 1)) ]; } && [ "$(printf '%s' "$line" | grep -o 'spits-' | wc -l)" = 1 ] &&
            printf '%s\n' "$line" | grep -Eq '^spits-jm: phase [0-9]+( \[[#.]{20}\] [0-9]|: [0-9])' ||
            fail "$f: the progress line is mixed with other text: '$line'"
    done || exit 1
}

# Captures while the job runs. The window starts 60 columns wide (the bar
# is cut); after a few captures with the bar it grows to 120 (SIGWINCH),
# and the whole bar must come back.
i=0 width=60 cut_bars=0 whole_after=0
while [ ! -s "$T/rc" ] && [ $i -lt 600 ]; do
    i=$((i + 1))
    tmux -L "$SOCK" capture-pane -p -J >"$T/cap.$i" || fail "capture-pane failed"
    check_capture "$T/cap.$i" "$width"
    if [ $width = 60 ] && grep -q 'spits-jm: phase 1 \[' "$T/cap.$i"; then
        cut_bars=$((cut_bars + 1))
        if [ $cut_bars -ge 3 ]; then
            tmux -L "$SOCK" resize-window -x 120 || fail "resize-window failed"
            width=120
        fi
    elif [ $width = 120 ] && grep -Eq "$BAR" "$T/cap.$i"; then
        whole_after=$((whole_after + 1))
    fi
    sleep 0.2
done
[ -s "$T/rc" ] || fail "the job did not end in 120 s"
[ "$(cat "$T/rc")" = 0 ] || fail "spits-run exited $(cat "$T/rc")"
[ $cut_bars -ge 1 ] || fail "no capture showed the progress line"
tmux -L "$SOCK" capture-pane -p -J >"$T/cap.end"
check_capture "$T/cap.end" "$width"
grep -q "^faulty: $N tasks, sum $((N * (N + 1) / 2))\$" "$T/cap.end" ||
    fail "the module's output is not on screen: $(cat "$T/cap.end")"
grep 'spits-jm: phase ' "$T/cap.end" | grep -q "\[#\{20\}\] $N/$N 100.0%" ||
    fail "the last progress line is not at 100%: $(grep 'spits-jm: phase ' "$T/cap.end")"
if [ $width = 120 ]; then
    grep -Eq "$BAR" "$T/cap.end" ||
        fail "the bar did not grow with the window: $(grep 'spits-jm: phase ' "$T/cap.end")"
fi
grep -q '^spits-tm: warning: task 900 crashed its worker process' "$T/cap.end" ||
    fail "the TM's line about the crash is not on screen: $(cat "$T/cap.end")"
echo "tty: $i captures, $cut_bars with the cut bar, $whole_after whole after the resize"

# Off a terminal: one plain line per interval, no carriage return.
timeout -s KILL 120 $RUN --tms 1 --workers 2 --progress-interval 0.3 \
    "$TMODS/faulty.so" 300 sleep=10000 >"$T/plain.out" 2>"$T/plain.err" ||
    fail "the job off a terminal failed: $(tail -5 "$T/plain.err")"
! grep -q $'\r' "$T/plain.err" || fail "stderr off a terminal holds a carriage return"
! grep -q $'\033' "$T/plain.err" || fail "stderr off a terminal holds an escape sequence"
grep -Eq '^spits-jm: progress: phase 1' "$T/plain.err" ||
    fail "no plain progress line off a terminal: $(cat "$T/plain.err")"
grep -q '^spits-tm: ' "$T/plain.err" || fail "the TM's lines are missing: $(cat "$T/plain.err")"
grep -q '^faulty: 300 tasks, sum 45150$' "$T/plain.out" || fail "wrong module output"
echo "PASS"
