/*
 * spits.h - the SPITS module interface (the "v2" ABI, plus the SPITS 2.0
 * metrics variant).
 *
 * A SPITS module is a shared object that exports the functions declared
 * below. The runtime (spits-jm and spits-tm) dlopen()s it and calls them; a
 * module never links against libspits. This header exists so that modules
 * can be compiled against a declaration of the interface:
 *
 *     cc $(pkg-config --cflags spits) -shared -fPIC -o my.so my.c
 *
 * Roles and their rules:
 *   job manager  generates tasks; next_task is called exactly once per task,
 *                from one thread at a time.
 *   worker       runs a task; must be idempotent: a task may run several
 *                times, on any node, concurrently with other copies.
 *   committer    consumes results; commit_pit is called exactly once per
 *                task, commit_job once after the last commit of a phase.
 *
 * Every push callback copies the bytes before it returns; a second push in
 * the same call replaces the first (the runtime warns once a job). A push
 * of NULL with a size over 0, or of a negative size, is an error: the
 * task (worker) or the phase (job manager, commit_job) fails, naming the
 * function.
 */
#ifndef SPITS_H
#define SPITS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef long long int spitssize_t;
typedef const void *spitsctx_t;
typedef void (*spitspush_t)(const void *data, spitssize_t size, spitsctx_t ctx);
typedef int (*spitsrun_t)(int argc, const char **argv,
                          const void *jobinfo, spitssize_t jobinfosz,
                          const void **final, spitssize_t *finalsz);
/* Older headers spell the runner type this way. */
typedef spitsrun_t spitzrun_t;

/*
 * Optional entry point. When a module exports it, the runtime calls it
 * instead of running one job; every run() call is one phase (a complete
 * parallel job). Its return value is the process exit status.
 *
 * run() returns one of:
 *   commit_job's value  the phase ran to its end: every task committed,
 *                       then commit_job called (*final and *finalsz are
 *                       what it pushed, NULL and 0 if nothing; valid
 *                       until the next run()). On --resume, a phase the
 *                       journal saw end is not run again: its journaled
 *                       commit_job value and final result are returned.
 *   SPITS_RUN_FAILED    the phase did not end: a task failed every
 *                       attempt, the job is being stopped (a signal, a
 *                       fatal error), a constructor returned NULL, argv
 *                       is empty or not UTF-8, a task was too large, the
 *                       journal could not be written, or a resumed
 *                       phase's arguments differ from the journal's.
 *                       commit_job was not called (or, for a journal
 *                       failure, its end was not recorded); *final is
 *                       NULL. spits-jm has said why on stderr and its
 *                       exit status and report.json say it too, whatever
 *                       spits_main returns; spits_main should return
 *                       (or exit()) at once: a later run() of a stopped
 *                       job returns SPITS_RUN_FAILED without running.
 * So commit_job should not return SPITS_RUN_FAILED itself.
 */
#define SPITS_RUN_FAILED (-1000)
int spits_main(int argc, const char *argv[], spitsrun_t run);

#ifndef SPITS_METRICS_VARIANT
/* Job manager: task generation. */
void *spits_job_manager_new(int argc, const char *argv[],
                            const void *jobinfo, spitssize_t jobinfosz);
/* Worker: task execution. */
void *spits_worker_new(int argc, const char *argv[]);
/* Committer: result consolidation. */
void *spits_committer_new(int argc, const char *argv[],
                          const void *jobinfo, spitssize_t jobinfosz);
#else
/*
 * SPITS 2.0 variant: the constructors take a trailing metrics object. A
 * module of this variant exports spits_metrics_new/spits_metrics_delete;
 * the runtime makes one metrics object per role instance with them.
 */
void *spits_job_manager_new(int argc, const char *argv[],
                            const void *jobinfo, spitssize_t jobinfosz,
                            const void *metrics);
void *spits_worker_new(int argc, const char *argv[], const void *metrics);
void *spits_committer_new(int argc, const char *argv[],
                          const void *jobinfo, spitssize_t jobinfosz,
                          const void *metrics);
void *spits_metrics_new(unsigned buffer_size);
void spits_metrics_delete(void *metrics);
#endif

/* Pushes one task and returns 1, or returns 0 when there are no more.
 * A negative value is an error; the runtime warns about other values
 * (taken as 1), about 1 without a push (an empty task) and about a push
 * followed by 0 (dropped). */
int spits_job_manager_next_task(void *jm, spitspush_t push_task, spitsctx_t ctx);
void spits_job_manager_finalize(void *jm);                  /* optional */

/* Runs one task, pushes its result; 0 is success, anything else failure. */
int spits_worker_run(void *w, const void *task, spitssize_t tasksz,
                     spitspush_t push_result, spitsctx_t ctx);
void spits_worker_finalize(void *w);                        /* optional */
/* Optional, a spits extension (other runtimes never call it): why this
 * worker's last run failed, called after a run that returned non-zero.
 * The text (NULL or "": none) is reported with the failed task. */
const char *spits_worker_error(void *w);
/* Optional, a spits extension: called once in a worker process (spits-tm
 * --isolate, or a Python job's) before its first spits_worker_new, as the
 * task manager starts and before it joins the job: the process's slow
 * start (an interpreter, a runtime) then costs no task its time. */
void spits_worker_prepare(void);

/* Commits one task's result; 0 is success. */
int spits_committer_commit_pit(void *c, const void *result, spitssize_t resultsz);
/* Ends a phase; may push the phase's final result. Its value is run()'s. */
int spits_committer_commit_job(void *c, spitspush_t push_final_result, spitsctx_t ctx);
void spits_committer_finalize(void *c);                     /* optional */

#ifdef __cplusplus
}
#endif

#endif /* SPITS_H */
