/* cli_cert.c — `transitd cert new --host NAME --out DIR`: a self-signed
 * certificate and key for serving HTTPS on a LAN.
 *
 * Why it exists: an iPhone app may only talk HTTPS (App Transport Security),
 * and a Mac or a Raspberry Pi at home has no public name for a CA to certify.
 * The pair written here is what an iPhone accepts once its owner trusts it
 * (README: "HTTPS for an iPhone"): an ECDSA P-256 key (fast handshakes), a
 * SHA-256 signature, the name in subjectAltName (iOS ignores the CN), the
 * serverAuth extended key usage and a validity of 825 days, the longest
 * iOS 13 and later accept. It is its own CA (basicConstraints CA:TRUE), so
 * that iOS lists it under Certificate Trust Settings once installed. GnuTLS
 * makes it; nothing here encodes ASN.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "transit/cli.h"

#define VALIDITY_DAYS 825   /* the most iOS accepts for a TLS server certificate */

static void print_usage(FILE *out)
{
    fputs("usage: transitd cert new --host NAME --out DIR [--days N] [--force]\n"
          "\n"
          "Writes a self-signed certificate DIR/NAME.crt and its key DIR/NAME.key (mode\n"
          "0600) for `transitd serve --tls-cert DIR/NAME.crt --tls-key DIR/NAME.key`.\n"
          "NAME is the host name clients use (e.g. transit.local) or an IP address; it\n"
          "goes into subjectAltName. The key is ECDSA P-256, the signature SHA-256.\n"
          "\n"
          "options:\n"
          "  --host NAME   DNS name or IPv4/IPv6 address the server is reached at\n"
          "  --out DIR     directory to write into (created, with its parents, if missing)\n"
          "  --days N      validity in days, 1..825 (default 825, the most iOS accepts)\n"
          "  --force       replace existing files\n"
          "\n"
          "To use it from an iPhone: send NAME.crt to the phone (AirDrop or mail), install\n"
          "the profile (Settings > General > VPN & Device Management), then turn on full\n"
          "trust for it (Settings > General > About > Certificate Trust Settings).\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("cert", print_usage, fmt, arg);
}

/* A DNS name as RFC 1123 allows one (letters, digits, '-', dots between
 * labels of 1..63 bytes), or an IP address; *ip gets its bytes. */
static bool valid_host(const char *host, unsigned char ip[16], size_t *iplen)
{
    *iplen = 0;
    if (inet_pton(AF_INET, host, ip) == 1) {
        *iplen = 4;
        return true;
    }
    if (inet_pton(AF_INET6, host, ip) == 1) {
        *iplen = 16;
        return true;
    }
    size_t n = strlen(host), label = 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = host[i];
        if (c == '.') {
            if (label == 0 || host[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c == '-' && label > 0);
        if (!ok || ++label > 63)
            return false;
    }
    return label > 0 && host[n - 1] != '-';
}

/* Builds and signs the certificate; PEM texts of both into crt_pem/key_pem. */
static int make_pair(const char *host, const unsigned char *ip, size_t iplen, long days,
                     gnutls_datum_t *crt_pem, gnutls_datum_t *key_pem)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    int rc;
    unsigned char serial[16];
    if ((rc = gnutls_x509_privkey_init(&key)) < 0 ||
        (rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                           GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
        (rc = gnutls_x509_crt_init(&crt)) < 0 || (rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
        (rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial)) < 0)
        goto done;
    serial[0] &= 0x7f;   /* a positive INTEGER */
    serial[0] |= 0x40;   /* and a full 16 bytes long */
    time_t now = time(NULL);
    if ((rc = gnutls_x509_crt_set_serial(crt, serial, sizeof serial)) < 0 ||
        (rc = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||   /* clock skew */
        (rc = gnutls_x509_crt_set_expiration_time(crt, now - 3600 + days * 86400)) < 0 ||
        (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, host,
                                            (unsigned)strlen(host))) < 0 ||
        (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
                                            "transitd self-signed", 20)) < 0 ||
        (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
        (rc = gnutls_x509_crt_set_basic_constraints(crt, 1, -1)) < 0 ||
        (rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                                     GNUTLS_KEY_KEY_CERT_SIGN)) < 0 ||
        (rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0)
        goto done;
    if (iplen)
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, (unsigned)iplen,
                                                  GNUTLS_FSAN_SET);
    else
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
                                                  (unsigned)strlen(host), GNUTLS_FSAN_SET);
    if (rc < 0)
        goto done;
    unsigned char keyid[64];
    size_t keyid_len = sizeof keyid;
    if ((rc = gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, keyid, &keyid_len)) < 0 ||
        (rc = gnutls_x509_crt_set_subject_key_id(crt, keyid, keyid_len)) < 0 ||
        /* its own issuer, named by key: a client that trusts several of these
         * for one name (before and after a renewal) picks the right one */
        (rc = gnutls_x509_crt_set_authority_key_id(crt, keyid, keyid_len)) < 0 ||
        (rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
        goto done;
    if ((rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, crt_pem)) < 0 ||
        (rc = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN,
                                                key_pem)) < 0)
        goto done;
done:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return rc;
}

int cli_cert_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "new") != 0) {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            print_usage(stdout);
            return CLI_OK;
        }
        return usage_error("the subcommand is 'new', got '%s'", argc >= 2 ? argv[1] : "");
    }
    const char *host = NULL, *out = NULL;
    long days = VALIDITY_DAYS;
    bool force = false;
    enum { OPT_HOST = CLI_OPT_LONG_ONLY, OPT_OUT, OPT_DAYS, OPT_FORCE };
    static const struct option longopts[] = {
        {"host", required_argument, NULL, OPT_HOST},
        {"out", required_argument, NULL, OPT_OUT},
        {"days", required_argument, NULL, OPT_DAYS},
        {"force", no_argument, NULL, OPT_FORCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli_opts opts;
    cli_opts_begin(&opts, argc - 1, argv + 1, "h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        const char *arg = opts.arg;
        if (c == 'h') {
            print_usage(stdout);
            return CLI_OK;
        } else if (c == OPT_HOST || c == OPT_OUT) {
            if (!arg || !*arg)
                return usage_error("%s needs a value", opts.name);
            *(c == OPT_HOST ? &host : &out) = arg;
        } else if (c == OPT_DAYS) {
            char *end = NULL;
            days = arg ? strtol(arg, &end, 10) : 0;
            if (!arg || !*arg || *end || days < 1 || days > VALIDITY_DAYS)
                return usage_error("--days must be 1..825, got '%s'", arg ? arg : "");
        } else if (c == OPT_FORCE) {
            force = true;
        } else {
            return usage_error("unknown option '%s'", c == CLI_OPT_ARG ? arg : opts.typed);
        }
    }
    if (!host)
        return usage_error("%s", "--host NAME is required");
    if (!out)
        return usage_error("%s", "--out DIR is required");
    unsigned char ip[16];
    size_t iplen;
    if (!valid_host(host, ip, &iplen))
        return usage_error("--host must be a DNS name or an IP address, got '%s'", host);
    if (!cli_make_directories(out)) {
        fprintf(stderr, "transitd cert: cannot create %s: %s\n", out, strerror(errno));
        return CLI_RUNTIME_ERROR;
    }
    char crt_path[4096], key_path[4096], err[4400];
    snprintf(crt_path, sizeof crt_path, "%s/%s.crt", out, host);
    snprintf(key_path, sizeof key_path, "%s/%s.key", out, host);
    for (int i = 0; i < 2 && !force; i++) {
        const char *path = i ? key_path : crt_path;
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "transitd cert: %s exists (use --force to replace it)\n", path);
            return CLI_RUNTIME_ERROR;
        }
    }
    gnutls_datum_t crt_pem = {NULL, 0}, key_pem = {NULL, 0};
    int rc = make_pair(host, ip, iplen, days, &crt_pem, &key_pem);
    int status = CLI_OK;
    if (rc < 0) {
        fprintf(stderr, "transitd cert: GnuTLS could not make the certificate: %s\n",
                gnutls_strerror(rc));
        status = CLI_RUNTIME_ERROR;
    } else if (!cli_write_file_atomically(key_path, key_pem.data, key_pem.size, 0600, err, sizeof err) ||
               !cli_write_file_atomically(crt_path, crt_pem.data, crt_pem.size, 0644, err, sizeof err)) {
        fprintf(stderr, "transitd cert: %s\n", err);
        status = CLI_RUNTIME_ERROR;
    } else {
        printf("%s\n%s\n", crt_path, key_path);
        fprintf(stderr, "transitd cert: wrote a self-signed certificate for %s, valid %ld days; "
                        "serve with --tls-cert %s --tls-key %s\n",
                host, days, crt_path, key_path);
    }
    gnutls_free(crt_pem.data);
    gnutls_free(key_pem.data);
    return status;
}
