/* share_dir.h — where the files shipped with transitd are found.
 *
 * Why it exists: the server reads the OpenAPI document and its web pages at
 * start-up, and must find them without configuration both when installed
 * (`make install PREFIX=P`: P/bin/transitd beside P/share/transitd/) and in
 * a build tree (build/transitd or build/sanitize/transitd inside the
 * repository, beside docs/ and www/). Both are found relative to the
 * running binary, so neither the working directory nor PATH matters.
 */
#ifndef TRANSIT_SHARE_DIR_H
#define TRANSIT_SHARE_DIR_H

#include <stdbool.h>
#include <stddef.h>

#define SHARE_PATH_MAX 4096
#define SHARE_MAX_CANDIDATES 4

/* The path of the running binary (symlinks resolved: /proc/self/exe on
 * Linux, _NSGetExecutablePath on macOS); false where the platform cannot
 * say or `cap` is too small. */
bool share_executable_path(char *out, size_t cap);
/* The directory of the running binary (symlinks resolved); false where the
 * platform cannot say. */
bool share_executable_dir(char *out, size_t cap);

/* The places to look for a shipped file or directory, in order:
 * EXE/../share/transitd/<installed>, EXE/../<repo>, EXE/../../<repo>, and
 * <repo> relative to the working directory. Returns how many were written
 * (at most SHARE_MAX_CANDIDATES). */
int share_candidates(const char *installed, const char *repo,
                     char out[][SHARE_PATH_MAX], int max);

#endif
