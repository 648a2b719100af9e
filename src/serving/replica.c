/* replica.c — a replica's dataset, polled from its primary (transit/replica.h).
 *
 * Why it exists: see transit/replica.h. The transfer is libcurl's (HTTP and
 * HTTPS, redirects, Range); the manifest is read with jansson; the version is
 * installed with the importer's own crash-safe steps (datadir.h), so a
 * replica's data directory looks exactly like one an import wrote and every
 * reader (serve's follower, `transitd query`) works on it unchanged.
 *
 * Staging: DATA/versions/.tmp-<version>-<pid>/, the importer's name for work
 * in progress, so an interrupted replica's leftovers are recognised and
 * removed like an interrupted import's. Within one process a transfer
 * resumes from what the staging directory holds.
 */
#include "transit/replica.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transit/alert.h"
#include "transit/datadir.h"
#include "transit/rfc3339.h"
#include "transit/rt_alerts.h"
#include "transit/rt_encode.h"
#include "transit/rt_fetch.h"
#include "transit/serving.h"
#include "transit/snapshot.h"

#define MANIFEST_MAX (1 << 20)

struct replica {
    serving *state;               /* where the primary's live state is shown */
    char *data_dir;
    char *url;                    /* without a trailing '/' */
    const char *given_url;
    unsigned interval_s;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;         /* status, and the stop flag's condition */
    pthread_cond_t wake;
    bool stop;
    replica_status status;
    char etag[128];               /* of the last manifest, for If-None-Match */
    snapshot_manifest manifest;   /* the last one read */
    bool have_manifest;
    /* the live state (a thread of its own, every LIVE_POLL_MS) */
    pthread_t live_thread;
    bool live_running;
    char alerts_etag[128], rt_etag[128], vp_etag[128];
    int64_t alerts_generation;    /* this replica's: one more for every change seen */
    bool primary_has_realtime, realtime_known;
    int64_t next_ready_check;
    char rt_path[4200];           /* DATA/.replica-trip-updates.pb: the primary's, as fetched */
    char vp_path[4200];           /* DATA/.replica-vehicle-positions.pb: the same for its vehicles */
    char live_version[16];        /* the dataset the live state was last shown on */
    bool live_failing;            /* the last alert mirror failed (said once on stderr) */
    char live_error[200];
};

/* How often the primary's alerts and trip updates are asked for (each poll
 * is conditional: an idle primary answers 304 with no body). */
#define LIVE_POLL_MS 500

/* ------------------------------------------------------------ HTTP */

typedef struct body_buf {
    char *data;
    size_t len, cap, max;
} body_buf;

static size_t on_manifest_bytes(char *p, size_t size, size_t n, void *cls)
{
    body_buf *b = cls;
    size_t len = size * n;
    if (b->len + len + 1 > b->max)
        return 0;   /* too large: abort */
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16384;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

typedef struct header_capture {
    char etag[128];
} header_capture;

static size_t on_header(char *line, size_t size, size_t n, void *cls)
{
    header_capture *h = cls;
    size_t len = size * n;
    if (len > 5 && strncasecmp(line, "ETag:", 5) == 0) {
        const char *v = line + 5;
        while (*v == ' ')
            v++;
        size_t vl = (size_t)(line + len - v);
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        if (vl < sizeof h->etag) {
            memcpy(h->etag, v, vl);
            h->etag[vl] = '\0';
        }
    } else if (len > 5 && strncasecmp(line, "HTTP/", 5) == 0) {
        h->etag[0] = '\0';   /* a redirect's headers came first: forget them */
    }
    return len;
}

static CURL *new_handle(const char *url, char *errbuf)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);   /* a stalled transfer: cut */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 15L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "transitd (replica)");
    return c;
}

/* A conditional GET of url into *body (NUL-terminated): 200 with the body
 * and the new ETag in etag, 304, another status, or -1 when it failed. */
