#!/usr/bin/env python3
"""tools/bench/cluster-shape.py - the figures and the cost model of
tools/bench/cluster-shape.sh, which runs the jobs and leaves their traces
in a work directory; this reads them.

    cluster-shape.py checksum N
    cluster-shape.py sample BASE SECONDS
    cluster-shape.py model DIR CORES QUICK CHECK [JSON]

checksum prints the bench module's line for N empty tasks (computed here,
independently of the module). sample follows the processes of a job as
they start (the children of the timeout wrappers whose pids are in
BASE.TAG.pid) until BASE.done exists, every SECONDS: a JSON line each time
(BASE.samp) with the machine's busy ticks (/proc/stat) and each process's
ticks and each of its threads'. model reads DIR/specs (one JSON object a
line: a calibration job or a row, written by cluster-shape.sh) and each
job's traces:
  JOB/report.json       the JM's report
  JOB/jm.json           the JM's start (started_unix), its clock's zero
  JOB.TAG.t0            the epoch time process TAG was started
  JOB.jm.times, JOB.TAG.times   bash's times after the process: its CPU
  JOB.samp              samples of every process of the job (sample)
  JOB.TAG.log           a TM's, relay's or harness's log
  JOB.m0, JOB.m1        /proc/stat's cpu line before and after the job
It prints the calibration's costs and the table (measured, predicted,
their ratio), writes the JSON, and with CHECK 1 and QUICK 1 exits 1 when a
prediction is more than 20% off its measurement.
"""
import glob
import heapq
import json
import os
import platform
import re
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
TOLERANCE = 0.2
# A row's note starting so: the job ran, exact, but its shape left the
# figure undefined (judged as off in --quick, reported in full mode).
NOT_MEASURED = "not measured:"
PIPELINE_IDLE = 0.25    # cores a calibration left idle that bound a pipeline


