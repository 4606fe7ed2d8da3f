/*
 * originhelper.c - libspitsorigin_helper.so, the helper library that
 * originmod.so finds next to itself through its $ORIGIN run path.
 */
#include <stdint.h>

int64_t originhelper_value(int64_t i) { return 3 * i + 1; }

const char *originhelper_name(void) { return "originhelper"; }
