/* notspits.c - a shared object with no SPITS symbols at all. */
int notspits_answer(void) { return 42; }
