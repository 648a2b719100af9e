/* tls_server.c — the TLS identity handed to GnuTLS at each handshake, its
 * reload, and the handshake counters.
 *
 * Why it exists: see transit/tls_server.h. How the swap stays safe without a
 * lock on the handshake path: the current identity is one pointer, loaded
 * with acquire order by the certificate callback and replaced with release
 * order by a reload. GnuTLS does not take ownership of what the callback
 * returns (retrieve_function2), and a handshake that began with the old
 * identity may still be signing with it, so a replaced identity is never
 * freed while the server runs: it moves to a list freed with the server. A
 * reload costs one chain and one key (a few kilobytes) until exit; reloads
 * come when a certificate is renewed, every few weeks.
 */
#include "transit/tls_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

typedef struct tls_identity {
    gnutls_pcert_st *chain;
    unsigned nchain;
    gnutls_privkey_t key;
    int64_t not_after;
    char fingerprint[96];
    struct tls_identity *retired_next;   /* in the server's list of replaced identities */
} tls_identity;

struct tls_server {
    char *cert_path, *key_path;
    tls_identity *current;   /* __atomic */
    tls_identity *retired;   /* replaced ones, freed with the server */
    uint64_t handshakes_tls13, handshakes_tls12, handshakes_other;   /* __atomic */
    uint64_t failures;       /* connections closed before their handshake finished (__atomic) */
    uint64_t reloads_ok, reloads_failed;   /* __atomic: /metrics reads them */
};

static void identity_free(tls_identity *id)
{
    if (!id)
        return;
    for (unsigned i = 0; i < id->nchain; i++)
        gnutls_pcert_deinit(&id->chain[i]);
    free(id->chain);
    if (id->key)
        gnutls_privkey_deinit(id->key);
    free(id);
}

/* The DER of a public key, for comparing the key's with the certificate's. */
static int export_pubkey(gnutls_pubkey_t pub, gnutls_datum_t *out)
{
    return gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, out);
}

static bool key_matches_certificate(gnutls_privkey_t key, gnutls_pubkey_t cert_pub)
{
    gnutls_pubkey_t from_key;
    if (gnutls_pubkey_init(&from_key) < 0)
        return false;
    bool same = false;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    if (gnutls_pubkey_import_privkey(from_key, key, 0, 0) >= 0 && export_pubkey(from_key, &a) >= 0 &&
        export_pubkey(cert_pub, &b) >= 0)
        same = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(from_key);
    return same;
}

/* Up to this many certificates in a chain file (leaf and intermediates). */
#define MAX_CHAIN 16

