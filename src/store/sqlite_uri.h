/* sqlite_uri.h — the URI a reader opens a version's SQLite file by.
 *
 * Why it exists: schedule.sqlite and shapes.sqlite are opened the same way,
 * read-only and immutable (no locks, no journal checks: a version never
 * changes once written), by a file: URI whose path must be percent-encoded.
 */
#ifndef TRANSIT_STORE_SQLITE_URI_H
#define TRANSIT_STORE_SQLITE_URI_H

#include <stddef.h>

/* "file:<version_dir>/<file>?immutable=1" into out, the path
 * percent-encoded; 0, or -1 when it does not fit. */
int store_sqlite_uri(char *out, size_t cap, const char *version_dir, const char *file);

#endif