static long get_conditional_why(const char *url, char *etag, size_t etag_cap, body_buf *body,
                                size_t max, char *why, size_t why_cap)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *c = new_handle(url, errbuf);
    if (!c)
        return -1;
    body->max = max;
    header_capture h = {""};
    struct curl_slist *headers = NULL;
    if (etag && etag[0]) {
        char line[200];
        snprintf(line, sizeof line, "If-None-Match: %s", etag);
        headers = curl_slist_append(headers, line);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_manifest_bytes);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(c);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    if (status == 200 && etag)
        snprintf(etag, etag_cap, "%s", h.etag);
    if (rc != CURLE_OK && why)
        snprintf(why, why_cap, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    return status;
}

static long get_conditional(const char *url, char *etag, size_t etag_cap, body_buf *body, size_t max)
{
    return get_conditional_why(url, etag, etag_cap, body, max, NULL, 0);
}

/* ------------------------------------------------------------ status */

static void set_error(replica *r, const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&r->lock);
    snprintf(r->status.last_error, sizeof r->status.last_error, fmt, a, b);
    pthread_mutex_unlock(&r->lock);
}

static void count(replica *r, uint64_t *field, uint64_t n)
{
    pthread_mutex_lock(&r->lock);
    *field += n;
    pthread_mutex_unlock(&r->lock);
}

/* ------------------------------------------------------------ the manifest */

/* GETs the manifest: 1 new (into r->manifest), 0 unchanged (304), -1 error. */
static int fetch_manifest(replica *r)
{
    char url[2200], err[300], etag[128], why[CURL_ERROR_SIZE] = "";
    snprintf(url, sizeof url, "%s/v1/dataset", r->url);
    snprintf(etag, sizeof etag, "%s", r->have_manifest ? r->etag : "");
    body_buf b = {NULL, 0, 0, 0};
    long status = get_conditional_why(url, etag, sizeof etag, &b, MANIFEST_MAX, why, sizeof why);
    int result = -1;
    if (status < 0) {
        set_error(r, "cannot read %s: %s", url, why);
    } else if (status == 304) {
        result = 0;
    } else if (status != 200) {
        char s[16];
        snprintf(s, sizeof s, "%ld", status);
        set_error(r, "%s answered %s", url, s);
    } else {
        snapshot_manifest m;
        if (snapshot_manifest_parse(b.data ? b.data : "", b.len, &m, err, sizeof err) != 0) {
            set_error(r, "%s: %s", url, err);
        } else {
            result = !r->have_manifest || memcmp(&m, &r->manifest, sizeof m) != 0;
            r->manifest = m;
            r->have_manifest = true;
            snprintf(r->etag, sizeof r->etag, "%s", etag);
        }
    }
    free(b.data);
    if (result >= 0) {
        pthread_mutex_lock(&r->lock);
        r->status.last_contact = (int64_t)time(NULL);
        snprintf(r->status.offered, sizeof r->status.offered, "%s", r->manifest.version);
        pthread_mutex_unlock(&r->lock);
    }
    return result;
}

/* ------------------------------------------------------------ files */

typedef struct file_sink {
    int fd;
    uint64_t written;
    replica *r;                   /* bytes_fetched counts as they arrive */
} file_sink;

static void count(replica *r, uint64_t *field, uint64_t n);