static tls_identity *identity_load(const char *cert_path, const char *key_path, char *err,
                                   size_t cap)
{
    tls_identity *id = calloc(1, sizeof *id);
    gnutls_datum_t pem = {NULL, 0};
    gnutls_x509_crt_t leaf = NULL;
    if (!id) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    int rc = gnutls_load_file(cert_path, &pem);
    if (rc < 0) {
        snprintf(err, cap, "cannot read the TLS certificate %s: %s", cert_path, gnutls_strerror(rc));
        goto fail;
    }
    id->chain = calloc(MAX_CHAIN, sizeof *id->chain);
    unsigned n = MAX_CHAIN;
    if (!id->chain) {
        snprintf(err, cap, "out of memory");
        goto fail;
    }
    rc = gnutls_pcert_list_import_x509_raw(id->chain, &n, &pem, GNUTLS_X509_FMT_PEM,
                                           GNUTLS_X509_CRT_LIST_SORT);
    if (rc < 0 || n == 0) {
        snprintf(err, cap, "%s is not a PEM certificate chain: %s", cert_path,
                 rc < 0 ? gnutls_strerror(rc) : "no certificate in it");
        goto fail;
    }
    id->nchain = n;
    gnutls_free(pem.data);
    pem.data = NULL;

    rc = gnutls_load_file(key_path, &pem);
    if (rc < 0) {
        snprintf(err, cap, "cannot read the TLS key %s: %s", key_path, gnutls_strerror(rc));
        goto fail;
    }
    if ((rc = gnutls_privkey_init(&id->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(id->key, &pem, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, cap, "%s is not an unencrypted PEM private key: %s", key_path,
                 gnutls_strerror(rc));
        goto fail;
    }
    gnutls_free(pem.data);
    pem.data = NULL;
    if (!key_matches_certificate(id->key, id->chain[0].pubkey)) {
        snprintf(err, cap, "the key %s does not belong to the certificate %s", key_path, cert_path);
        goto fail;
    }
    if (gnutls_x509_crt_init(&leaf) < 0 ||
        gnutls_x509_crt_import(leaf, &id->chain[0].cert, GNUTLS_X509_FMT_DER) < 0) {
        snprintf(err, cap, "%s: cannot read the first certificate", cert_path);
        goto fail;
    }
    id->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(leaf);
    unsigned char digest[32];
    size_t dlen = sizeof digest;
    if (gnutls_x509_crt_get_fingerprint(leaf, GNUTLS_DIG_SHA256, digest, &dlen) >= 0) {
        for (size_t i = 0; i < dlen; i++)
            snprintf(id->fingerprint + 3 * i, 4, i + 1 < dlen ? "%02X:" : "%02X", digest[i]);
    }
    gnutls_x509_crt_deinit(leaf);
    return id;
fail:
    if (leaf)
        gnutls_x509_crt_deinit(leaf);
    gnutls_free(pem.data);
    identity_free(id);
    return NULL;
}

tls_server *tls_server_new(const char *cert_path, const char *key_path, char *err, size_t cap)
{
    tls_server *s = calloc(1, sizeof *s);
    if (!s || !(s->cert_path = strdup(cert_path)) || !(s->key_path = strdup(key_path))) {
        snprintf(err, cap, "out of memory");
        tls_server_free(s);
        return NULL;
    }
    s->current = identity_load(cert_path, key_path, err, cap);
    if (!s->current) {
        tls_server_free(s);
        return NULL;
    }
    return s;
}

void tls_server_free(tls_server *s)
{
    if (!s)
        return;
    identity_free(s->current);
    while (s->retired) {
        tls_identity *next = s->retired->retired_next;
        identity_free(s->retired);
        s->retired = next;
    }
    free(s->cert_path);
    free(s->key_path);
    free(s);
}

bool tls_server_reload(tls_server *s, char *err, size_t cap)
{
    tls_identity *fresh = identity_load(s->cert_path, s->key_path, err, cap);
    if (!fresh) {
        __atomic_fetch_add(&s->reloads_failed, 1, __ATOMIC_RELAXED);
        return false;
    }
    tls_identity *old = __atomic_exchange_n(&s->current, fresh, __ATOMIC_ACQ_REL);
    old->retired_next = s->retired;
    s->retired = old;
    __atomic_fetch_add(&s->reloads_ok, 1, __ATOMIC_RELAXED);
    return true;
}

void tls_server_fingerprint(const tls_server *s, char out[96])
{
    const tls_identity *id = __atomic_load_n(&s->current, __ATOMIC_ACQUIRE);
    memcpy(out, id->fingerprint, sizeof id->fingerprint);
}

int64_t tls_server_not_after(const tls_server *s)
{
    return __atomic_load_n(&s->current, __ATOMIC_ACQUIRE)->not_after;
}

int tls_server_retrieve_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
                                    int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                                    int pk_algos_length, gnutls_pcert_st **pcert,
                                    unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    const tls_connection *c = gnutls_session_get_ptr(session);
    if (!c || !c->server)
        return -1;   /* not started through tls_connection_start: no certificate */
    tls_identity *id = __atomic_load_n(&c->server->current, __ATOMIC_ACQUIRE);
    *pcert = id->chain;
    *pcert_length = id->nchain;
    *privkey = id->key;
    return 0;
}

/* The client's Finished message has been received and processed: the
 * handshake is complete (in TLS 1.2 and 1.3 alike the server receives it
 * last or, resuming 1.2, after sending its own). */
static int on_handshake_message(gnutls_session_t session, unsigned htype, unsigned when,
                                unsigned incoming, const gnutls_datum_t *msg)
{
    (void)htype;
    (void)when;
    (void)msg;
    tls_connection *c = gnutls_session_get_ptr(session);
    if (!incoming || !c || c->handshaken)
        return 0;
    c->handshaken = true;
    gnutls_protocol_t v = gnutls_protocol_get_version(session);
    uint64_t *counter = v == GNUTLS_TLS1_3   ? &c->server->handshakes_tls13
                        : v == GNUTLS_TLS1_2 ? &c->server->handshakes_tls12
                                             : &c->server->handshakes_other;
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    return 0;
}

void tls_connection_start(tls_connection *c, tls_server *s, gnutls_session_t session)
{
    c->server = s;
    c->handshaken = false;
    gnutls_session_set_ptr(session, c);
    gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST,
                                       on_handshake_message);
}

