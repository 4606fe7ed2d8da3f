#!/bin/bash
# The JM's memory is bounded by --window-bytes, not only by a task count:
# 40 tasks of 8 MiB (320 MiB), two TMs whose runs take 100 ms. With a
# 32 MiB window the JM's peak RSS (report.json) stays under 128 MiB: the
# window, plus what libzmq holds per connection (a message being
# encrypted, one in the socket) and the program itself. The same job
# with the default window (1 GiB) goes past that bound (the generator
# runs ahead of the TMs), which shows that the bound is the window's
# doing. Then --memory-limit 100 MiB with the default window: the JM's
# peak RSS is under the limit itself, whatever libzmq's copies take.
# Exact results every time.
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
[ "$(peak_mib small)" -le 128 ] ||
    fail "with a 32 MiB window the JM's peak RSS was $(peak_mib small) MiB, over 128"
[ "$(peak_mib default)" -gt 128 ] ||
    fail "with the default window the JM's peak RSS was only $(peak_mib default) MiB: the test shows nothing"
[ "$(peak_mib limit)" -lt 100 ] ||
    fail "with --memory-limit 100 MiB the JM's peak RSS was $(peak_mib limit) MiB"
echo "ok: peak RSS $(peak_mib small) MiB with a 32 MiB window, $(peak_mib default) MiB with 1 GiB," \
    "$(peak_mib limit) MiB under --memory-limit 100 MiB"
