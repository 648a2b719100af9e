/* TDRequest.m — the per-thread request object: its buffers and the two
 * helpers resources use to answer (problems and api.h endpoints).
 *
 * Why it exists: see TDRequest.h.
 */
#import "TDRequest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/accept_language.h"
#include "transit/translations.h"

@implementation TDRequest

- (instancetype)initWithServer:(TDServer *)aServer
{
    if ((self = [super init]) == nil)
        return nil;
    server = aServer;
    json_init(&jsonOut);
    out = &jsonOut;
    apiThread = api_thread_new();
    gzip = gzip_body_new(GZIP_BODY_LEVEL);
    brotli = brotli_body_new(BROTLI_BODY_QUALITY);
    if (!apiThread || !gzip || !brotli) {
        [self release];
        return nil;
    }
    logSecond = -1;
    return self;
}

- (void)dealloc
{
    json_free(&jsonOut);
    api_thread_free(apiThread);
    gzip_body_free(gzip);
    brotli_body_free(brotli);
    free(text);
    [super dealloc];
}

@end

void td_request_param_order(const TDRequest *req, int order[TD_MAX_PARAMS])
{
    for (int i = 0; i < req->nparams; i++) {
        int j = i;
        while (j > 0) {
            const api_param *a = &req->params[order[j - 1]], *b = &req->params[i];
            int c = strcmp(a->key, b->key);
            if (c < 0 || (c == 0 && strcmp(a->value, b->value) <= 0))
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

void td_request_reset_response(TDRequest *req)
{
    req->status = 200;
    json_reset(&req->jsonOut);
    req->out = &req->jsonOut;
    req->responseBody = NULL;
    req->responseLength = 0;
    req->responsePersistent = false;
    req->sharedResponse = NULL;
    req->ownedResponse = NULL;
    req->contentType = NULL;
    req->cacheSeconds = -1;
    req->problem.status = 0;
    req->problem.title = NULL;
    req->problem.detail[0] = '\0';
    req->problem.param[0] = '\0';
    req->problem.pointer[0] = '\0';
    req->responseEtag[0] = '\0';
    req->answerKeyLength = 0;
    req->location[0] = '\0';
    req->wwwAuthenticate = NULL;
    req->problemWritten = false;
    req->responseFd = -1;
    req->responseFdOffset = 0;
    req->contentRange[0] = '\0';
    req->contentLanguageText[0] = '\0';
    req->acceptRanges = false;
    req->cacheImmutable = false;
}

const char *td_status_title(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 428: return "Precondition Required";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

void td_request_problem(TDRequest *req, int status, const char *param, const char *fmt, ...)
{
    req->status = status;
    req->problem.status = status;
    req->problem.title = td_status_title(status);
    snprintf(req->problem.param, sizeof req->problem.param, "%s", param ? param : "");
    req->problem.pointer[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->problem.detail, sizeof req->problem.detail, fmt, ap);
    va_end(ap);
}

void td_request_run_endpoint(TDRequest *req, api_endpoint_fn endpoint)
{
    api_request ar = {
        .params = req->params,
        .nparams = req->nparams,
        .id = req->resourceId,
        .now = req->now,
        .alerts = req->alerts,
        .realtime = req->realtime,
        .translations = req->translations,
        .language = req->language,
        .alert_language = req->alertLanguageSet ? &req->alertLanguage : NULL,
    };
    req->alertLanguage.nwritten = 0;
    req->alertLanguage.written_untagged = false;
    int cache = -1;
    int status = endpoint(req->apiThread, req->dataset, &ar, req->out, &req->problem, &cache);
    req->status = status;
    if (status >= 400) {
        if (!req->problem.title)
            req->problem.title = td_status_title(status);
        req->problem.status = status;
        return;
    }
    if (req->out->oom) {
        td_request_problem(req, 500, NULL, "out of memory while writing the response");
        return;
    }
    req->cacheSeconds = cache;
    /* the languages of the alert texts written, when the names' own do not say */
    if (req->alertLanguageSet && !req->contentLanguage) {
        size_t o = 0;
        for (uint32_t i = 0; i < req->alertLanguage.nwritten; i++) {
            const char *tag = req->alertLanguage.written[i];
            size_t n = strlen(tag);
            if (o + n + 3 > sizeof req->contentLanguageText)
                break;
            if (o) {
                memcpy(req->contentLanguageText + o, ", ", 2);
                o += 2;
            }
            memcpy(req->contentLanguageText + o, tag, n);
            o += n;
        }
        req->contentLanguageText[o] = '\0';
    }
}

void td_request_rank_alert_languages(TDRequest *req, const char *header, const char *const *tags, uint32_t ntags)
{
    alert_language *l = &req->alertLanguage;
    memset(l, 0, sizeof *l);
    int order[ALERT_LANGUAGES_RANKED];
    size_t n = header ? accept_language_rank(header, strlen(header), tags, ntags, order, ALERT_LANGUAGES_RANKED) : 0;
    for (size_t i = 0; i < n; i++)
        l->ranked[i] = tags[order[i]];
    l->nranked = (uint32_t)n;
    if (req->dataset) {
        char why[256];
        const dataset_translations *t = dataset_translations_get(req->dataset, why, sizeof why);
        const char *const *feed;
        if (t && translations_languages(t, &feed) >= 1 && feed[0][0])
            l->fallback = feed[0];
    }
    req->alertLanguageSet = true;
}

bool td_request_reserve_text(TDRequest *req, size_t need)
{
    if (need <= req->textCap)
        return true;
    size_t cap = req->textCap ? req->textCap : 4096;
    while (cap < need)
        cap *= 2;
    char *grown = realloc(req->text, cap);
    if (!grown)
        return false;
    req->text = grown;
    req->textCap = cap;
    return true;
}
