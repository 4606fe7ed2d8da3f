/* notspitsext.c - no SPITS symbols, and an unresolved one (helper_init)
 * that makes dlopen fail: "not a SPITS module" must still come first. */
int helper_init(void);
int notspits_answer(void) { return helper_init(); }
