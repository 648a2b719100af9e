/* api_params.c — the endpoints' problems and the checks of their parameters.
 *
 * Why it exists: every endpoint rejects a bad request the same way (an
 * unknown, repeated, missing, malformed or out-of-range parameter is a 400
 * whose detail names it) and reads its values with the same parsers, which
 * take no locale and allocate nothing. Those checks, and the RFC 9457
 * problem they fill, live here; the endpoint files call them first.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"

#define RADIUS_DEFAULT 500
#define WINDOW_MINUTES_DEFAULT 60

/* ------------------------------------------------------------ problems */

int api_fail(api_problem *prob, int status, const char *param, const char *fmt, ...)
{
    prob->status = status;
    switch (status) {
    case 400: prob->title = "Bad Request"; break;
    case 404: prob->title = "Not Found"; break;
    case 410: prob->title = "Gone"; break;
    case 422: prob->title = "Unprocessable Content"; break;
    case 503: prob->title = "Service Unavailable"; break;
    default: prob->title = "Internal Server Error"; break;
    }
    snprintf(prob->param, sizeof prob->param, "%s", param ? param : "");
    prob->pointer[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prob->detail, sizeof prob->detail, fmt, ap);
    va_end(ap);
    return status;
}

/* Maps an engine error to a problem. */
int api_query_problem(api_problem *prob, int rc, const query_error *err)
{
    if (rc == QUERY_EINVAL)
        return api_fail(prob, 400, err->param, "%s", err->message);
    if (rc == QUERY_ENOTFOUND)
        return api_fail(prob, 404, err->param, "%s", err->message);
    return api_fail(prob, 503, "", "the query could not be answered: %s",
                    err->message[0] ? err->message : "out of memory");
}

int api_no_dataset(api_problem *prob)
{
    return api_fail(prob, 503, "", "no dataset is loaded");
}

void api_problem_begin(const api_problem *prob, const char *instance_path, json_writer *out)
{
    json_object_begin(out);
    json_kv_string(out, "type", "about:blank");
    json_kv_string(out, "title", prob->title ? prob->title : "Error");
    json_kv_int(out, "status", prob->status);
    json_kv_string(out, "detail", prob->detail);
    if (instance_path)
        json_kv_string(out, "instance", instance_path);
    if (prob->pointer[0])
        json_kv_string(out, "pointer", prob->pointer);
}

void api_problem_write(const api_problem *prob, const char *instance_path, json_writer *out)
{
    api_problem_begin(prob, instance_path, out);
    json_object_end(out);
}

/* ------------------------------------------------------------ parameters */

int api_parse_time(const dataset *ds, const char *s, int64_t *instant)
{
    int64_t local;
    bool has_offset;
    int32_t offset;
    if (rfc3339_parse(s, &local, &has_offset, &offset) != 0)
        return -1;
    if (has_offset) {
        *instant = local - offset;
        return 0;
    }
    if (!ds)
        return -1;   /* a local time means nothing without the feed's zone */
    *instant = dataset_local_to_instant(ds, local);
    return 0;
}

/* The allowed list of an endpoint that takes no query parameters. */
const char *const api_no_params[] = {NULL};

/* Parameter names differ in their first byte far more often than not:
 * comparing it first spares most string comparisons. */
static inline bool same_name(const char *a, const char *b)
{
    return a[0] == b[0] && strcmp(a, b) == 0;
}

/* Rejects parameters the endpoint does not take, and repeated ones (an
 * endpoint takes at most 64: a bit each marks the ones seen). */
int api_check_params(const api_request *req, const char *const *allowed, api_problem *prob)
{
    uint64_t seen = 0;
    for (int i = 0; i < req->nparams; i++) {
        const char *key = req->params[i].key ? req->params[i].key : "";
        int known = -1;
        for (int a = 0; a < 64 && allowed[a] && known < 0; a++)
            if (same_name(allowed[a], key))
                known = a;
        if (known < 0)
            return api_fail(prob, 400, key, "unknown parameter '%s'", key);
        if (seen & ((uint64_t)1 << known))
            return api_fail(prob, 400, key, "duplicate parameter '%s'", key);
        seen |= (uint64_t)1 << known;
    }
    return 0;
}

