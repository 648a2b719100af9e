/* polyline.c — the encoded polyline algorithm and the haversine distance;
 * see polyline.h.
 *
 * Why it exists: shapes are served as encoded polylines with their length
 * (api_shapes.c), and both are pure arithmetic that tests pin against
 * Google's documented example, so they live in base/ apart from any store.
 */
#include "transit/polyline.h"

#include <math.h>

#define EARTH_RADIUS_M 6371008.8

void polyline_begin(polyline *p)
{
    p->lat_e5 = 0;
    p->lon_e5 = 0;
}

static char *put_value(char *out, int64_t delta)
{
    uint64_t v = delta < 0 ? ~((uint64_t)delta << 1) : (uint64_t)delta << 1;
    while (v >= 0x20) {
        *out++ = (char)((0x20 | (v & 0x1f)) + 63);
        v >>= 5;
    }
    *out++ = (char)(v + 63);
    return out;
}

char *polyline_put(polyline *p, char *out, double lat, double lon)
{
    int64_t la = llround(lat * 1e5), lo = llround(lon * 1e5);
    out = put_value(out, la - p->lat_e5);
    out = put_value(out, lo - p->lon_e5);
    p->lat_e5 = la;
    p->lon_e5 = lo;
    return out;
}

double polyline_distance_m(double lat1, double lon1, double lat2, double lon2)
{
    const double rad = M_PI / 180.0;
    double dphi = (lat2 - lat1) * rad, dl = (lon2 - lon1) * rad;
    double s1 = sin(dphi / 2), s2 = sin(dl / 2);
    double a = s1 * s1 + cos(lat1 * rad) * cos(lat2 * rad) * s2 * s2;
    if (a > 1)
        a = 1;
    return 2 * EARTH_RADIUS_M * asin(sqrt(a));
}
