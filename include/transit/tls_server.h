/* tls_server.h — the server's TLS identity (certificate chain and key) for
 * libmicrohttpd's GnuTLS, swapped on SIGHUP without a failed handshake, and
 * the handshake counters /metrics shows.
 *
 * Why it exists: libmicrohttpd loads a certificate once, at start-up
 * (MHD_OPTION_HTTPS_MEM_CERT). A renewed certificate (Let's Encrypt renews
 * every 60 days) would need a restart, which drops connections. Instead MHD
 * asks tls_server_retrieve_certificate (MHD_OPTION_HTTPS_CERT_CALLBACK) at
 * every handshake, which answers with the identity current at that moment;
 * tls_server_reload reads the files again and swaps it in. TLS itself stays
 * GnuTLS's, through MHD: nothing here reads or writes a TLS record.
 */
#ifndef TRANSIT_TLS_SERVER_H
#define TRANSIT_TLS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>

/* What the server accepts, as a GnuTLS priority string: TLS 1.3 and 1.2
 * only, forward-secret key exchange only (ECDHE; TLS 1.3 is forward secret
 * by design), AEAD ciphers only. This is App Transport Security's
 * requirement (TLS 1.2+, forward secrecy, AES-GCM or ChaCha20) without its
 * CBC suites. X25519 comes first: it is the key share browsers, URLSession
 * and OpenSSL send first, so preferring another group would cost every
 * handshake a HelloRetryRequest round trip (measured: P-256 chosen first
 * made a HelloRetryRequest on every OpenSSL client handshake). */
#define TLS_SERVER_PRIORITIES                                                           \
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"      \
    "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:"          \
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:%SERVER_PRECEDENCE"

typedef struct tls_server tls_server;

/* Per-connection state, embedded in the connection's own state; its address
 * is the GnuTLS session pointer (gnutls_session_set_ptr). */
typedef struct tls_connection {
    tls_server *server;
    bool handshaken;
} tls_connection;

/* Reads and checks the pair (the key must belong to the first certificate of
 * the chain). NULL with a message naming the file in err. */
tls_server *tls_server_new(const char *cert_path, const char *key_path, char *err, size_t cap);
/* Frees the identities, the current one and every one a reload replaced. */
void tls_server_free(tls_server *s);

/* Reads the same two paths again and makes them the identity of every
 * handshake that starts from now on. On any problem the current identity
 * stays, err says why, and false is returned (counted in the metrics).
 * Call from one thread at a time (the signal loop). */
bool tls_server_reload(tls_server *s, char *err, size_t cap);

/* The certificate's SHA-256 fingerprint, "AB:CD:...", and its notAfter. */
void tls_server_fingerprint(const tls_server *s, char out[96]);
int64_t tls_server_not_after(const tls_server *s);

/* Hooks a new connection's session: the pointer, and the counting of a
 * finished handshake. Call when the connection starts, before its first
 * byte is read. */
void tls_connection_start(tls_connection *c, tls_server *s, gnutls_session_t session);
/* Counts a connection that closed before its handshake finished. */
void tls_connection_closed(tls_connection *c);

/* The callback for MHD_OPTION_HTTPS_CERT_CALLBACK
 * (gnutls_certificate_retrieve_function2). */
int tls_server_retrieve_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
                                    int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                                    int pk_algos_length, gnutls_pcert_st **pcert,
                                    unsigned int *pcert_length, gnutls_privkey_t *privkey);

/* Counters, for tests and the metrics. */
uint64_t tls_server_handshakes(const tls_server *s);
uint64_t tls_server_handshake_failures(const tls_server *s);

/* The Prometheus text of the counters, like snprintf: the length the whole
 * text needs, written only as far as cap allows. */
size_t tls_server_render_metrics(const tls_server *s, int64_t now, char *out, size_t cap);

#endif
