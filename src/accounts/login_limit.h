/*
 * login_limit.h - the login budget (ratelimit_login, ensign.conf(5)):
 * attempts per client address and, with the same budget, per
 * account.
 *
 * Both live in the rate-limit table of shared memory (eval/ratelimit.h)
 * under class RATELIMIT_LOGIN, in two key spaces that cannot meet: "ip "
 * plus the address key, "account " plus the lower-cased email. An IPv4
 * client (or an IPv4-mapped IPv6 one) counts by its address, an IPv6
 * client by its /64, the smallest block one subscriber gets, so a client
 * cannot get a new budget per address of its own block.
 *
 * Called by the login route (sessions.c) and the password change
 * (password_change.c: a wrong current password counts against the
 * account). No database.
 */
#ifndef ENSIGN_LOGIN_LIMIT_H
#define ENSIGN_LOGIN_LIMIT_H

#include <stdbool.h>
#include <stddef.h>

struct http_request;

/* Room for any address key (an IPv6 /64 in text, or an IPv4 address). */
#define LOGIN_LIMIT_KEY_MAX 64

/*
 * The budget key of a client address (as http_client_address writes it):
 * an IPv4 address as itself; an IPv6 address as its /64 ("2001:db8:1:2::/64");
 * an IPv4-mapped IPv6 address as the IPv4 address; anything else (an
 * address with a zone, garbage, "") as given. out has outlen bytes.
 */
void login_limit_address_key(const char *address, char *out, size_t outlen);

/* Takes one attempt from r's client address; false after answering 429. */
bool login_limit_check_address(struct http_request *r);

/* Takes one attempt from the account of email (compared lower-cased);
 * false after answering 429. */
bool login_limit_check_account(struct http_request *r, const char *email);

#endif
