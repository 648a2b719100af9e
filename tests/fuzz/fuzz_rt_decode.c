/* fuzz_rt_decode.c — libFuzzer target for the GTFS-Realtime decoder path.
 *
 * Why it exists: the decoder reads bytes from the network. Every input must
 * either decode or fail with a message, never crash, overrun or leak; a feed
 * that decodes must also survive conversion of its alerts (rt_alerts.c),
 * which re-checks them with the alerts API's rules.
 * `make fuzz` builds build/fuzz/fuzz_rt_decode; run it with a corpus dir:
 *   build/fuzz/fuzz_rt_decode -max_total_time=60 build/fuzz/corpus/rt_decode
 * `make fuzz-smoke` (run by CI) runs every target briefly, this one from
 * the seeds tests/fuzz/make_seeds.py writes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transit/rt_alerts.h"
#include "transit/rt_feed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    rt_feed *f = rt_feed_decode(data, size, err, sizeof err);
    if (!f) {
        if (!err[0])
            __builtin_trap();   /* a failure always says why */
        return 0;
    }
    /* walk what was decoded, so a dangling pointer shows */
    size_t sum = 0;
    for (uint32_t i = 0; i < f->trip_update_count; i++) {
        const rt_trip_update *t = &f->trip_updates[i];
        sum += t->trip_id ? strlen(t->trip_id) : 0;
        for (uint32_t k = 0; k < t->stop_count; k++)
            sum += t->stops[k].stop_id ? strlen(t->stops[k].stop_id) : t->stops[k].stop_sequence;
    }
    alert **alerts = NULL;
    uint32_t rejected = 0;
    long n = rt_alerts_from_feed(f, 0, &alerts, &rejected, err, sizeof err);
    if (n > 0)
        rt_alerts_free(alerts, (uint32_t)n);
    else if (n == 0)
        rt_alerts_free(alerts, 0);
    rt_feed_free(f);
    return sum == (size_t)-1;
}
