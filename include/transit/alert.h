/* alert.h — one service alert, as the alerts API reads, checks and writes it.
 *
 * Why it exists: alerts are the one thing clients write. A body arrives as
 * JSON; it is checked field by field (a bad one is named by its JSON pointer),
 * turned into a canonical JSON text (fixed key order, defaults filled in),
 * and kept as an immutable, reference-counted `alert`: the canonical text is
 * what live.sqlite stores and what responses copy; the periods and informed
 * entities are plain arrays for matching against departures. The fields and
 * enum names follow GTFS-Realtime's Alert message.
 */
#ifndef TRANSIT_ALERT_H
#define TRANSIT_ALERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALERT_ID_MAX 64            /* bytes of an id: [A-Za-z0-9._~:-] */
#define ALERT_PERIODS_MAX 64
#define ALERT_ENTITIES_MAX 256
#define ALERT_TRANSLATIONS_MAX 16
#define ALERT_TEXT_MAX 4096        /* bytes of one translation's text */
#define ALERT_REF_ID_MAX 255       /* bytes of a stop, route, trip or agency id */
#define ALERT_FEED_MAX 47          /* bytes of an informed entity's feed name */
#define ALERT_NONE_DATE INT32_MIN

/* [start, end) in Unix seconds; INT64_MIN / INT64_MAX when open. */
typedef struct alert_period {
    int64_t start, end;
} alert_period;

/* One informed entity (GTFS-RT EntitySelector): every field given must match. */
typedef struct alert_entity {
    const char *agency_id, *route_id, *stop_id, *trip_id;   /* NULL when absent */
    int32_t route_type;      /* -1 when absent */
    int32_t direction_id;    /* -1 when absent */
    int32_t start_date;      /* the trip's service day, days since 1970-01-01, or ALERT_NONE_DATE */
    const char *feed;        /* the feed of a merged dataset the ids belong to (its "feed:id" is
                                used where the dataset has it), or NULL */
} alert_entity;

/* The three TranslatedStrings of an alert, in the order they are written. */
#define ALERT_TEXT_FIELDS 3        /* header_text, description_text, url */

/* One translation of a text, ready to be written. */
typedef struct alert_translation {
    const char *language;          /* its BCP 47 tag, or NULL when it has none */
    const char *text_json;         /* the text as a JSON string, quotes included */
    size_t text_json_len;
} alert_translation;

/* A TranslatedString of the alert: every translation, and all of them as the
 * canonical content holds them (the "translation" array). count 0: null. */
typedef struct alert_text {
    uint32_t count;
    const alert_translation *items;
    const char *translations_json;
    size_t translations_json_len;
} alert_text;

typedef struct alert {
    long refs;                          /* __atomic */
    char id[ALERT_ID_MAX + 1];
    int64_t revision;                   /* the live store's generation at its last write */
    int64_t created_at, updated_at;     /* Unix seconds */
    uint32_t nperiods, nentities;
    alert_period *periods;
    alert_entity *entities;
    char *content;                      /* canonical JSON object of the written fields */
    size_t content_len;
    char *json;                         /* the representation: id, revision, times, content, each
                                           text's chosen translation as no request asks (alert_write) */
    size_t json_len;
    alert_text texts[ALERT_TEXT_FIELDS];
    char *texts_mem;                    /* what texts point into */
    char *head;                         /* the representation up to its texts: {"id":...,"severity_level":"..." */
    size_t head_len;
    char *content_head;                 /* the content without its texts, as the head ends: "active_period":... */
    size_t content_head_len;
} alert;

/* Why a body was refused: 400 (not JSON, not an object) or 422 (a field). */
typedef struct alert_error {
    int status;
    char pointer[160];                  /* JSON pointer of the field, "" for the whole body */
    char detail[256];
} alert_error;

/* Checks a request body and returns a new alert (one reference) holding its
 * canonical content, or NULL with err filled. `id` is the id the alert will
 * have (the path's for PUT): an "id" member must equal it; `allow_id` false
 * (POST) refuses any "id" member. Read-only members (revision, created_at,
 * updated_at) are accepted and ignored, so a GET body can be PUT back. */
alert *alert_parse(const char *body, size_t len, const char *id, bool allow_id, alert_error *err);

/* Applies an RFC 7396 JSON merge patch to `old`'s content and checks the
 * result as alert_parse does. */
alert *alert_merge_patch(const alert *old, const char *patch, size_t len, alert_error *err);

/* Rebuilds an alert from stored content (live.sqlite); the store's values for
 * the id, revision and times. NULL with err when the content does not check. */
alert *alert_from_store(const char *id, const char *content, size_t len, int64_t revision,
                        int64_t created_at, int64_t updated_at, alert_error *err);

/* Sets the id, revision and times and composes a->json. Returns 0, or -1
 * when out of memory. */
int alert_stamp(alert *a, int64_t revision, int64_t created_at, int64_t updated_at);

alert *alert_retain(alert *a);
void alert_release(alert *a);

/* Whether `id` may name an alert (1..ALERT_ID_MAX bytes of [A-Za-z0-9._~:-]). */
bool alert_id_valid(const char *id);
/* A new random id ("al-" and 20 hex digits) into out. */
void alert_new_id(char out[ALERT_ID_MAX + 1]);
/* Whether one of the alert's periods holds `instant` (no periods: always). */
bool alert_active_at(const alert *a, int64_t instant);
/* Whether the alert can still become active at or after `instant`. */
bool alert_current_or_future(const alert *a, int64_t instant);

#endif