static size_t on_file_bytes(char *p, size_t size, size_t n, void *cls)
{
    file_sink *s = cls;
    size_t len = size * n, done = 0;
    while (done < len) {
        ssize_t w = write(s->fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        done += (size_t)w;
    }
    s->written += len;
    count(s->r, &s->r->status.bytes_fetched, len);
    return len;
}

/* Brings staging/name to the manifest's size and digest: resumes from what
 * is there (Range, If-Range on the digest), else fetches it whole. true
 * when the file is complete and verified. */
static bool fetch_file(replica *r, const char *staging, const snapshot_file *f)
{
    char path[4300], url[2400], errbuf[CURL_ERROR_SIZE] = "", hex[65];
    snprintf(path, sizeof path, "%s/%s", staging, f->name);
    snprintf(url, sizeof url, "%s/v1/dataset/%s/%s", r->url, r->manifest.version, f->name);
    struct stat st;
    uint64_t have = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    if (have > f->size) {
        unlink(path);
        have = 0;
    }
    if (have < f->size) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            set_error(r, "cannot write %s: %s", path, strerror(errno));
            return false;
        }
        CURL *c = new_handle(url, errbuf);
        file_sink sink = {fd, 0, r};
        struct curl_slist *headers = NULL;
        char range[64], if_range[100];
        if (c && have > 0) {
            snprintf(range, sizeof range, "%llu-", (unsigned long long)have);
            curl_easy_setopt(c, CURLOPT_RANGE, range);
            snprintf(if_range, sizeof if_range, "If-Range: \"%s\"", f->sha256);
            headers = curl_slist_append(headers, if_range);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        }
        CURLcode rc = CURLE_FAILED_INIT;
        long status = 0;
        if (c && have == 0)   /* a whole file: gzip when the server offers it (the stores
                                  * compress to about 28 %); what arrives is the file's prefix,
                                  * so a cut transfer resumes uncompressed with Range */
            curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
        if (c) {
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_file_bytes);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
            /* a 200 to a ranged request would append the whole file: refuse it */
            curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
            rc = curl_easy_perform(c);
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_cleanup(c);
        }
        curl_slist_free_all(headers);
        bool fsynced = fsync(fd) == 0;
        close(fd);
        if (have > 0 && status == 206)
            count(r, &r->status.bytes_resumed, have);
        if (have > 0 && status == 200) {
            /* the server sent the whole file after our bytes: start again */
            unlink(path);
            set_error(r, "%s ignored the range; %s fetched again", url, f->name);
            return false;
        }
        if (rc != CURLE_OK || !fsynced) {
            set_error(r, "transfer of %s cut: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
            count(r, &r->status.transfers_failed, 1);
            return false;   /* what arrived stays: the next poll resumes */
        }
    }
    uint64_t size = 0;
    char err[300];
    if (snapshot_hash_file(path, hex, &size, err, sizeof err) != 0) {
        set_error(r, "%s%s", err, "");
        return false;
    }
    if (size != f->size || strcmp(hex, f->sha256) != 0) {
        unlink(path);   /* never activated; fetched whole next time */
        set_error(r, "%s does not match the manifest (SHA-256 %s); dropped", f->name, hex);
        count(r, &r->status.transfers_failed, 1);
        return false;
    }
    return true;
}

/* Removes this process's staging directories of versions other than keep
 * (a transfer the primary moved on from). */
static void drop_other_staging(const replica *r, const char *keep)
{
    char versions[4200], suffix[32];
    snprintf(versions, sizeof versions, "%s/versions", r->data_dir);
    snprintf(suffix, sizeof suffix, "-%ld", (long)getpid());
    DIR *d = opendir(versions);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name), sl = strlen(suffix);
        if (strncmp(e->d_name, ".tmp-", 5) != 0 || n <= sl + 5 ||
            strcmp(e->d_name + n - sl, suffix) != 0 || strncmp(e->d_name + 5, keep, strlen(keep)) == 0)
            continue;
        char path[4500];
        snprintf(path, sizeof path, "%s/%s", versions, e->d_name);
        datadir_remove_tree(path);
    }
    closedir(d);
}

