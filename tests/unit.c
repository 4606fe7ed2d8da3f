/*
 * unit.c - runs the self-tests that sit beside each libspits piece (and
 * the JM's adopt table, a self-contained piece of its own).
 * Prints one line per piece and exits non-zero if any fails.
 */
#include <sodium.h>
#include <stdio.h>

#include "adopt.h"
#include "behind.h"
#include "cancels.h"
#include "conngen.h"
#include "credit.h"
#include "hopchain.h"
#include "joins.h"
#include "alloc-policy.h"
#include "alloc-request.h"
#include "cmdorder.h"
#include "cmddone.h"
#include "cmdlive.h"
#include "cmdenv.h"
#include "elfcheck.h"
#include "resources.h"
#include "pyjob.h"
#include "escape.h"
#include "hashtab.h"
#include "idmap.h"
#include "jobdir.h"
#include "journal.h"
#include "keys.h"
#include "backlog.h"
#include "copies.h"
#include "copymap.h"
#include "crash.h"
#include "lateness.h"
#include "liveness.h"
#include "mem.h"
#include "metrics.h"
#include "origin.h"
#include "parts.h"
#include "peertab.h"
#include "reporthtml.h"
#include "parallel-args.h"
#include "ring.h"
#include "scheduler.h"
#include "server.h"
#include "taskpool.h"
#include "svgplot.h"
#include "term.h"
#include "tmtable.h"
#include "util.h"
#include "wake.h"
#include "wire.h"
#include "zmqutil.h"

int main(void)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } tests[] = {
        {"wire", spits_wire_selftest},
        {"behind", spits_behind_selftest},
        {"ring", spits_ring_selftest},
        {"hashtab", spits_hashtab_selftest},
        {"idmap", spits_idmap_selftest},
        {"cmdorder", cmdorder_selftest},
        {"cmddone", cmddone_selftest},
        {"cmdlive", cmdlive_selftest},
        {"jobdir", spits_jobdir_selftest},
        {"journal", spits_journal_selftest},
        {"adopt", jm_adopt_selftest},
        {"cancels", cancels_selftest},
        {"conngen", conngen_selftest},
        {"copies", copies_selftest},
        {"copymap", copymap_selftest},
        {"credit", credit_selftest},
        {"joins", joins_selftest},
        {"hopchain", hopchain_selftest},
        {"liveness", liveness_selftest},
        {"peertab", peertab_selftest},
        {"server", server_selftest},
        {"lateness", late_selftest},
        {"backlog", jm_backlog_selftest},
        {"scheduler", sched_selftest},
        {"taskpool", jm_taskpool_selftest},
        {"tmtable", jm_tmtab_selftest},
        {"keys", spits_keys_selftest},
        {"metrics", spits_metrics_selftest},
        {"wake", spits_wake_selftest},
        {"term", spits_term_selftest},
        {"escape", spits_escape_selftest},
        {"util", spits_util_selftest},
        {"elf", spits_elf_selftest},
        {"zmqutil", spits_zmqutil_selftest},
        {"parts", spits_parts_selftest},
        {"mem", spits_mem_selftest},
        {"resources", spits_res_selftest},
        {"origin", spits_origin_selftest},
        {"crash", spits_crash_selftest},
        {"pyjob", spits_pyjob_selftest},
        {"svgplot", spits_svgplot_selftest},
        {"reporthtml", spits_reporthtml_selftest},
        {"alloc-policy", alloc_policy_selftest},
        {"alloc-request", alloc_request_selftest},
        {"cmdenv", cmdenv_selftest},
        {"parallel-args", pargs_selftest},
    };
    int failed = 0;

    if (sodium_init() < 0)
        return 1;

    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        int rc = tests[i].fn();
        printf("%s %s\n", rc == 0 ? "ok  " : "FAIL", tests[i].name);
        failed += rc != 0;
    }
    return failed ? 1 : 0;
}
