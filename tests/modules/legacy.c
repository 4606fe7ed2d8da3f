/* legacy.c - the oldest byte-array interface; the runtime must refuse it. */
struct byte_array { unsigned char *ptr; unsigned long size; };
int spits_job_manager_next_task(void *jm, struct byte_array *task) { (void)jm; (void)task; return 0; }
void *spits_setup_commit(int argc, const char *argv[]) { (void)argc; (void)argv; return 0; }
int spits_commit_pit(void *c, struct byte_array *r) { (void)c; (void)r; return 0; }
