/*
 * routes.h - the route table of ensignd: every operation of every surface.
 *
 * The single source of truth for dispatch and for /openapi.json. Order
 * matters only for speed: evaluation routes come first.
 */
#ifndef ENSIGN_ROUTES_H
#define ENSIGN_ROUTES_H

#include <stddef.h>

#include "http/router.h"

const struct route *routes_table(size_t *count);

#endif
