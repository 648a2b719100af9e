/* api_dataset.c — GET /v1/dataset: the manifest of the version being served.
 *
 * Why it exists: a replica (or a phone, or `transitd export`) needs to know
 * which files make the served version and what each must hash to
 * (transit/snapshot.h). Hashing the stores takes a moment, so the manifest
 * is derived once per dataset, as a dataset extension, and freed with it.
 * `profile=phone` lists only what the client library reads (the timetable,
 * schedule.sqlite and the version marker; shapes.sqlite with
 * include=shapes): Brooklyn's 16.6 MB become 13.2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "transit/datadir.h"
#include "transit/feed_validity.h"
#include "transit/snapshot.h"

static void *derive_manifest(const dataset *ds, char *err, size_t errlen)
{
    snapshot_manifest *m = malloc(sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (snapshot_manifest_of(dataset_dir(ds), m, err, errlen) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

static const dataset_extension manifest_extension = {
    .name = "snapshot manifest", .derive = derive_manifest, .release = free};

const snapshot_manifest *api_dataset_manifest(dataset *ds, char *err, size_t errlen)
{
    return dataset_extension_get(ds, &manifest_extension, err, errlen);
}

void api_dataset_manifest_write(json_writer *out, const snapshot_manifest *m,
                                const feed_validity *validity)
{
    char created[21];
    rfc3339_format_utc(m->created, created);
    json_object_begin(out);
    json_kv_string(out, "version", m->version);
    json_kv_string(out, "created", created);
    if (validity)
        feed_validity_write(out, validity);
    json_key(out, "files");
    json_array_begin(out);
    for (uint32_t i = 0; i < m->nfiles; i++) {
        json_object_begin(out);
        json_kv_string(out, "name", m->files[i].name);
        json_kv_int(out, "size", (int64_t)m->files[i].size);
        json_kv_string(out, "sha256", m->files[i].sha256);
        json_object_end(out);
    }
    json_array_end(out);
    json_object_end(out);
}

bool api_dataset_phone_file(const char *name, bool with_shapes)
{
    return strcmp(name, DATADIR_MARKER) == 0 || strcmp(name, "timetable.bin") == 0 ||
           strcmp(name, "schedule.sqlite") == 0 || (with_shapes && strcmp(name, "shapes.sqlite") == 0);
}

int api_dataset(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                api_problem *prob, int *cache_seconds)
{
    (void)t;
    static const char *const allowed[] = {"profile", "include", NULL};
    static const char *const includes[] = {"shapes", NULL};
    unsigned include = 0;
    if (api_check_request(req, allowed, NULL, ds, prob) || api_get_include(req, includes, &include, prob))
        return prob->status;
    const char *profile = api_param_value(req, "profile");
    bool phone = profile && strcmp(profile, "phone") == 0;
    if (profile && !phone && strcmp(profile, "full") != 0)
        return api_fail(prob, 400, "profile", "profile must be full or phone, not '%.40s'", profile);
    /* include=shapes with the full profile asks for what it has already: every
     * file (a 400 there would make a valid-looking request fail for nothing) */
    char err[256];
    const snapshot_manifest *m = api_dataset_manifest(ds, err, sizeof err);
    if (!m)
        return api_fail(prob, 500, NULL, "cannot list the dataset's files: %s", err);
    feed_validity validity;
    feed_validity_at(ds, req->now, &validity);
    if (phone) {
        snapshot_manifest *slim = malloc(sizeof *slim);
        if (!slim)
            return api_fail(prob, 503, NULL, "out of memory");
        *slim = *m;
        slim->nfiles = 0;
        for (uint32_t i = 0; i < m->nfiles; i++)
            if (api_dataset_phone_file(m->files[i].name, include & 1))
                slim->files[slim->nfiles++] = m->files[i];
        api_dataset_manifest_write(out, slim, &validity);
        free(slim);
    } else {
        api_dataset_manifest_write(out, m, &validity);
    }
    return api_finish(out, prob, cache_seconds, 0);
}