const char *api_param_value(const api_request *req, const char *name)
{
    for (int i = 0; i < req->nparams; i++)
        if (req->params[i].key && same_name(req->params[i].key, name))
            return req->params[i].value ? req->params[i].value : "";
    return NULL;
}

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A decimal "-?DIGITS[.DIGITS][e[+-]DIGITS]" without libc (strtod follows the locale).
 * Up to 15 significant digits the result is the correctly rounded double. */
static bool parse_decimal(const char *s, double *out)
{
    const char *p = s;
    bool negative = *p == '-';
    if (negative)
        p++;
    uint64_t mantissa = 0;
    int significant = 0, scale = 0, int_digits = 0, frac_digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (significant < 18) {
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            if (mantissa)
                significant++;
        } else {
            scale--;   /* a dropped integer digit: multiply by 10 later */
        }
        p++;
        int_digits++;
    }
    if (int_digits == 0 || int_digits > 308)
        return false;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (significant < 18) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                if (mantissa)
                    significant++;
                scale++;
            }
            p++;
            frac_digits++;
        }
        if (frac_digits == 0)
            return false;
    }
    if (*p == 'e' || *p == 'E') {   /* JSON's exponent, as clients print small and large numbers */
        p++;
        bool exp_negative = *p == '-';
        if (*p == '-' || *p == '+')
            p++;
        int exponent = 0, exp_digits = 0;
        while (*p >= '0' && *p <= '9' && exp_digits < 4) {
            exponent = exponent * 10 + (*p - '0');
            p++;
            exp_digits++;
        }
        if (exp_digits == 0)
            return false;
        scale += exp_negative ? exponent : -exponent;
    }
    if (*p != '\0')
        return false;
    double v = (double)mantissa;
    while (scale < 0) {
        int step = -scale > 22 ? 22 : -scale;
        v *= pow10_exact[step];
        scale += step;
    }
    while (scale > 0) {
        int step = scale > 22 ? 22 : scale;
        v /= pow10_exact[step];
        scale -= step;
    }
    *out = negative ? -v : v;
    return true;
}

/* A decimal integer "-?DIGITS" of at most 9 digits. */
static bool parse_small_int(const char *s, long *out)
{
    const char *p = s;
    bool negative = *p == '-';
    if (negative)
        p++;
    long v = 0;
    int n = 0;
    while (*p >= '0' && *p <= '9') {
        if (++n > 9)
            return false;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (n == 0 || *p != '\0')
        return false;
    *out = negative ? -v : v;
    return true;
}

int api_missing_param(api_problem *prob, const char *name)
{
    return api_fail(prob, 400, name, "missing required parameter '%s'", name);
}

int api_get_coordinate(const api_request *req, const char *name, double limit, double *out,
                       api_problem *prob)
{
    const char *v = api_param_value(req, name);
    if (!v)
        return api_missing_param(prob, name);
    if (!parse_decimal(v, out) || *out < -limit || *out > limit)
        return api_fail(prob, 400, name, "%s must be between %d and %d", name, -(int)limit,
                        (int)limit);
    return 0;
}

int api_get_int(const api_request *req, const char *name, long def, long min, long max,
                const char *what, long *out, api_problem *prob)
{
    const char *v = api_param_value(req, name);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!parse_small_int(v, out) || *out < min || *out > max)
        return api_fail(prob, 400, name, "%s must be %s between %ld and %ld", name, what, min,
                        max);
    return 0;
}

int api_get_radius(const api_request *req, long *out, api_problem *prob)
{
    return api_get_int(req, "radius", RADIUS_DEFAULT, QUERY_RADIUS_MIN, QUERY_RADIUS_MAX,
                       "an integer number of metres", out, prob);
}

int api_get_window(const api_request *req, long *out, api_problem *prob)
{
    return api_get_int(req, "window", WINDOW_MINUTES_DEFAULT, QUERY_WINDOW_MIN / 60,
                       QUERY_WINDOW_MAX / 60, "an integer number of minutes", out, prob);
}