/* Stages, verifies, installs and activates r->manifest's version. */
static int install_version(replica *r)
{
    char staging[4200], err[512];
    const char *v = r->manifest.version;
    if (datadir_prepare(r->data_dir, err, sizeof err) != 0 ||
        datadir_tmp_path(r->data_dir, v, getpid(), staging, sizeof staging) != 0) {
        set_error(r, "%s%s", err, "");
        return -1;
    }
    drop_other_staging(r, v);
    if (mkdir(staging, 0755) != 0 && errno != EEXIST) {
        set_error(r, "cannot create %s: %s", staging, strerror(errno));
        return -1;
    }
    for (uint32_t i = 0; i < r->manifest.nfiles; i++) {
        pthread_mutex_lock(&r->lock);
        bool stopping = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stopping || !fetch_file(r, staging, &r->manifest.files[i]))
            return -1;
    }
    datadir_marker marker;
    if (datadir_read_marker(staging, &marker) != 0 || strcmp(marker.version, v) != 0) {
        set_error(r, "the %s of version %s names another version", DATADIR_MARKER, v);
        count(r, &r->status.transfers_failed, 1);
        datadir_remove_tree(staging);
        return -1;
    }
    int lock_fd = -1;
    if (datadir_lock(r->data_dir, true, &lock_fd, err, sizeof err) != 0) {
        set_error(r, "%s%s", err, "");
        return -1;
    }
    datadir_prune_result pruned;
    int rc = datadir_sync_dir(staging, err, sizeof err) == 0 &&
                     datadir_install(r->data_dir, staging, v, err, sizeof err) == 0 &&
                     datadir_activate(r->data_dir, v, err, sizeof err) == 0
                 ? 1
                 : -1;
    if (rc == 1)
        datadir_prune(r->data_dir, DATADIR_KEEP_VERSIONS, &pruned, err, sizeof err);
    else
        set_error(r, "cannot activate version %s: %s", v, err);
    datadir_unlock(lock_fd);
    if (rc == 1) {
        pthread_mutex_lock(&r->lock);
        snprintf(r->status.installed, sizeof r->status.installed, "%s", v);
        r->status.versions_installed++;
        pthread_mutex_unlock(&r->lock);
    }
    return rc;
}

