/* TDServer+Setup.m — what the server reads at start-up and on SIGHUP
 * besides the dataset: the bearer tokens, the OpenAPI document and the web
 * pages; and the check of a write's bearer token.
 *
 * Why it exists: none of it is on a request's path but the token check, and
 * keeping it apart leaves TDServer.m to routing and verbs.
 */
#import "TDServer.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transit/share_dir.h"

/* ------------------------------------------------------------ tokens */

bool td_server_load_tokens(TDServer *server, char *err, size_t errlen)
{
    if (!server->config.tokens_path)
        return true;
    auth_tokens *t = auth_tokens_load(server->config.tokens_path, err, errlen);
    if (!t)
        return false;
    pthread_mutex_lock(&server->tokensLock);
    auth_tokens *old = server->tokens;
    server->tokens = t;
    pthread_mutex_unlock(&server->tokensLock);
    auth_tokens_free(old);
    return true;
}

bool td_server_authorize(TDServer *server, TDRequest *req)
{
    const char *header = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION);
    const char *token = NULL;
    size_t len = 0;
    int kind = auth_bearer_token(header, &token, &len);
    pthread_mutex_lock(&server->tokensLock);
    bool configured = server->tokens != NULL;
    bool ok = configured && kind == 1 && auth_tokens_check(server->tokens, token, len, NULL);
    pthread_mutex_unlock(&server->tokensLock);
    if (ok)
        return true;
    if (!configured) {
        td_request_problem(req, 403, NULL,
                           "writes are disabled: this server has no bearer tokens. Make one with "
                           "`transitd token new --tokens FILE` and start the server with "
                           "`transitd serve --tokens FILE`");
    } else if (kind == 0) {
        req->wwwAuthenticate = "Bearer realm=\"transitd\"";
        td_request_problem(req, 401, NULL,
                           "%s needs an Authorization: Bearer <token> header", req->method);
    } else {
        req->wwwAuthenticate = "Bearer realm=\"transitd\", error=\"invalid_token\"";
        td_request_problem(req, 401, NULL, kind < 0 ? "the Authorization header is not a Bearer token"
                                                    : "the bearer token is not valid");
    }
    return false;
}

/* ------------------------------------------------------------ OpenAPI */

static char *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1))) {
            if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
                free(buf);
                buf = NULL;
            } else {
                buf[size] = '\0';
                *len = (size_t)size;
            }
        }
    }
    fclose(f);
    return buf;
}

void td_server_load_openapi(TDServer *server)
{
    char candidates[SHARE_MAX_CANDIDATES][SHARE_PATH_MAX];
    int n = 0;
    if (server->config.openapi_path)
        snprintf(candidates[n++], SHARE_PATH_MAX, "%s", server->config.openapi_path);
    else
        n = share_candidates("openapi.json", "docs/openapi.json", candidates, SHARE_MAX_CANDIDATES);
    server->openapiSource[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        char *doc = read_whole_file(candidates[i], &len);
        if (doc) {
            server->openapiDocument = doc;
            server->openapiLength = len;
            snprintf(server->openapiSource, sizeof server->openapiSource, "%s", candidates[i]);
            return;
        }
        size_t used = strlen(server->openapiSource);
        snprintf(server->openapiSource + used, sizeof server->openapiSource - used, "%s%s",
                 used ? ", " : "", candidates[i]);
    }
    fprintf(stderr, "transitd: warning: no OpenAPI document found (looked at %s); "
                    "/openapi.json will answer 404\n", server->openapiSource);
}

void td_server_load_pages(TDServer *server)
{
    server->pages = site_locate(server->config.pages_dir, server->pagesSource,
                                sizeof server->pagesSource);
    if (server->pages)
        snprintf(server->pagesSource, sizeof server->pagesSource, "%s", server->pages->dir);
    else
        fprintf(stderr, "transitd: warning: no web pages found (%s); / and /docs will answer "
                        "404\n", server->pagesSource);
}

