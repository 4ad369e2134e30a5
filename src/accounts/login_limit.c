/*
 * login_limit.c - the login budget per address and per account (see
 * login_limit.h).
 */
#include "accounts/login_limit.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "http/http.h"
#include "eval/ratelimit.h"

#define ADDRESS_SPACE "ip "
#define ACCOUNT_SPACE "account "
#define EMAIL_KEY_MAX 320 /* the longest email the login route accepts */

void login_limit_address_key(const char *address, char *out, size_t outlen)
{
    struct in6_addr a6;
    char text[INET6_ADDRSTRLEN];
    if (outlen == 0)
        return;
    if (inet_pton(AF_INET6, address, &a6) != 1) {
        snprintf(out, outlen, "%s", address); /* IPv4, or not an address */
        return;
    }
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
        if (inet_ntop(AF_INET, &a6.s6_addr[12], text, sizeof text) != NULL)
            snprintf(out, outlen, "%s", text);
        else
            snprintf(out, outlen, "%s", address);
        return;
    }
    memset(&a6.s6_addr[8], 0, 8);
    if (inet_ntop(AF_INET6, &a6, text, sizeof text) != NULL)
        snprintf(out, outlen, "%s/64", text);
    else
        snprintf(out, outlen, "%s", address);
}

bool login_limit_check_address(struct http_request *r)
{
    char address[64], key[sizeof ADDRESS_SPACE + LOGIN_LIMIT_KEY_MAX];
    http_client_address(r, address, sizeof address);
    memcpy(key, ADDRESS_SPACE, sizeof ADDRESS_SPACE - 1);
    login_limit_address_key(address, key + sizeof ADDRESS_SPACE - 1,
                            sizeof key - (sizeof ADDRESS_SPACE - 1));
    return ratelimit_check(r, RATELIMIT_LOGIN, key, strlen(key));
}

bool login_limit_check_account(struct http_request *r, const char *email)
{
    char key[sizeof ACCOUNT_SPACE + EMAIL_KEY_MAX];
    size_t len = sizeof ACCOUNT_SPACE - 1;
    memcpy(key, ACCOUNT_SPACE, len);
    for (const char *p = email; *p != '\0' && len < sizeof key - 1; p++)
        key[len++] = (char)tolower((unsigned char)*p);
    key[len] = '\0';
    return ratelimit_check(r, RATELIMIT_LOGIN, key, len);
}