int replica_poll_once(replica *r)
{
    pthread_mutex_lock(&r->lock);
    r->status.polls++;
    r->status.last_poll = (int64_t)time(NULL);
    pthread_mutex_unlock(&r->lock);
    int m = fetch_manifest(r);
    int rc = m < 0 ? -1 : 0;
    if (m >= 0 && r->have_manifest) {
        char active[DATADIR_VERSION_LEN + 1];
        bool current = datadir_current(r->data_dir, active) == 0 &&
                       strcmp(active, r->manifest.version) == 0;
        if (!current)
            rc = install_version(r);
    }
    pthread_mutex_lock(&r->lock);
    if (rc < 0)
        r->status.polls_failed++;
    else
        r->status.last_error[0] = '\0';
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static void *replica_main(void *arg)
{
    replica *r = arg;
    for (;;) {
        int rc = replica_poll_once(r);
        if (rc < 0) {
            replica_status s;
            replica_get_status(r, &s);
            fprintf(stderr, "transitd replica: %s\n", s.last_error);
        } else if (rc == 1) {
            fprintf(stderr, "transitd replica: version %s from %s installed and activated\n",
                    r->manifest.version, r->given_url);
        }
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += r->interval_s;
        while (!r->stop && pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
            ;
        bool stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            return NULL;
    }
}

/* ------------------------------------------------------------ live state */

static int64_t utc_seconds(const char *text)
{
    int64_t secs = 0;
    bool has_offset = false;
    int32_t offset = 0;
    if (!text || rfc3339_parse(text, &secs, &has_offset, &offset) != 0)
        return 0;
    return has_offset ? secs - offset : secs;
}

static __thread char last_alert_error[200];

/* One alert of the primary's list as this server's alert. */
static alert *alert_of(json_t *obj)
{
    const char *id = json_string_value(json_object_get(obj, "id"));
    if (!id)
        return NULL;
    char *text = json_dumps(obj, JSON_COMPACT);
    if (!text)
        return NULL;
    alert_error aerr;
    alert *a = alert_parse(text, strlen(text), id, true, &aerr);
    free(text);
    if (!a)
        snprintf(last_alert_error, sizeof last_alert_error, "%s: %s", id, aerr.detail);
    if (a && alert_stamp(a, json_integer_value(json_object_get(obj, "revision")),
                         utc_seconds(json_string_value(json_object_get(obj, "created_at"))),
                         utc_seconds(json_string_value(json_object_get(obj, "updated_at")))) != 0) {
        alert_release(a);
        a = NULL;
    }
    return a;
}

/* The primary's alerts, every page, shown here when they changed. */
static void sync_alerts(replica *r)
{
    char url[2400], etag[128];
    snprintf(etag, sizeof etag, "%s", r->alerts_etag);
    snprintf(url, sizeof url, "%s/v1/alerts?limit=1000", r->url);
    body_buf b = {NULL, 0, 0, 0};
    long status = get_conditional(url, etag, sizeof etag, &b, 64u << 20);
    if (status == 304) {
        pthread_mutex_lock(&r->lock);
        r->status.live_checked = (int64_t)time(NULL);
        pthread_mutex_unlock(&r->lock);
    }
    if (status != 200) {   /* 304: unchanged; 404: a static mirror has none */
        free(b.data);
        return;
    }
    alert **stored = NULL, **rt = NULL;
    uint32_t nstored = 0, nrt = 0, cap = 0;
    bool ok = true;
    for (int page = 0; ok && page < 64; page++) {
        json_t *root = json_loads(b.data ? b.data : "", 0, NULL);
        json_t *list = json_object_get(root, "alerts");
        ok = json_is_array(list);
        for (size_t i = 0; ok && i < json_array_size(list); i++) {
            alert *a = alert_of(json_array_get(list, i));
            if (!a) {
                snprintf(r->live_error, sizeof r->live_error, "%s", last_alert_error);
                ok = false;
                break;
            }
            if (nstored + nrt + 1 > cap) {
                cap = cap ? cap * 2 : 64;
                alert **s2 = realloc(stored, cap * sizeof *s2), **r2 = s2 ? realloc(rt, cap * sizeof *r2) : NULL;
                if (s2)
                    stored = s2;
                if (r2)
                    rt = r2;
                if (!s2 || !r2) {
                    alert_release(a);
                    ok = false;
                    break;
                }
            }
            if (strncmp(a->id, "rt:", 3) == 0)
                rt[nrt++] = a;
            else
                stored[nstored++] = a;
        }
        const char *after = json_string_value(json_object_get(root, "next_after"));
        char next[2600];
        if (after)
            snprintf(next, sizeof next, "%s/v1/alerts?limit=1000&after=%s", r->url, after);
        json_decref(root);
        free(b.data);
        b = (body_buf){NULL, 0, 0, 0};
        if (!ok || !after)
            break;
        if (get_conditional(next, NULL, 0, &b, 64u << 20) != 200)
            ok = false;
    }
    free(b.data);
    if (ok) {
        if (!rt)
            rt = malloc(sizeof *rt);   /* an empty list the serving state can own */
        ok = rt && serving_mirror_alerts(r->state, stored, nstored, rt, nrt, ++r->alerts_generation);
        if (ok) {
            pthread_mutex_lock(&r->lock);
            r->status.live_checked = (int64_t)time(NULL);
            r->status.live_generation = r->alerts_generation;
            pthread_mutex_unlock(&r->lock);
            snprintf(r->alerts_etag, sizeof r->alerts_etag, "%s", etag);
            rt = NULL;   /* taken over */
            nrt = 0;
        }
    }
    if (!ok && !r->live_failing)
        fprintf(stderr, "transitd replica: cannot show the alerts of %s (out of memory, or one "
                        "that does not check: %s); retrying\n", r->url, r->live_error);
    r->live_failing = !ok;
    for (uint32_t i = 0; i < nstored; i++)
        alert_release(stored[i]);
    free(stored);
    if (rt)
        rt_alerts_free(rt, nrt);
}

/* Whether the primary has a realtime source (its /readyz says), checked
 * every few seconds: with one, this replica shows its trip updates. */
static void check_primary_realtime(replica *r, int64_t now)
{
    if (now < r->next_ready_check)
        return;
    r->next_ready_check = now + 5;
    char url[2400];
    snprintf(url, sizeof url, "%s/readyz", r->url);
    body_buf b = {NULL, 0, 0, 0};
    long status = get_conditional(url, NULL, 0, &b, 1u << 20);
    json_t *root = status == 200 ? json_loads(b.data ? b.data : "", 0, NULL) : NULL;
    json_t *rt = json_object_get(root, "realtime");
    if (json_is_boolean(rt)) {
        r->primary_has_realtime = json_is_true(rt);
        r->realtime_known = true;
    }
    json_decref(root);
    free(b.data);
}

/* Writes data[0..len) to `path` through a temporary file; false when it cannot. */
static bool write_file(const char *path, const void *data, size_t len)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool written = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        written = false;
    if (written && rename(tmp, path) == 0)
        return true;
    unlink(tmp);
    return false;
}

/* One of the primary's GTFS-Realtime exports into `path`, conditionally
 * (etag: the last one's, updated on a 200): 1 when a new one was written,
 * 0 when not (304, or a failure: the last file stays). */
static int fetch_export(replica *r, const char *what, const char *path, char *etag, size_t etag_cap)
{
    char url[2400];
    snprintf(url, sizeof url, "%s%s", r->url, what);
    body_buf b = {NULL, 0, 0, 0};
    long status = get_conditional(url, etag, etag_cap, &b, 256u << 20);
    int written = status == 200 && write_file(path, b.data ? b.data : "", b.len);
    free(b.data);
    return written;
}

/* The primary's trip updates and vehicle positions, this server's two
 * realtime sources (files), polled whenever either changed. */
static void sync_realtime(replica *r, int64_t now)
{
    check_primary_realtime(r, now);
    if (!r->realtime_known || !r->primary_has_realtime)
        return;
    char tu_etag[128], vp_etag[128], err[256];
    snprintf(tu_etag, sizeof tu_etag, "%s", r->rt_etag);
    snprintf(vp_etag, sizeof vp_etag, "%s", r->vp_etag);
    int changed = fetch_export(r, "/gtfs-rt/trip-updates.pb", r->rt_path, tu_etag, sizeof tu_etag);
    changed += fetch_export(r, "/gtfs-rt/vehicle-positions.pb", r->vp_path, vp_etag, sizeof vp_etag);
    if (!changed || access(r->rt_path, F_OK) != 0)
        return;
    if (!serving_realtime(r->state)) {
        /* a primary that exports no vehicles yet: an empty feed in their place */
        uint8_t *empty = NULL;
        size_t len = 0;
        if (access(r->vp_path, F_OK) != 0 && rt_encode_trip_updates(NULL, (uint64_t)now, &empty, &len) == 0)
            write_file(r->vp_path, empty, len);
        free(empty);
        rt_source_list list = {.count = 2};
        list.sources[0].location = r->rt_path;
        list.sources[1].location = r->vp_path;
        if (!serving_set_realtime_sources(r->state, &list, 30, 0, err, sizeof err)) {
            set_error(r, "%s%s", err, "");
            return;
        }
    }
    if (serving_poll_realtime(r->state, now, err, sizeof err) != RT_POLL_FAILED) {
        snprintf(r->rt_etag, sizeof r->rt_etag, "%s", tu_etag);
        snprintf(r->vp_etag, sizeof r->vp_etag, "%s", vp_etag);
    }
}

static void *live_main(void *arg)
{
    replica *r = arg;
    for (;;) {
        /* alerts resolve against the dataset: none before the first one, and
         * everything asked for again (no If-None-Match) after a switch */
        dataset *ds = serving_acquire_dataset(r->state);
        if (ds) {
            if (strcmp(r->live_version, dataset_version(ds)) != 0) {
                snprintf(r->live_version, sizeof r->live_version, "%s", dataset_version(ds));
                r->alerts_etag[0] = r->rt_etag[0] = r->vp_etag[0] = '\0';
            }
            dataset_release(ds);
            sync_alerts(r);
            sync_realtime(r, (int64_t)time(NULL));
        }
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += LIVE_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!r->stop && pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
            ;
        bool stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            return NULL;
    }
}

replica *replica_start(serving *state, const char *data_dir, const char *url, unsigned interval_s,
                       char *err, size_t cap)
{
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        snprintf(err, cap, "--replica-of must be an http:// or https:// URL, got '%s'", url);
        return NULL;
    }
    replica *r = calloc(1, sizeof *r);
    if (!r || !(r->data_dir = strdup(data_dir)) || !(r->url = strdup(url))) {
        snprintf(err, cap, "out of memory");
        if (r)
            free(r->data_dir);
        free(r);
        return NULL;
    }
    size_t n = strlen(r->url);
    while (n > 8 && r->url[n - 1] == '/')
        r->url[--n] = '\0';
    r->given_url = url;
    r->state = state;
    snprintf(r->rt_path, sizeof r->rt_path, "%s/.replica-trip-updates.pb", data_dir);
    snprintf(r->vp_path, sizeof r->vp_path, "%s/.replica-vehicle-positions.pb", data_dir);
    r->interval_s = interval_s ? interval_s : 1;
    r->status.primary = url;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (datadir_prepare(data_dir, err, cap) != 0) {
        replica_stop(r);
        return NULL;
    }
    rt_fetch_global_init();
    if (pthread_create(&r->thread, NULL, replica_main, r) != 0) {
        snprintf(err, cap, "cannot start the replica thread");
        rt_fetch_global_cleanup();
        replica_stop(r);
        return NULL;
    }
    r->running = true;
    if (state && pthread_create(&r->live_thread, NULL, live_main, r) == 0)
        r->live_running = true;
    else if (state)
        fprintf(stderr, "transitd replica: cannot start the live-state thread; alerts and "
                        "realtime are not mirrored\n");
    return r;
}

