/* fuzz_merge_cache_index.c — libFuzzer target for the merge cache's index
 * (src/import/merge_cache.c, DATA/merge-cache/.merge_index).
 *
 * Why it exists: the index is read back from disk by every re-import of
 * several feeds, and its decoder follows lengths and counts it finds there.
 * The input is taken as an index body with its SHA-256 appended (so
 * mutations reach the decoder past the checksum), and as it is. What must
 * hold: a parsed index's id lists walk to their exact end and every range
 * ends inside 64 bits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/merge_cache.h"
#include "transit/sha256.h"

static void check(const mc_index *idx)
{
    for (int i = 0; i < idx->nfeeds; i++) {
        const mc_feed *f = &idx->feeds[i];
        const mc_buf *lists[] = {&f->defined, &f->foreign};
        for (int k = 0; k < 2; k++) {
            size_t pos = 0, len;
            int t;
            const char *id;
            while (mc_ids_next(lists[k], &pos, &t, &id, &len))
                if (t < 0 || t > 255) abort();
            if (pos != lists[k]->len) abort();
        }
        for (int r = 0; r < idx->nfiles; r++)
            if (f->part[r].off + f->part[r].len < f->part[r].off) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mc_index idx;
    if (mc_index_parse(data, size, 12, &idx) == 0) {
        check(&idx);
        mc_index_free(&idx);
    }
    uint8_t *whole = malloc(size + 32);
    if (!whole)
        return 0;
    memcpy(whole, data, size);
    sha256(data, size, whole + size);
    if (mc_index_parse(whole, size + 32, 12, &idx) == 0) {
        check(&idx);
        mc_index_free(&idx);
    }
    free(whole);
    return 0;
}