int api_get_limit(const api_request *req, long def, long *out, api_problem *prob)
{
    return api_get_int(req, "limit", def, QUERY_LIMIT_MIN, QUERY_LIMIT_MAX, "an integer", out,
                       prob);
}

int api_get_time_syntax(const api_request *req, time_param *tp, api_problem *prob)
{
    const char *v = api_param_value(req, "time");
    memset(tp, 0, sizeof *tp);
    if (!v)
        return 0;
    tp->given = true;
    if (rfc3339_parse(v, &tp->local, &tp->has_offset, &tp->offset) != 0)
        return api_fail(prob, 400, "time",
                        "time must be an RFC 3339 date-time such as 2026-11-21T18:15:00-05:00 "
                        "or a local date-time in the feed timezone such as 2026-11-21T18:15");
    return 0;
}

int64_t api_resolve_time(const dataset *ds, const api_request *req, const time_param *tp)
{
    if (!tp->given)
        return req->now;
    if (tp->has_offset)
        return tp->local - tp->offset;
    return dataset_local_to_instant(ds, tp->local);
}

int api_need_id(const api_request *req, const char *what, api_problem *prob)
{
    if (!req->id || !req->id[0])
        return api_fail(prob, 400, what, "missing %s", what);
    return 0;
}

/* The whole prologue of an endpoint that takes no query parameters beyond
 * `allowed` checks: unknown or repeated parameters, then the path id when
 * `id_name` is given (both 400), then the dataset (503). */
int api_check_request(const api_request *req, const char *const *allowed, const char *id_name,
                      const dataset *ds, api_problem *prob)
{
    if (api_check_params(req, allowed, prob) || (id_name && api_need_id(req, id_name, prob)))
        return prob->status;
    if (!ds)
        return api_no_dataset(prob);
    return 0;
}


int api_get_kind(const api_request *req, query_kind *out, api_problem *prob)
{
    const char *v = api_param_value(req, "kind");
    *out = QUERY_DEPARTURES;
    if (!v)
        return 0;
    if (strcmp(v, "departures") == 0)
        *out = QUERY_DEPARTURES;
    else if (strcmp(v, "arrivals") == 0)
        *out = QUERY_ARRIVALS;
    else if (strcmp(v, "both") == 0)
        *out = QUERY_BOTH;
    else
        return api_fail(prob, 400, "kind", "kind must be departures, arrivals or both");
    return 0;
}

int api_get_realtime_order(const api_request *req, board_order *out, api_problem *prob)
{
    const char *v = api_param_value(req, "realtime");
    *out = BOARD_BY_PREDICTION;
    if (!v)
        return 0;
    if (strcmp(v, "predicted") == 0)
        *out = BOARD_BY_PREDICTION;
    else if (strcmp(v, "scheduled") == 0)
        *out = BOARD_BY_SCHEDULE;
    else
        return api_fail(prob, 400, "realtime", "realtime must be predicted or scheduled");
    return 0;
}

int api_get_wheelchair(const api_request *req, bool *out, api_problem *prob)
{
    const char *v = api_param_value(req, "wheelchair");
    *out = false;
    if (!v || strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "1") == 0) {
        *out = true;
        return 0;
    }
    return api_fail(prob, 400, "wheelchair", "wheelchair must be 0 or 1");
}

int api_get_include(const api_request *req, const char *const *names, unsigned *out, api_problem *prob)
{
    const char *v = api_param_value(req, "include");
    *out = 0;
    if (!v)
        return 0;
    /* a comma-separated list of names, each at most once: "shape" */
    for (const char *p = v;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; names[i] && found < 0 && i < 16; i++)
            if (strlen(names[i]) == len && memcmp(names[i], p, len) == 0)
                found = i;
        if (found < 0 || (*out & (1u << found))) {
            char known[160] = "";
            for (int i = 0; names[i] && i < 16; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", names[i]);
            return api_fail(prob, 400, "include", "include must be a comma-separated list of: %s (each at most once)",
                            known);
        }
        *out |= 1u << found;
        if (!p[len])
            break;
        p += len + 1;
    }
    return 0;
}