void tls_connection_closed(tls_connection *c)
{
    if (c->server && !c->handshaken)
        __atomic_fetch_add(&c->server->failures, 1, __ATOMIC_RELAXED);
}

uint64_t tls_server_handshakes(const tls_server *s)
{
    return __atomic_load_n(&s->handshakes_tls13, __ATOMIC_RELAXED) +
           __atomic_load_n(&s->handshakes_tls12, __ATOMIC_RELAXED) +
           __atomic_load_n(&s->handshakes_other, __ATOMIC_RELAXED);
}

uint64_t tls_server_handshake_failures(const tls_server *s)
{
    return __atomic_load_n(&s->failures, __ATOMIC_RELAXED);
}

size_t tls_server_render_metrics(const tls_server *s, int64_t now, char *out, size_t cap)
{
    int n = snprintf(
        out, cap,
        "# HELP transitd_tls_handshakes_total TLS handshakes completed, by protocol version.\n"
        "# TYPE transitd_tls_handshakes_total counter\n"
        "transitd_tls_handshakes_total{version=\"TLS1.3\"} %llu\n"
        "transitd_tls_handshakes_total{version=\"TLS1.2\"} %llu\n"
        "# HELP transitd_tls_handshake_failures_total TLS connections closed before their "
        "handshake completed (refused protocol or cipher, bad client, or the client left).\n"
        "# TYPE transitd_tls_handshake_failures_total counter\n"
        "transitd_tls_handshake_failures_total %llu\n"
        "# HELP transitd_tls_certificate_reloads_total Certificate reloads (SIGHUP), by result; "
        "a failed one keeps the previous certificate.\n"
        "# TYPE transitd_tls_certificate_reloads_total counter\n"
        "transitd_tls_certificate_reloads_total{result=\"ok\"} %llu\n"
        "transitd_tls_certificate_reloads_total{result=\"failed\"} %llu\n"
        "# HELP transitd_tls_certificate_expiry_seconds Seconds until the served certificate "
        "expires (negative: expired).\n"
        "# TYPE transitd_tls_certificate_expiry_seconds gauge\n"
        "transitd_tls_certificate_expiry_seconds %lld\n",
        (unsigned long long)__atomic_load_n(&s->handshakes_tls13, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&s->handshakes_tls12, __ATOMIC_RELAXED),
        (unsigned long long)tls_server_handshake_failures(s),
        (unsigned long long)__atomic_load_n(&s->reloads_ok, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&s->reloads_failed, __ATOMIC_RELAXED),
        (long long)(tls_server_not_after(s) - now));
    return n < 0 ? 0 : (size_t)n;
}
