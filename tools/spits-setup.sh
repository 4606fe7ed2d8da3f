# tools/spits-setup.sh - shared setup and build steps for tools/spits-check
# and tools/spits-demo. Source it from bash; it is not meant to be run.
#
# After sourcing:
#   SPITS_ROOT    absolute path of the repository (the build is in-tree)
#   SPITS_LOGDIR  where build logs go (default $SPITS_ROOT/spits-logs)
#   the current directory is $SPITS_ROOT
#
# Functions (each returns non-zero on failure, after saying why):
#   spits_ensure_packages   install missing Debian packages (root) or print
#                           the apt-get command to run (not root)
#   spits_build             autoreconf (when needed), configure (when
#                           needed), make -j$SPITS_JOBS
#   spits_run_logged LOG CMD...   run CMD with its output in $SPITS_LOGDIR/LOG
#
# Environment:
#   SPITS_CONFIGURE_ARGS  extra ./configure arguments, shell-quoted, e.g.
#                         SPITS_CONFIGURE_ARGS='--enable-sanitizers CFLAGS="-O1 -g"'
#   SPITS_NO_APT=1        skip the Debian package check (dependencies are
#                         provided some other way)
#   SPITS_JOBS            make parallelism (default 2)
#   SPITS_SAY_FD          file descriptor for progress lines (default 1)

# shellcheck shell=bash

SPITS_ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd -P) || {
    echo "spits: cannot find the repository root" >&2
    return 1
}
cd "$SPITS_ROOT" || return 1

# Exported: tests keep what a human should look at there (report.png).
export SPITS_LOGDIR=${SPITS_LOGDIR:-$SPITS_ROOT/spits-logs}
SPITS_JOBS=${SPITS_JOBS:-2}

# Debian 12 packages the build and the tests need (g++ comes with
# build-essential; check is the unit-test library; tmux is the terminal
# tests/progress-tty.sh runs spits-run in; elfutils' eu-stack gives
# tests/bounded the stacks of a hung test's processes, in seconds even
# under ThreadSanitizer, where gdb takes minutes; tests/man-pages.sh
# remakes the man pages with help2man and renders them with groff;
# util-linux's taskset pins tools/bench/cluster-shape.sh's relay row;
# python3-dev is what modules/python.so embeds, and tests/python.sh sends
# python3-numpy's arrays as tasks).
SPITS_PACKAGES=(
    build-essential autoconf automake libtool pkg-config
    libzmq3-dev libsodium-dev libjansson-dev libmicrohttpd-dev check tmux python3
    elfutils help2man groff-base util-linux
    parallel python3-dev python3-numpy
)

spits_say() {
    printf '%s\n' "$*" >&"${SPITS_SAY_FD:-1}"
}

# Print the last lines of a log file, indented, to the progress stream.
spits_tail() {
    local log=$1 n=${2:-40}
    spits_say "---- last $n lines of $log ----"
    tail -n "$n" "$log" | sed 's/^/  /' >&"${SPITS_SAY_FD:-1}"
    spits_say "---- end of $log ----"
}

# spits_run_logged LOG CMD... : run CMD, output appended to $SPITS_LOGDIR/LOG.
# Standard input is /dev/null (CI has none, and nothing here may prompt).
spits_run_logged() {
    local log=$SPITS_LOGDIR/$1
    shift
    mkdir -p "$SPITS_LOGDIR" || return 1
    {
        printf '### %s: %s\n' "$(date '+%F %T')" "$*"
        "$@" </dev/null 2>&1
    } >>"$log"
}

# Print the packages of SPITS_PACKAGES that are not installed.
spits_missing_packages() {
    local p status
    for p in "${SPITS_PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=
        case $status in
            *" ok installed") ;;
            *) printf '%s\n' "$p" ;;
        esac
    done
}

