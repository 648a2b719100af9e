/* version.h — the one place the transitd version string is defined.
 *
 * Why it exists: `transitd version`, the import's COMPLETE marker (a version
 * directory written by another build is not trusted as a no-op) and the HTTP
 * layer all report the same string. A build may override it with
 * -DTRANSITD_VERSION='"x.y.z"'.
 */
#ifndef TRANSIT_VERSION_H
#define TRANSIT_VERSION_H

#ifndef TRANSITD_VERSION
#define TRANSITD_VERSION "0.1.0"
#endif

#endif
