#!/bin/bash
# The JM's memory is bounded by --window-bytes, not only by a task count:
# 40 tasks of 8 MiB (320 MiB), two TMs whose runs take 100 ms. With a
# 32 MiB window the JM's peak RSS (report.json) stays under 128 MiB: the
# window, plus what libzmq holds per connection (a message being
# encrypted, one in the socket) and the program itself. The same job
# with the default window (1 GiB) goes past that bound (the TMs' credits
# and the 64 MiB the generator makes ahead of sending), which shows that
# the bound is the window's doing. Then --memory-limit 100 MiB with the
# default window: the JM's peak RSS is under the limit itself, whatever
# libzmq's copies take. Last, 600 tasks of 1 MiB to one TM with the
# default window: the generator stays 64 MiB ahead of sending, so the
# JM's peak stays under 256 MiB (it made all 600 MiB ahead before: 410
# to 509 MiB). Exact results every time.
. "$(dirname "$0")/lib.sh"

# A sanitizer's runtime has its own memory (shadow, a quarantine of freed
# blocks of 256 MiB): the RSS would be its.
if sanitized; then
    echo "SKIP: a sanitizer build (its runtime's memory is in the RSS)"
    exit 77
fi

peak_mib() {   # peak_mib NAME: the JM's peak RSS in MiB
    json "$T/$1/report.json" "d['jm']['max_rss_bytes'] // 2**20"
}

for w in small default limit; do
    opts=""
    [ $w = small ] && opts="--window-bytes 33554432"
    [ $w = limit ] && opts="--memory-limit 104857600"
    # shellcheck disable=SC2086
    start_jm $w $opts "$MODS/bench.so" -n 40 -t 8388608 -s 100000
    start_tm $w tm-$w-1 -n 2
    start_tm $w tm-$w-2 -n 2
    wait $JM_PID || fail "spits-jm ($w window) exited $?"
    [ "$(cat "$T/$w.out")" = "$(bench_checksum 40)" ] || fail "$w: bench printed '$(cat "$T/$w.out")'"
done
start_jm ahead "$MODS/bench.so" -n 600 -t 1048576
start_tm ahead tm-ahead -n 2
wait $JM_PID || fail "spits-jm (ahead) exited $?"
[ "$(cat "$T/ahead.out")" = "$(bench_checksum 600)" ] || fail "ahead: bench printed '$(cat "$T/ahead.out")'"
[ "$(peak_mib small)" -le 128 ] ||
    fail "with a 32 MiB window the JM's peak RSS was $(peak_mib small) MiB, over 128"
[ "$(peak_mib default)" -gt 128 ] ||
    fail "with the default window the JM's peak RSS was only $(peak_mib default) MiB: the test shows nothing"
[ "$(peak_mib limit)" -lt 100 ] ||
    fail "with --memory-limit 100 MiB the JM's peak RSS was $(peak_mib limit) MiB"
[ "$(peak_mib ahead)" -lt 256 ] ||
    fail "600 tasks of 1 MiB to one TM took the JM's peak RSS to $(peak_mib ahead) MiB: the generator ran more than 64 MiB ahead of sending"
echo "ok: peak RSS $(peak_mib small) MiB with a 32 MiB window, $(peak_mib default) MiB with 1 GiB," \
    "$(peak_mib limit) MiB under --memory-limit 100 MiB, $(peak_mib ahead) MiB for 1 MiB tasks to one TM"