spits_ensure_packages() {
    local missing t0=$SECONDS
    if [ "${SPITS_NO_APT:-0}" = 1 ]; then
        spits_say "packages: not checked (SPITS_NO_APT=1)"
        return 0
    fi
    if ! command -v dpkg-query >/dev/null 2>&1; then
        spits_say "packages: not a Debian system (no dpkg-query); not checked." \
            "Needed: ${SPITS_PACKAGES[*]} or their equivalents"
        return 0
    fi
    mapfile -t missing < <(spits_missing_packages)
    if [ "${#missing[@]}" -eq 0 ]; then
        spits_say "packages: all ${#SPITS_PACKAGES[@]} present"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        local sudo=
        command -v sudo >/dev/null 2>&1 && sudo="sudo "
        spits_say "packages: missing: ${missing[*]}"
        spits_say "Install them as root, then run this again:"
        spits_say "  ${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${missing[*]}"
        return 1
    fi
    spits_say "packages: installing ${missing[*]} (log: $SPITS_LOGDIR/apt.log)"
    if ! DEBIAN_FRONTEND=noninteractive spits_run_logged apt.log apt-get update ||
        ! DEBIAN_FRONTEND=noninteractive spits_run_logged apt.log \
            apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"; then
        spits_say "packages: apt-get failed"
        spits_tail "$SPITS_LOGDIR/apt.log"
        return 1
    fi
    mapfile -t missing < <(spits_missing_packages)
    if [ "${#missing[@]}" -ne 0 ]; then
        spits_say "packages: still missing after apt-get: ${missing[*]}"
        return 1
    fi
    spits_say "packages: installed ($((SECONDS - t0))s)"
}

# True when configure has to be (re)generated: there is no configure, or
# no record of a successful autoreconf, or configure.ac, a Makefile.am or a
# local m4 file changed since, or a Makefile.am has no Makefile.in yet.
spits_autoreconf_needed() {
    local stamp=$SPITS_LOGDIR/autoreconf.stamp f
    [ -x configure ] && [ -f "$stamp" ] || return 0
    [ configure.ac -nt "$stamp" ] && return 0
    while IFS= read -r f; do
        [ -e "${f%.am}.in" ] || return 0
        [ "$f" -nt "$stamp" ] && return 0
    done < <(find . -name autom4te.cache -prune -o -name .git -prune -o \
        -name Makefile.am -print)
    for f in m4/*.m4; do
        [ -e "$f" ] || continue
        case $f in m4/libtool.m4 | m4/lt*.m4) continue ;; esac
        [ "$f" -nt "$stamp" ] && return 0
    done
    return 1
}

# spits_build: generate, configure and compile in the source tree.
spits_build() {
    local t0=$SECONDS args=() stamp=$SPITS_LOGDIR/configure.args
    mkdir -p "$SPITS_LOGDIR" || return 1
    if [ ! -f configure.ac ]; then
        spits_say "build: no configure.ac in $SPITS_ROOT"
        return 1
    fi
    if spits_autoreconf_needed; then
        spits_say "build: autoreconf -fi"
        rm -f "$SPITS_LOGDIR/autoreconf.stamp"
        : >"$SPITS_LOGDIR/autoreconf.log"
        touch "$SPITS_LOGDIR/autoreconf.start"
        if ! spits_run_logged autoreconf.log autoreconf -fi; then
            spits_say "build: autoreconf failed"
            spits_tail "$SPITS_LOGDIR/autoreconf.log"
            return 1
        fi
        # Inputs edited while autoreconf ran stay newer than the stamp.
        mv -f "$SPITS_LOGDIR/autoreconf.start" "$SPITS_LOGDIR/autoreconf.stamp"
    fi
    if [ -n "${SPITS_CONFIGURE_ARGS:-}" ]; then
        if ! eval "args=(${SPITS_CONFIGURE_ARGS})"; then
            spits_say "build: cannot parse SPITS_CONFIGURE_ARGS: ${SPITS_CONFIGURE_ARGS}"
            return 1
        fi
    fi
    if [ ! -f Makefile ] || [ ! -f config.status ] || [ configure -nt config.status ] ||
        [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${args[*]}" ]; then
        spits_say "build: ./configure${args[*]:+ ${args[*]}}"
        rm -f "$stamp"
        : >"$SPITS_LOGDIR/configure.log"
        if ! spits_run_logged configure.log ./configure "${args[@]}"; then
            spits_say "build: configure failed (see also $SPITS_ROOT/config.log)"
            spits_tail "$SPITS_LOGDIR/configure.log"
            return 1
        fi
        printf '%s' "${args[*]}" >"$stamp"
    fi
    spits_say "build: make -j$SPITS_JOBS"
    : >"$SPITS_LOGDIR/make.log"
    if ! spits_run_logged make.log make -O -j"$SPITS_JOBS"; then
        spits_say "build: make failed"
        spits_tail "$SPITS_LOGDIR/make.log" 60
        return 1
    fi
    spits_say "build: ok ($((SECONDS - t0))s, logs in $SPITS_LOGDIR)"
}
