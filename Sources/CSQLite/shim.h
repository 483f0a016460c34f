#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast of -1 to a destructor pointer, a macro Swift cannot import: the
/// binding functions take this instead, so SQLite copies each text it is given.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
