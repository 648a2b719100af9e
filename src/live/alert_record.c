/* alert_record.c — an alert's life and time: references, ids, active periods.
 *
 * Why it exists: alert.c reads and writes an alert's JSON (jansson); what a
 * reader of alerts needs once they are parsed (the departure rows' matching in
 * alert_view.c, and the client library, which links no JSON parser of its
 * own) is only this: keep an alert alive, check an id, and ask whether it is
 * active at an instant.
 */
#include "transit/alert.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>   /* getentropy */
#endif

alert *alert_retain(alert *a)
{
    __atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
    return a;
}

void alert_release(alert *a)
{
    if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    free(a->content);
    free(a->json);
    free(a->texts_mem);
    free(a->head);
    free(a->content_head);
    free(a);
}

bool alert_id_valid(const char *id)
{
    size_t n = 0;
    for (const char *c = id; *c; c++, n++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '~' || *c == ':' || *c == '-'))
            return false;
    return n >= 1 && n <= ALERT_ID_MAX;
}

void alert_new_id(char out[ALERT_ID_MAX + 1])
{
    unsigned char r[10];
    if (getentropy(r, sizeof r) != 0) {
        /* getentropy fails only for sizes over 256; keep the ids unique anyway */
        static long counter;
        long c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        memset(r, 0, sizeof r);
        memcpy(r, &c, sizeof c);
    }
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "al-", 3);
    for (size_t i = 0; i < sizeof r; i++) {
        out[3 + 2 * i] = hex[r[i] >> 4];
        out[4 + 2 * i] = hex[r[i] & 15];
    }
    out[3 + 2 * sizeof r] = '\0';
}

bool alert_active_at(const alert *a, int64_t instant)
{
    if (a->nperiods == 0)
        return true;
    for (uint32_t i = 0; i < a->nperiods; i++)
        if (instant >= a->periods[i].start && instant < a->periods[i].end)
            return true;
    return false;
}

bool alert_current_or_future(const alert *a, int64_t instant)
{
    if (a->nperiods == 0)
        return true;
    for (uint32_t i = 0; i < a->nperiods; i++)
        if (instant < a->periods[i].end)
            return true;
    return false;
}