def checksum(n):
    m = (1 << 64) - 1

    def sm(x):
        z = (x + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    return "bench: %d tasks, checksum 0x%016x" % (n, sum(sm(i) for i in range(n)) & m)


def proc_ticks(pid):
    """(ticks of the process, {thread id: its ticks}) or None if gone."""
    def ticks(path):
        with open(path) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return int(v[11]) + int(v[12])
    try:
        total = ticks("/proc/%d/stat" % pid)
        th = {}
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                th[t] = ticks("/proc/%d/task/%s/stat" % (pid, t))
            except OSError:
                pass
        return total, th
    except (OSError, IndexError, ValueError):
        return None


def children(parents):
    """{parent pid: its first child's pid} for those that have one."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in parents and ppid not in out:
                out[ppid] = int(d)
    return out


def sample(base, every):
    """Samples the processes of job BASE (BASE.TAG.pid: their timeout
    wrappers' pids) as they come, until BASE.done exists."""
    tags, last = {}, {}
    with open(base + ".samp", "w") as o:
        while True:
            done = os.path.exists(base + ".done")
            want = {}
            for f in glob.glob(base + ".*.pid"):
                tag = f[len(base) + 1:-4]
                if tag not in tags:
                    try:
                        want[int(open(f).read())] = tag
                    except (OSError, ValueError):
                        pass
            if want:
                for parent, child in children(set(want)).items():
                    tags[want[parent]] = child
            with open("/proc/stat") as f:
                c = [int(x) for x in f.readline().split()[1:]]
            now = time.time()
            for tag, pid in tags.items():
                t = proc_ticks(pid)
                if t:
                    # (a thread that ended keeps its last count)
                    th = last[tag][1] if tag in last else {}
                    th.update(t[1])
                    last[tag] = (t[0], th)
            # busy: user, nice, system, irq, softirq and steal (the
            # loopback's softirq time is in no process's count)
            o.write(json.dumps({"t": now, "busy": sum(c[:8]) - c[3] - c[4],
                                "irq": c[5] + c[6], "p": last}) + "\n")
            # (each at once: cluster-shape.sh starts a job only once the
            # first is in the file, which a full buffer held 2.5 s)
            o.flush()
            if done:
                return 0
            time.sleep(every)


class Job:
    """One job's traces in the work directory."""

    def __init__(self, base, name):
        self.base = os.path.join(base, name)
        self.name = name
        self.report = json.load(open(self.base + "/report.json"))
        # the JM's clock: report.json's times are from its start
        self.t0 = json.load(open(self.base + "/jm.json"))["started_unix"]

    def tags(self, prefix):
        return sorted(os.path.basename(f)[len(self.name) + 1:-6]
                      for f in glob.glob(self.base + "." + prefix + "*.times"))

    def cpu(self, tag):
        """CPU seconds (user + system) of process TAG, from bash's times."""
        lines = open("%s.%s.times" % (self.base, tag)).read().split("\n")
        total = 0.0
        for f in lines[1].split():
            m = re.match(r"(\d+)m([\d.]+)s", f)
            total += int(m.group(1)) * 60 + float(m.group(2))
        return total

    def samples(self):
        if not hasattr(self, "_samples"):
            self._samples = [json.loads(l) for l in open(self.base + ".samp") if l.endswith("\n")]
        return self._samples

    def share(self, tag):
        """The busiest thread's share of process TAG's CPU (last sample)."""
        total, th = self.samples()[-1]["p"].get(tag, (0, {}))
        busiest = max(th.values()) if th else 0
        # (none seen: count the process as one thread)
        return busiest / total if busiest > 0 and total > 0 else 1.0

    def at(self, t, value):
        """value(sample) at epoch t, between samples (ticks -> seconds)."""
        s = self.samples()
        if t <= s[0]["t"]:
            return value(s[0]) / TICK
        for a, b in zip(s, s[1:]):
            if a["t"] <= t <= b["t"]:
                va, vb = value(a), value(b)
                return (va + (vb - va) * (t - a["t"]) / max(1e-9, b["t"] - a["t"])) / TICK
        return value(s[-1]) / TICK

    def cpu_at(self, tag, t):
        """Process TAG's CPU seconds at epoch t."""
        return self.at(t, lambda x: x["p"].get(tag, [0])[0])

    def first_rise(self, tag, t, ticks):
        """The first sample's time after epoch t at which process TAG had
        used TICKS more than at t (when its work began)."""
        base = self.cpu_at(tag, t) * TICK
        for x in self.samples():
            if x["t"] >= t and x["p"].get(tag, [0])[0] >= base + ticks:
                return x["t"]
        return t

    def free_cores(self, cores, a, b):
        """The cores less what other programs used from epoch a to b."""
        ours = lambda x: sum(v[0] for v in x["p"].values()) + x["irq"]
        busy = self.at(b, lambda x: x["busy"]) - self.at(a, lambda x: x["busy"])
        mine = self.at(b, ours) - self.at(a, ours)
        return max(0.1, cores - max(0.0, busy - mine) / max(1e-9, b - a))

    def committed_at(self, t):
        """Tasks committed at JM time t (the report's timeline)."""
        pts = [(0.0, 0)] + [tuple(p) for p in self.report["timeline"]["points"]]
        for (a, r0), (b, r1) in zip(pts, pts[1:]):
            if a <= t <= b:
                return r0 + (r1 - r0) * (t - a) / max(1e-9, b - a)
        return pts[-1][1] if t > pts[-1][0] else 0

    def joins(self):
        return [e["t"] for e in self.report["timeline"]["tm_events"] if e["event"] == "join"]

    def end(self):
        return self.report["phases"][-1]["end_s"]

    def harness_summaries(self):
        """Each harness's summary figures ({name: number}: first_start,
        first_join, last_join, all_started, joins), from its last
        "simulate done:" line."""
        out = []
        for f in sorted(glob.glob(self.base + ".sim*.log")):
            m = [l for l in open(f) if "simulate done:" in l][-1]
            out.append({k: float(re.search(r"%s ([\d.]+)" % k, m).group(1))
                        for k in ("first_start", "first_join", "last_join", "all_started", "joins")})
        return out

    def harness_wait(self):
        """The least time a harness waited, once its TMs had started, for
        its first join (a round trip and a handshake: the start-ups are
        CPU, counted in each join's cost)."""
        return max(0.0, min(h["first_join"] - h["all_started"] for h in self.harness_summaries()))

    def harness_first_joins(self):
        """Each harness's first join (epoch)."""
        return [h["first_join"] for h in self.harness_summaries()]

    def harness(self):
        """(joins, first start, last join) over every harness (epoch)."""
        hs = self.harness_summaries()
        return (int(sum(h["joins"] for h in hs)), min(h["first_start"] for h in hs),
                max(h["last_join"] for h in hs))


def bound(free, costs, procs):
    """Units a second: the free cores over the CPU a unit costs in all,
    and for each kind of process (CPU per unit, its busiest thread's share
    of its CPU, how many share the units) its serial part: the busiest
    thread has one core at most."""
    total = sum(costs)
    r = free / total if total > 0 else float("inf")
    for c, share, count in procs:
        if c > 0 and share > 0:
            r = min(r, count / (c * share))
    return r


def staggered(k, workers, n, task, first, last):
    """The efficiency from the last join (as the joins rows measure it) of
    a job whose K TMs of WORKERS each join evenly from FIRST to LAST (s)
    and run its N tasks of TASK s, each task started at once on the
    worker free first: the best any runtime can do with that stagger.
    Over 1 when the TMs that joined first take more than their share."""
    free = []
    for i in range(k):
        at = first + (last - first) * i / max(1, k - 1)
        free += [at] * workers
    heapq.heapify(free)
    ends = []
    for _ in range(n):
        f = heapq.heappop(free)
        ends.append(f + task)
        heapq.heappush(free, f + task)
    span = max(ends) - last
    return n * task / (k * workers) / span if span > 0 else 1.0


def join_time(k, free, jcosts, jserial, tcosts, tm_rate):
    """Seconds for K joins (CPU per join of each process JCOSTS, their
    serial parts JSERIAL, as bound takes them) while the TMs joined so far
    run their tasks: with N joined, N x TM_RATE tasks a second at TCOSTS
    (CPU per task of each process) take that much of the FREE cores, and
    the joins get the rest. (Ignoring it put a 10,000-TM job's joins at
    2.5 times their speed on 2 cores.) Integrated in 200 steps; the joins
    keep a twentieth of the cores at least."""
    per_tm = sum(tcosts) * tm_rate
    steps, t = 200, 0.0
    for i in range(steps):
        n = (i + 0.5) * k / steps
        t += (k / steps) / bound(max(free - n * per_tm, 0.05 * free), jcosts, jserial)
    return t


def window_cost(j, tags, a, b):
    """{tag: CPU seconds of process TAG from epoch a to b}, and for each
    "p_TAG": the cores it kept busy then (its CPU over the time)."""
    c = {t: j.cpu_at(t, b) - j.cpu_at(t, a) for t in tags}
    c.update({"p_" + t: c[t] / max(1e-9, b - a) for t in tags})
    return c


def calibrate(cal, j, s):
    """Adds the costs of calibration job J (spec S) to CAL, each from a
    window of the job in which only that work ran: tasks from the first
    join (through a relay: the TM's start) to the last commit; joins from
    the first harness's start to the last join. A task window starts before
    the first commit, so it holds every task: the JM's timeline has a point
    a second, too few to tell how many were committed at a time inside a
    job of one (interpolating it put a third of a relayed job's tasks
    before the relay's work began)."""
    kind = s["cal"]
    end = j.t0 + j.end()
    if kind == "empty":
        a = j.t0 + min(j.joins())
        n = s["n"]
        c = window_cost(j, ("jm", "tm"), a, end)
        cal["empty_" + s["sec"]] = {
            "jm": c["jm"] / n, "tm": c["tm"] / n, "p_jm": c["p_jm"], "p_tm": c["p_tm"],
            "free": j.free_cores(cal["cores"], a, end),
            "share_jm": j.share("jm"), "share_tm": j.share("tm"),
            # from the TM's start to its join
            "latency": a - float(open(j.base + ".tm.t0").read())}
    elif kind == "relay":
        # from the TM's start (its join through the relay is not the JM's
        # to see); the start-up time is until the relay's work began
        t_tm = float(open(j.base + ".tm.t0").read())
        a = j.first_rise("rel", t_tm, 2)
        n = s["n"]
        c = window_cost(j, ("jm", "rel", "tm"), t_tm, end)
        w = window_cost(j, ("jm", "rel", "tm"), a, end)   # (cores busy: once working)
        cal["relay"] = {"jm": c["jm"] / n, "tm": c["tm"] / n, "rel": c["rel"] / n,
                        "p_jm": w["p_jm"], "p_tm": w["p_tm"], "p_rel": w["p_rel"],
                        "free": j.free_cores(cal["cores"], a, end),
                        "share_jm": j.share("jm"), "share_tm": j.share("tm"),
                        "share_rel": j.share("rel"), "latency": a - t_tm}
    elif kind == "joins":
        joins, first, last = j.harness()
        c = window_cost(j, ("jm", "sim0"), first, last)
        cal["joins"] = {
            "jm": c["jm"] / max(1, joins), "h": c["sim0"] / max(1, joins), "p_jm": c["p_jm"], "p_h": c["p_sim0"],
            "share_jm": j.share("jm"), "share_h": j.share("sim0"),
            "latency": j.harness_wait()}
    elif kind == "rjoins":
        joins, first, last = j.harness()
        sims = j.tags("sim")
        c = window_cost(j, ["rel"] + sims, first, last)
        cal["rjoins"] = {
            "rel": c["rel"] / max(1, joins), "h": sum(c[t] for t in sims) / max(1, joins),
            "share_rel": j.share("rel"), "share_h": j.share("sim0"),
            "latency": j.harness_wait()}
    elif kind == "tasks":
        # a task among many connections: the job's CPU less its joins'
        joins, first, _ = j.harness()
        c = window_cost(j, ("jm", "sim0"), first, end)
        jn = cal["joins"]
        cal["joins"].update({"task_jm": (c["jm"] - joins * jn["jm"]) / s["n"],
                             "task_h": (c["sim0"] - joins * jn["h"]) / s["n"],
                             "task_p_jm": c["p_jm"], "task_p_h": c["p_sim0"]})
    elif kind == "bytes":
        a = j.t0 + min(j.joins())
        n = s["n"]
        c = window_cost(j, ("jm", "tm"), a, end)
        cal["bytes_%s_%d" % (s["sec"], s["size"])] = {
            "jm": c["jm"] / n, "tm": c["tm"] / n, "size": s["size"],
            "p_jm": c["p_jm"], "p_tm": c["p_tm"], "free": j.free_cores(cal["cores"], a, end),
            "share_jm": j.share("jm"), "share_tm": j.share("tm")}


def rows_of(base, specs, cal, cores):
    """[(row, case, measured, unit, predicted or None, note)], each row
    predicted from the calibration jobs run before it (into CAL)."""
    out = []
    for s in specs:
        try:
            row_of(base, s, cal, cores, out)
        except (OSError, KeyError, ValueError, IndexError, ZeroDivisionError) as ex:
            # (a figure missing: say which job, and fail the run)
            out.append((s.get("row", "calibrate"), s["job"], None, "", None,
                        "no figures: %s %s" % (type(ex).__name__, ex)))
    out = median_runs(out)
    # relayed over direct, measured and predicted
    rc = [r for r in out if r[0] == "relaycost" and r[2] and r[4]]
    if len(rc) == 2:
        out.append(("relaycost", "relayed / direct", rc[1][2] / rc[0][2], "ratio", rc[1][4] / rc[0][4],
                    "the relay's cost on empty tasks: 1 - this (the two rows' quotient, not judged)"))
    return out


def median_runs(rows):
    """ROWS with each row run more than once (same row and case) in its
    place once: the run of the median ratio, its note naming every run's
    ratio. A run without figures stands for the row instead, so that the
    row fails."""
    runs, order = {}, []
    for r in rows:
        key = (r[0], r[1])
        if key not in runs:
            order.append(key)
        runs.setdefault(key, []).append(r)
    out = []
    for key in order:
        rs = runs[key]
        bad = [r for r in rs if r[2] is None or not r[4]]
        if len(rs) == 1 or bad:
            out.append(bad[0] if bad else rs[0])
            continue
        rs = sorted(rs, key=lambda r: r[2] / r[4])
        m = rs[(len(rs) - 1) // 2]
        out.append(m[:5] + ("%s; the median of %d runs (ratios %s)"
                            % (m[5], len(rs), ", ".join("%.2f" % (r[2] / r[4]) for r in rs)),))
    return out


def row_of(base, s, cal, cores, out):
    """Adds spec S's row to OUT, or its costs to CAL."""
    if True:
        j = Job(base, s["job"])
        if "cal" in s:
            calibrate(cal, j, s)
            return
        e, jn = cal.get("empty_curve"), cal.get("joins")
        kind = s["row"]
        end = j.t0 + j.end()
        fr = lambda free: "%.2f of %d cores free" % (free, cores)
        if kind == "scale":
            last = max(j.joins())
            left = s["n"] - j.committed_at(last)
            rate = left / max(1e-9, j.end() - last)
            demand = s["slots"] / s["task"]
            k = len(j.tags("tm"))
            free = j.free_cores(cores, j.t0 + last, end)
            pred = min(demand, bound(free, [e["jm"], e["tm"]],
                                     [(e["jm"], e["share_jm"], 1), (e["tm"], e["share_tm"], k)]))
            out.append(("scale", s["what"], rate, "tasks/s", pred,
                        "efficiency %.4f from the last join (ideal %.0f tasks/s); %s"
                        % (rate / demand, demand, fr(free))))
        elif kind == "joins":
            joins, first, last = j.harness()
            jrate = joins / max(1e-9, last - first)
            nrel, p = s["relays"], s["procs"]
            free = j.free_cores(cores, first, last)
            if nrel:
                # a relay does the JM's part of a join for its TMs
                rj, r = cal["rjoins"], cal["relay"]
                jp = joins / (rj["latency"] + join_time(
                    joins, free, [rj["rel"], rj["h"]],
                    [(rj["rel"], rj["share_rel"], nrel), (rj["h"], rj["share_h"], p)],
                    [r["jm"], r["rel"], jn["task_h"]], s["slots"] / s["k"] / s["task"]))
            else:
                jp = joins / (jn["latency"] + join_time(
                    joins, free, [jn["jm"], jn["h"]],
                    [(jn["jm"], jn["share_jm"], 1), (jn["h"], jn["share_h"], p)],
                    [jn["task_jm"], jn["task_h"]], s["slots"] / s["k"] / s["task"]))
            t_last = last - j.t0
            # (the job's work over its slots, over the time from the last
            # join to the last commit: over 1 when the TMs that joined
            # first ran more than their share; the JM's timeline, a point
            # a second, is too coarse to tell what was left at the join)
            span = j.end() - t_last
            eff = s["n"] * s["task"] / s["slots"] / span if span > 0 else 0
            late = joins < s["k"]
            if late:
                # (the work ran out first: no stretch of the job had every
                # slot, so there is no efficiency to measure)
                eff = None
            demand = s["slots"] / s["task"]
            efree = j.free_cores(cores, last, end)
            if nrel:
                r = cal["relay"]
                costs = [r["jm"], r["rel"], jn["task_h"]]
                serial = [(r["jm"], r["share_jm"], 1), (r["rel"], r["share_rel"], nrel),
                          (jn["task_h"], jn["share_h"], p)]
                what = "%d TMs via %d relays" % (s["k"], nrel)
            else:
                costs = [jn["task_jm"], jn["task_h"]]
                serial = [(jn["task_jm"], jn["share_jm"], 1), (jn["task_h"], jn["share_h"], p)]
                what = "%d TMs" % s["k"]
            first_join = min(j.harness_first_joins())
            ep = staggered(s["k"], s["slots"] // s["k"], s["n"], s["task"], first_join - j.t0,
                           t_last) * min(1.0, bound(efree, costs, serial) / demand)
            row = s["table"]
            out.append((row, what + " (CURVE): joins", jrate, "joins/s", jp,
                        "%d joins in %d harness(es), the first start to the last join; %s"
                        % (joins, p, fr(free))))
            note = ("from the last join; %d tasks on %d slots, %.2f s in all; %s re-sent; %s"
                    % (s["n"], s["slots"], j.report["seconds"], j.report["counters"]["resent"], fr(efree)))
            if late:
                note = ("%s %d of %d TMs joined before the work ran out (the joins were the bound); %s"
                        % (NOT_MEASURED, joins, s["k"], note))
            out.append((row, what + " x %d, %g s tasks" % (s["slots"] // s["k"], s["task"]),
                        eff, "efficiency", ep, note))
        elif kind == "relaycost":
            t_tm = float(open(j.base + ".tm.t0").read())
            rate = s["n"] / max(1e-9, end - t_tm)
            pinned = s["pinned"]
            free = j.free_cores(cores, t_tm, end)
            k = e if s["via"] == "direct" else cal["relay"]
            if s["via"] == "direct":
                c = [e["jm"], e["tm"]]
                ps = [e["share_jm"], e["share_tm"]]
                busy = e["p_jm"] + e["p_tm"]
            else:
                r = cal["relay"]
                c = [r["jm"], r["rel"], r["tm"]]
                ps = [r["share_jm"], r["share_rel"], r["share_tm"]]
                busy = r["p_jm"] + r["p_rel"] + r["p_tm"]
            # A TM's empty tasks are a pipeline of processes handing
            # batches on: when its calibration left cores idle, it keeps
            # at most as many busy as it did then.
            note = "not pinned; " + fr(free)
            if not pinned and k["free"] - busy > PIPELINE_IDLE:
                note += " (it kept %.2f busy in its calibration, %.2f free)" % (busy, k["free"])
                free = min(free, busy)
            # (pinned: a core each, the whole process bound to it)
            b = bound(float(len(c)) if pinned else free, c,
                      [(x, 1.0 if pinned else sh, 1) for x, sh in zip(c, ps)])
            pred = s["n"] / (k["latency"] + s["n"] / b)
            out.append(("relaycost", "1 TM (2 workers), %s%s" % (s["via"], ", pinned" if pinned else ""),
                        rate, "tasks/s", pred,
                        "%d empty tasks from the TM's start; %s" % (s["n"], "pinned: each process on a core of its own" if pinned else note)))
        elif kind == "bandwidth":
            first = min(j.joins())
            mbs = s["n"] * s["size"] / max(1e-9, j.end() - first) / 1e6
            free = j.free_cores(cores, j.t0 + first, end)
            b = cal["bytes_%s_%d" % (s["sec"], s["size"])]
            cj, ct = b["jm"], b["tm"]
            # (a pipeline too: the JM's and the TM's threads hand each
            # task's bytes on; see the relaycost row)
            note = fr(free)
            busy = b["p_jm"] + b["p_tm"]
            if b["free"] - busy > PIPELINE_IDLE:
                note += " (it kept %.2f busy in its calibration, %.2f free)" % (busy, b["free"])
                free = min(free, busy)
            pred = bound(free, [cj, ct], [(cj, b["share_jm"], 1), (ct, b["share_tm"], 1)]) * s["size"] / 1e6
            ceil = s["ceiling"]
            out.append(("bandwidth", "tasks of %s, %s" % (size_name(s["size"]), s["sec"]), mbs, "MB/s", pred,
                        "%s%% of plain ZeroMQ (%.0f MB/s); %s" % (round(100 * mbs / ceil) if ceil else "?", ceil, note)))


def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def print_calibration(cal):
    """The last costs measured of each kind."""
    us = lambda x: "%.3f us" % (x * 1e6)
    print("calibration (CPU per unit, the last measured of each; the busiest thread's share of each process):")
    e, r, jn = cal.get("empty_curve"), cal.get("relay"), cal.get("joins")
    if e:
        print("  empty task, CURVE: JM %s (%.2f), TM %s (%.2f)"
              % (us(e["jm"]), e["share_jm"], us(e["tm"]), e["share_tm"]))
    if r:
        print("  through a relay:   JM %s, relay %s (%.2f), TM %s"
              % (us(r["jm"]), us(r["rel"]), r["share_rel"], us(r["tm"])))
    if jn and "task_jm" in jn:
        print("  join, CURVE:       JM %s (%.2f), harness %s (%.2f); a task among many: JM %s, harness %s"
              % (us(jn["jm"]), jn["share_jm"], us(jn["h"]), jn["share_h"], us(jn["task_jm"]),
                 us(jn["task_h"])))
    rj = cal.get("rjoins")
    if rj:
        print("  join via a relay:  relay %s (%.2f), harness %s (%.2f)"
              % (us(rj["rel"]), rj["share_rel"], us(rj["h"]), rj["share_h"]))
    for k, b in sorted(((k, b) for k, b in cal.items() if k.startswith("bytes_")),
                       key=lambda kv: (kv[0].split("_")[1], kv[1]["size"])):
        print("  byte, %-8s %-7s JM %.3f ns (%.2f), TM %.3f ns (%.2f)"
              % (k.split("_")[1], size_name(b["size"]) + ":", b["jm"] / b["size"] * 1e9,
                 b["share_jm"], b["tm"] / b["size"] * 1e9, b["share_tm"]))


def model(base, cores, quick, check, out):
    specs = [json.loads(l) for l in open(os.path.join(base, "specs"))]
    cal = {"cores": cores}
    rows = rows_of(base, specs, cal, cores)
    print_calibration(cal)
    print("%-10s %-42s %12s %-10s %12s %6s  %s" % ("ROW", "CASE", "MEASURED", "UNIT", "PREDICTED", "RATIO", "NOTE"))
    res, off, missing = [], [], []
    for row, case, m, unit, p, note in rows:
        ratio = m / p if m is not None and p else None
        fmt = (lambda v: "%.4f" % v) if unit in ("efficiency", "ratio") else \
            (lambda v: "%.1f" % v if v < 1000 else "%.0f" % v)
        print("%-10s %-42s %12s %-10s %12s %6s  %s"
              % (row, case, fmt(m) if m is not None else "n/a", unit, fmt(p) if p else "n/a",
                 "%.2f" % ratio if ratio else "n/a", note))
        res.append({"row": row, "case": case, "measured": m, "unit": unit, "predicted": p,
                    "ratio": ratio, "note": note})
        if m is None and note.startswith(NOT_MEASURED):
            off.append("%s %s (not measured)" % (row, case))
        elif m is None:
            missing.append("%s %s" % (row, case))
        elif ratio is not None and unit != "ratio" and abs(ratio - 1) > TOLERANCE:
            # (a ratio row is the quotient of two rows judged here: its
            # error is theirs, compounded)
            off.append("%s %s (%.2f)" % (row, case, ratio))
    if out:
        json.dump({"version": 1, "host": platform.node(), "cores": cores, "quick": quick,
                   "calibration": cal, "rows": res}, open(out, "w"), indent=2)
        print("JSON: " + out)
    if off:
        print("predictions more than %d%% off: %s" % (100 * TOLERANCE, "; ".join(off)))
    if missing:
        print("no figures for: %s" % "; ".join(missing))
        return 1
    return 1 if off and quick and check else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "checksum":
        print(checksum(int(argv[2])))
        return 0
    if len(argv) == 4 and argv[1] == "sample":
        return sample(argv[2], float(argv[3]))
    if len(argv) in (6, 7) and argv[1] == "model":
        return model(argv[2], int(argv[3]), argv[4] == "1", argv[5] == "1",
                     argv[6] if len(argv) == 7 else "")
    print("usage: cluster-shape.py checksum N | sample BASE SECONDS | "
          "model DIR CORES QUICK CHECK [JSON]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
