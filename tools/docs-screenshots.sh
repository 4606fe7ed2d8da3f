#!/bin/bash
# tools/docs-screenshots.sh - remake the screenshots of docs/dashboard.md
# from a built tree: a bench job with two Task Managers and one failing
# task, its live page (spits-status --serve) while it runs, then its
# report.html once it is over, each taken by headless Chromium.
#
# Usage: tools/docs-screenshots.sh [OUTDIR]   (default: docs/img of the tree)
#
# Writes OUTDIR/dashboard.png and OUTDIR/report.png. Needs chromium (the
# Debian package; tools/spits-check installs it). Everything runs on
# 127.0.0.1 and is removed at the end. The test helpers of tests/lib.sh
# start and bound every process.
root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P) || exit 1
case ${1:-} in
    -h | --help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
out=${1:-$root/docs/img}
[ -d "$out" ] || { echo "docs-screenshots: no directory $out"; exit 2; }
out=$(cd "$out" && pwd -P)
export top_srcdir=${top_srcdir:-$root} top_builddir=${top_builddir:-$root}
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
[ -x "$RUN" ] && [ -f "$MODS/bench.so" ] || fail "build the tree first (make)"
CI=true need_chromium

# 20 ms tasks; task 7 fails every run; the last task waits for $T/gate,
# so the job is still running when the page is taken.
start_jm shot "$MODS/bench.so" -n 1200 -s 20000 -f 7 -G "$T/gate"
start_tm shot tm1 -n 2
start_tm shot tm2 -n 2
ready() {
    [ "$(live shot 'd["tasks"]["committed"] > 300 and len(d.get("failed_tasks", [])) > 0')" = True ]
}
wait_for ready 120 "300 commits and the failed task"
start_serve shot
chrome --screenshot="$out/dashboard.png" --window-size=1200,1100 \
    --virtual-time-budget=3000 "$URL" >/dev/null || fail "no screenshot of $URL"
touch "$T/gate"
wait "$JM_PID"
[ -s "$T/shot/report.html" ] || fail "the job wrote no report.html"
chrome --screenshot="$out/report.png" --window-size=1200,1100 \
    "file://$T/shot/report.html" >/dev/null || fail "no screenshot of report.html"
for f in dashboard report; do
    [ "$(head -c 4 "$out/$f.png" | od -An -c | tr -d ' ')" = '211PNG' ] ||
        fail "$out/$f.png is not a PNG"
done
echo "wrote $out/dashboard.png and $out/report.png"
