#!/usr/bin/env python3
"""jm-sample.py - the live JM's counts over a job, for spits-bench.

    jm-sample.py SPITS-STATUS JOBDIR OUT [PERIOD]

Asks the JM of JOBDIR for its status (spits-status --json) every PERIOD
seconds (0.5) until JOBDIR/report.json appears, and writes one JSON line
a sample to OUT: elapsed seconds, committed tasks, TM joins and live
TMs, and the JM's RSS and CPU seconds. spits-bench's simulate rows read
it: the JM's RSS after the first 1,000 joins against its RSS at the end,
and its CPU per task in the first and last tenth of the job.
"""
import json
import os
import subprocess
import sys
import time

status, jobdir, out = sys.argv[1], sys.argv[2], sys.argv[3]
period = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
deadline = time.time() + 3600
with open(out, "w") as f:
    while not os.path.exists(os.path.join(jobdir, "report.json")) and time.time() < deadline:
        t0 = time.time()
        try:
            p = subprocess.run([status, "--jobdir", jobdir, "--json"], capture_output=True,
                               timeout=10)
            d = json.loads(p.stdout) if p.returncode == 0 else None
        except (subprocess.TimeoutExpired, ValueError):
            d = None
        if d and d.get("state") == "running":
            jm = d["jm"]
            f.write(json.dumps({
                "t": d["elapsed_s"], "committed": d["tasks"]["committed"],
                "joins": d["tm_counts"]["joins"], "live": len(d.get("tms", [])),
                "rss": jm["rss_bytes"], "cpu": jm["cpu_user_s"] + jm["cpu_system_s"]}) + "\n")
            f.flush()
        time.sleep(max(0.0, period - (time.time() - t0)))
