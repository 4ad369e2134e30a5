/*
 * routes.c - the route table (see routes.h).
 *
 * Sections are grouped by surface and resource; keep evaluation first.
 */
#include "routes.h"

#include "me.h"
#include "meta.h"
/* section includes: evaluation */
/* section includes: flags */
/* section includes: org resources */

static const struct route route_table[] = {
    /* section: evaluation (/ofrep) */

    /* section: meta and identity */
    {METHOD_GET, "/v1/healthz", meta_healthz, "Liveness probe; never touches the database",
     ROUTE_AUTH_NONE, NULL, meta_healthz_schema, 200},
    {METHOD_GET, "/v1/me", me_v1_get, "Identity of the caller's access token",
     ROUTE_AUTH_TOKEN_OR_COOKIE, NULL, NULL, 200},

    /* section: flags, variants, environments, rules (/v1/orgs/{org}/...) */

    /* section: segments, entities, SDK keys, members (/v1/orgs/{org}/...) */

    /* section: second document (no prefix) */
    {METHOD_GET, "/openapi.json", meta_openapi, "This OpenAPI document", ROUTE_AUTH_NONE, NULL,
     NULL, 200},
    {METHOD_GET, "/me", me_root_get, "The caller's account and organizations",
     ROUTE_AUTH_ACCESS_TOKEN, NULL, NULL, 200},
};

const struct route *routes_table(size_t *count)
{
    *count = sizeof route_table / sizeof route_table[0];
    return route_table;
}
