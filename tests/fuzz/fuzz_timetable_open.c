/* fuzz_timetable_open.c — libFuzzer target for opening timetable.bin
 * (dataset_open in src/store/dataset.c: header, sections, then the derived indexes).
 *
 * Why it exists: the server maps whatever file `current` points to; a damaged
 * or hostile timetable.bin must be refused with a message, never crash it.
 * The input is written as DIR/timetable.bin. Its file_size and checksum
 * header fields are set to match (when the input is long enough to hold a
 * header), so the fuzzer gets past the CRC to the structural checks behind
 * it; everything else in the header is the fuzzer's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/query.h"
#include "store/timetable_format.h"

static char dir[256], path[300];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz-tt-%ld", tmp ? tmp : "/tmp", (long)getpid());
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/timetable.bin", dir);
    }
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (size >= sizeof(tt_header)) {
        tt_header h;
        memcpy(&h, buf, sizeof h);
        h.file_size = size;
        h.checksum = tt_crc32(tt_crc32_init(), buf + sizeof h, size - sizeof h);
        memcpy(buf, &h, sizeof h);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(buf, 1, size, f);
    fclose(f);
    free(buf);

    char err[512];
    dataset *ds = dataset_open(dir, err, sizeof err);
    if (ds) {
        dataset_counts c;
        dataset_get_counts(ds, &c);
        dataset_close(ds);
    } else if (!err[0]) {
        abort();   /* a refusal always says why */
    }
    return 0;
}