void replica_stop(replica *r)
{
    if (!r)
        return;
    if (r->running) {
        pthread_mutex_lock(&r->lock);
        r->stop = true;
        pthread_cond_broadcast(&r->wake);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
        if (r->live_running)
            pthread_join(r->live_thread, NULL);
        rt_fetch_global_cleanup();
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    free(r->data_dir);
    free(r->url);
    free(r);
}

void replica_get_status(replica *r, replica_status *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->status;
    pthread_mutex_unlock(&r->lock);
}

size_t replica_render_metrics(replica *r, char *out, size_t cap)
{
    replica_status s;
    replica_get_status(r, &s);
    int n = snprintf(
        out, cap,
        "# HELP transitd_replica_polls_total Polls of the primary's manifest, by result.\n"
        "# TYPE transitd_replica_polls_total counter\n"
        "transitd_replica_polls_total{result=\"ok\"} %llu\n"
        "transitd_replica_polls_total{result=\"failed\"} %llu\n"
        "# HELP transitd_replica_versions_installed_total Versions taken from the primary.\n"
        "# TYPE transitd_replica_versions_installed_total counter\n"
        "transitd_replica_versions_installed_total %llu\n"
        "# HELP transitd_replica_transfer_failures_total Files refused (size or SHA-256) or "
        "cut off; none of them activates.\n"
        "# TYPE transitd_replica_transfer_failures_total counter\n"
        "transitd_replica_transfer_failures_total %llu\n"
        "# HELP transitd_replica_bytes_fetched_total File bytes received from the primary.\n"
        "# TYPE transitd_replica_bytes_fetched_total counter\n"
        "transitd_replica_bytes_fetched_total %llu\n"
        "# HELP transitd_replica_bytes_resumed_total Bytes a resumed transfer did not fetch "
        "again.\n"
        "# TYPE transitd_replica_bytes_resumed_total counter\n"
        "transitd_replica_bytes_resumed_total %llu\n"
        "# HELP transitd_replica_last_contact_seconds Unix time of the primary's last answer.\n"
        "# TYPE transitd_replica_last_contact_seconds gauge\n"
        "transitd_replica_last_contact_seconds %lld\n",
        (unsigned long long)(s.polls - s.polls_failed), (unsigned long long)s.polls_failed,
        (unsigned long long)s.versions_installed, (unsigned long long)s.transfers_failed,
        (unsigned long long)s.bytes_fetched, (unsigned long long)s.bytes_resumed,
        (long long)s.last_contact);
    return n < 0 ? 0 : (size_t)n;
}
