/*
 * waitlist.h - the public waitlist intake: POST /v1/waitlist.
 */
#ifndef ENSIGN_WAITLIST_H
#define ENSIGN_WAITLIST_H

struct http_request;

/* POST /v1/waitlist {email}: 200 {accepted}, 422, 429. */
void waitlist_submit(struct http_request *r);

extern const char waitlist_request_schema[];
extern const char waitlist_response_schema[];

#endif
