/* polyline.h — Google's encoded polyline (precision 5) and a path's length.
 *
 * Why it exists: a shape of a few hundred points is 10 KB as JSON numbers
 * and about 1.5 KB as an encoded polyline, the form map SDKs (Google Maps,
 * Mapbox, MapKit helpers) decode directly. The encoding: each coordinate
 * rounded to 1e-5 degrees (half away from zero), the difference from the
 * previous point's (the first from 0), zig-zag (value << 1, inverted when
 * negative), then 5-bit chunks from the lowest, each but the last or'ed
 * with 0x20, plus 63, as ASCII. Latitude before longitude.
 * https://developers.google.com/maps/documentation/utilities/polylinealgorithm
 * The characters lie in 63..126, which includes the backslash: a JSON
 * writer must escape it.
 */
#ifndef TRANSIT_POLYLINE_H
#define TRANSIT_POLYLINE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes one point takes at most: each coordinate's difference is below
 * 2^26 after zig-zag (2 * 360e5), six 5-bit chunks. */
#define POLYLINE_POINT_MAX 12

/* The encoder's state: the previous point, in 1e-5 degrees. */
typedef struct polyline {
    int64_t lat_e5, lon_e5;
} polyline;

void polyline_begin(polyline *p);
/* Writes the next point's characters at out (at most POLYLINE_POINT_MAX)
 * and returns the end; lat in [-90, 90], lon in [-180, 180]. */
char *polyline_put(polyline *p, char *out, double lat, double lon);

/* Great-circle distance in metres between two points (haversine, mean
 * Earth radius 6,371,008.8 m, as the nearby queries use). */
double polyline_distance_m(double lat1, double lon1, double lat2, double lon2);

#endif
