/* TDRoutes.m — the route table: path pattern → resource class.
 *
 * Why it exists: adding an endpoint is one resource class plus one line
 * here. Patterns are literal segments and {id} (one percent-decoded
 * segment); the first match wins, so literal routes come before {id} ones
 * that could swallow them (/v1/stops/nearby before /v1/stops/{id}). The
 * pattern is also the `route` label in /metrics.
 */
#import "TDServer.h"

const td_route_spec td_route_table[] = {
    {"/healthz", "TDHealthResource"},
    {"/readyz", "TDReadyResource"},
    {"/metrics", "TDMetricsResource"},
    {"/openapi.json", "TDOpenAPIResource"},
    {"/", "TDLandingResource"},
    {"/docs", "TDPageFileResource"},
    {"/assets/{id}", "TDPageFileResource"},
    {"/v1/stops/nearby", "TDStopsNearbyResource"},
    {"/v1/stops", "TDStopsResource"},
    {"/v1/stops/{id}", "TDStopResource"},
    {"/v1/stops/{id}/departures", "TDStopDeparturesResource"},
    {"/v1/stops/{id}/arrivals", "TDStopArrivalsResource"},
    {"/v1/departures", "TDDeparturesResource"},
    {"/v1/routes", "TDRoutesResource"},
    {"/v1/routes/{id}", "TDRouteResource"},
    {"/v1/trips/{id}", "TDTripResource"},
    {"/v1/shapes/{id}", "TDShapeResource"},
    {"/v1/agencies", "TDAgenciesResource"},
    {"/v1/feed", "TDFeedResource"},
    {"/v1/dataset", "TDDatasetResource"},
    {"/v1/dataset/{id}/{id}", "TDDatasetFileResource"},
    {"/v1/alerts", "TDAlertsResource"},
    {"/v1/alerts/{id}", "TDAlertResource"},
    {"/v1/vehicles", "TDVehiclesResource"},
    {"/gtfs-rt/trip-updates.pb", "TDGtfsRtResource"},
    {"/gtfs-rt/alerts.pb", "TDGtfsRtResource"},
    {"/gtfs-rt/vehicle-positions.pb", "TDGtfsRtResource"},
};

const int td_route_table_count = (int)(sizeof td_route_table / sizeof td_route_table[0]);
