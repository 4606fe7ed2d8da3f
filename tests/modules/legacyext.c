/* legacyext.c - a legacy byte-array module built against a helper library
 * of its own that the runtime does not have: md5 stays unresolved, so
 * dlopen fails, yet the runtime must still say it is a legacy module. */
struct byte_array { unsigned char *ptr; unsigned long size; };
void md5(const void *data, unsigned long size, unsigned char out[16]);
int spits_job_manager_next_task(void *jm, struct byte_array *task) { (void)jm; md5(task->ptr, task->size, task->ptr); return 0; }
void *spits_setup_commit(int argc, const char *argv[]) { (void)argc; (void)argv; return 0; }
int spits_commit_pit(void *c, struct byte_array *r) { (void)c; (void)r; return 0; }
