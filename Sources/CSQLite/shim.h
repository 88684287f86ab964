// The system's SQLite 3 (Debian's libsqlite3-dev): the enrollment store's embedded database. SQLITE_TRANSIENT is a
// macro that casts -1 to a function pointer, which Swift cannot import: the bind functions that copy their value
// are wrapped here with a fixed signature.
#ifndef KKPUSH_CSQLITE_SHIM_H
#define KKPUSH_CSQLITE_SHIM_H

#include <sqlite3.h>

static inline int kkpush_sqlite3_bind_text_copy(sqlite3_stmt *statement, int index, const char *text, int bytes) {
    return sqlite3_bind_text(statement, index, text, bytes, SQLITE_TRANSIENT);
}

static inline int kkpush_sqlite3_bind_blob_copy(sqlite3_stmt *statement, int index, const void *blob, int bytes) {
    return sqlite3_bind_blob(statement, index, blob, bytes, SQLITE_TRANSIENT);
}

#endif
