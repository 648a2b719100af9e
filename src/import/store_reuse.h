/* store_reuse.h — a store whose inputs are unchanged, taken from the active
 * version instead of built again.
 *
 * Why it exists: a dataset of many feeds (`transitd import a.zip b.zip ...`)
 * is re-imported whenever one of them changes, and most of its bytes did
 * not. shapes.sqlite is made from shapes.txt alone (the merged one, with its
 * ids namespaced), so when the digest of that input, of the store's format
 * and of the SQLite library that writes it equals the one recorded in the
 * active version's COMPLETE marker, the store would be built byte for byte
 * the same: it is linked from there. Any other change of the input or of the
 * format names another digest, and the store is built. Only a store whose
 * build reported no problem is recorded (its problems would not be reported
 * again otherwise). docs/ARCHITECTURE.md, "Many feeds", states the rule.
 */
#ifndef TRANSIT_STORE_REUSE_H
#define TRANSIT_STORE_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/feed.h"

/* The digest of shapes.sqlite's inputs: SHA-256 (lower-case hex) over the
 * store's format number, the SQLite library's version number, and
 * shapes.txt (absent, or its size and bytes). 0, or -1 when the member
 * cannot be read (err). */
int store_reuse_shapes_digest(const feed_t *feed, int format, char out[65], char *err, size_t errlen);

/* Links (or, failing that, copies) `store` of the active version of
 * data_dir into dir, when that version's marker was written by this build
 * and records `digest` for it: true, with the rows its build read in *rows.
 * False when there is none to take (dir is then left as it was). */
bool store_reuse_from_active(const char *data_dir, const char *store, const char *digest, const char *dir,
                             uint64_t *rows);

#endif
