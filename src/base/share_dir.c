/* share_dir.c — finding the files shipped beside the binary.
 *
 * Why it exists: see include/transit/share_dir.h. The binary's own path is
 * the one platform seam here (/proc/self/exe on Linux, _NSGetExecutablePath
 * on macOS).
 */
#include "transit/share_dir.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

bool share_executable_path(char *out, size_t cap)
{
    char path[PATH_MAX];
#if defined(__linux__)
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return false;
    path[n] = '\0';
#elif defined(__APPLE__)
    char raw[PATH_MAX];
    uint32_t size = sizeof raw;
    if (_NSGetExecutablePath(raw, &size) != 0 || !realpath(raw, path))
        return false;
#else
    return false;
#endif
    return (size_t)snprintf(out, cap, "%s", path) < cap;
}

bool share_executable_dir(char *out, size_t cap)
{
    char path[PATH_MAX];
    if (!share_executable_path(path, sizeof path))
        return false;
    char *slash = strrchr(path, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return (size_t)snprintf(out, cap, "%s", path) < cap;
}

int share_candidates(const char *installed, const char *repo, char out[][SHARE_PATH_MAX], int max)
{
    int n = 0;
    char dir[SHARE_PATH_MAX - 64];
    if (share_executable_dir(dir, sizeof dir)) {
        if (n < max)
            snprintf(out[n++], SHARE_PATH_MAX, "%s/../share/transitd/%.40s", dir, installed);
        if (n < max)
            snprintf(out[n++], SHARE_PATH_MAX, "%s/../%.40s", dir, repo);
        if (n < max)
            snprintf(out[n++], SHARE_PATH_MAX, "%s/../../%.30s", dir, repo);
    }
    if (n < max)
        snprintf(out[n++], SHARE_PATH_MAX, "%s", repo);
    return n;
}
