/* tt_limits.c — refusing counts that do not fit timetable.bin's uint32_t
 * fields (see tt_limits.h). */
#include "import/tt_limits.h"

#include <stdio.h>

int tt_check_count(size_t n, size_t max, const char *where, const char *what, char *err,
                   size_t errlen)
{
    if (n <= max)
        return 0;
    snprintf(err, errlen, "%s: %zu %s exceed the timetable format's limit of %zu", where, n, what,
             max);
    return -1;
}
