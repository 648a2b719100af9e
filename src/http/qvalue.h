/* qvalue.h — the weight of an element of an Accept-* field (RFC 9110 §12.4.2).
 *
 * Why it exists: Accept-Encoding and Accept-Language (accept_encoding.c,
 * accept_language.c) weigh their elements with the same grammar; one reader
 * keeps the two fields from disagreeing on what "q=0.5" or "q=1.0001" is.
 * Private to src/http.
 */
#ifndef HTTP_QVALUE_H
#define HTTP_QVALUE_H

/* A weight in thousandths: 1000 is q=1. */
#define QVALUE_MAX 1000

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), the whole of
 * [p, end); its value in thousandths, or -1 when it is not one. Reads only
 * [p, end), allocates nothing. */
int http_parse_qvalue(const char *p, const char *end);

#endif
