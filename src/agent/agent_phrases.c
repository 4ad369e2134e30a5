/*
 * agent_phrases.c - the built-in agent's vocabulary tables and the small
 * engine that reads them (see agent_phrases.h).
 *
 * Order matters in the intent table: the first row that matches wins, so
 * a refusal beats everything, questions beat writes, and the narrower
 * write intents (a rollout, a default serve, a rule) come before the
 * plain toggle that most sentences also match.
 */
#include "agent/agent_phrases.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct intent_row {
    enum agent_intent intent;
    const char *need[4]; /* every one must match somewhere; NULL ends */
    const char *without; /* none of these may appear, or NULL */
};

static const struct intent_row intent_rows[] = {
    {AGENT_INTENT_REFUSE,
     {"delete|remove|drop|erase|destroy|wipe|purge|truncate|nuke", NULL},
     NULL},
    {AGENT_INTENT_STATUS,
     {"^is|^are|^whats|status|state", "on|off|enabled|disabled|active|inactive|live|status|state",
      NULL},
     "which|list|unused|evaluated"},
    {AGENT_INTENT_USAGE,
     {"which|list|show|what|find|any", "flags|flag",
      "unused|evaluated|used|never|stale|variant|dead", NULL},
     NULL},
    {AGENT_INTENT_EXPLAIN, {"explain|why", NULL}, NULL},
    {AGENT_INTENT_EXPLAIN, {"what|which", "get|gets|receive|receives|see|sees", NULL}, NULL},
    {AGENT_INTENT_REVISION, {"revert|undo|rollback", NULL}, NULL},
    {AGENT_INTENT_REVISION, {"restore|return|reset", "revision|version", NULL}, NULL},
    {AGENT_INTENT_ARCHIVE, {"archive|retire", NULL}, NULL},
    {AGENT_INTENT_RESTORE, {"restore|unarchive", NULL}, NULL},
    {AGENT_INTENT_SEGMENT, {"create|add|new|make|define", "segment", NULL}, NULL},
    {AGENT_INTENT_FLAG, {"create|add|new|make", "flag", NULL}, "rule|default|serve"},
    {AGENT_INTENT_ROLLOUT, {"roll out|rollout|#percent", NULL}, NULL},
    {AGENT_INTENT_DEFAULT, {"default", NULL}, NULL},
    {AGENT_INTENT_RULE, {"serve|rule", NULL}, NULL},
    {AGENT_INTENT_TOGGLE,
     {"enable|disable|activate|deactivate|turn|switch|flip|kill|on|off|enabled|disabled", NULL},
     NULL},
};

const struct agent_fold agent_folds[] = {
    {{"all", "environments", NULL}, "everywhere"},
    {{"every", "environment", NULL}, "everywhere"},
    {{"all", "envs", NULL}, "everywhere"},
    {{"each", "environment", NULL}, "everywhere"},
    {{"in", "everywhere", NULL}, "everywhere"},
    {{"roll", "back", NULL}, "revert"},
    {{"go", "back", NULL}, "revert"},
    {{"switch", "on", NULL}, "enable"},
    {{"switch", "off", NULL}, "disable"},
    {{"flip", "on", NULL}, "enable"},
    {{"flip", "off", NULL}, "disable"},
    {{"turn", "on", NULL}, "enable"},
    {{"turn", "off", NULL}, "disable"},
    {{"kill", "switch", NULL}, "disable"},
    {{"for", "everyone", NULL}, "everyone"},
    {{"for", "everybody", NULL}, "everyone"},
    {{"for", "all", "users"}, "everyone"},
    {{"to", "all", "users"}, "everyone"},
    {{"what", "is", NULL}, "whats"},
    {{"what's", NULL, NULL}, "whats"},
};
const size_t agent_fold_count = sizeof agent_folds / sizeof agent_folds[0];

const struct agent_alias agent_env_aliases[] = {
    {"prod", "production"},     {"prd", "production"}, {"dev", "development"},
    {"develop", "development"}, {"stage", "staging"},  {"stg", "staging"},
    {"test", "testing"},        {"qa", "testing"},     {"pre", "preview"},
};
const size_t agent_env_alias_count = sizeof agent_env_aliases / sizeof agent_env_aliases[0];

static const char *const qualifier_words[] = {
    "for",     "only",     "except",    "excluding", "unless",  "when",     "if",      "where",
    "whose",   "users",    "user",      "customers", "people",  "accounts", "tenants", "employees",
    "staff",   "internal", "beta",      "tomorrow",  "tonight", "today",    "at",      "until",
    "before",  "after",    "between",   "from",      "percent", "half",     "some",    "few",
    "canary",  "not",      "but",       "country",   "region",  "plan",     "hours",   "hour",
    "minutes", "minute",   "days",      "day",       "week",    "weeks",    "month",   "next",
    "later",   "morning",  "evening",   "night",     "noon",    "midnight", "am",      "pm",
    "weekend", "schedule", "scheduled", "and",       "also",    NULL};

static const char *const vague_time_words[] = {
    "monday",   "tuesday",   "wednesday", "thursday", "friday",   "saturday", "sunday",
    "january",  "february",  "march",     "april",    "may",      "june",     "july",
    "august",   "september", "october",   "november", "december", "tonight",  "later",
    "soon",     "week",      "weekend",   "morning",  "evening",  "night",    "noon",
    "midnight", "next",      "tomorrow",  "today",    NULL};

static const char *const on_words[] = {"enable", "activate", "on", "enabled", NULL};
static const char *const off_words[] = {"disable", "deactivate", "off", "disabled", "kill", NULL};

static bool listed(const char *low, const char *const *list)
{
    for (; *list; list++) {
        if (strcmp(low, *list) == 0)
            return true;
    }
    return false;
}

bool agent_phrase_is_on_word(const char *low)
{
    return listed(low, on_words);
}

bool agent_phrase_is_off_word(const char *low)
{
    return listed(low, off_words);
}

bool agent_phrase_is_vague_time(const char *low)
{
    return listed(low, vague_time_words);
}

bool agent_phrase_is_qualifier(const char *low)
{
    for (const char *s = low; *s; s++) {
        if (isdigit((unsigned char)*s))
            return true;
    }
    return listed(low, qualifier_words) || listed(low, vague_time_words);
}

/* A number followed by '%' ("25%"), or by the word "percent" / "%". */
static bool percent_at(const char *const *words, size_t n, size_t i, size_t *len)
{
    const char *s = words[i];
    size_t slen = strlen(s);
    char *end;
    if (slen > 1 && s[slen - 1] == '%') {
        strtod(s, &end);
        *len = 1;
        return end == s + slen - 1;
    }
    if (i + 1 < n && (strcmp(words[i + 1], "percent") == 0 || strcmp(words[i + 1], "%") == 0)) {
        strtod(s, &end);
        *len = 2;
        return end != s && *end == '\0';
    }
    return false;
}

/* One alternative (alt, alt_len bytes) at words[i]. */
static bool alternative_at(const char *alt, size_t alt_len, const char *const *words, size_t n,
                           size_t i, size_t *len)
{
    if (alt_len == 8 && strncmp(alt, "#percent", 8) == 0)
        return percent_at(words, n, i, len);
    bool first_only = alt[0] == '^';
    if (first_only) {
        if (i != 0)
            return false;
        alt++;
        alt_len--;
    }
    const char *space = memchr(alt, ' ', alt_len);
    size_t first = space ? (size_t)(space - alt) : alt_len;
    if (strlen(words[i]) != first || strncmp(words[i], alt, first) != 0)
        return false;
    if (space == NULL) {
        *len = 1;
        return true;
    }
    size_t second = alt_len - first - 1;
    if (i + 1 >= n || strlen(words[i + 1]) != second ||
        strncmp(words[i + 1], space + 1, second) != 0)
        return false;
    *len = 2;
    return true;
}

bool agent_phrase_match_at(const char *alts, const char *const *words, size_t n, size_t i,
                           size_t *len)
{
    for (const char *alt = alts; *alt;) {
        size_t alt_len = strcspn(alt, "|");
        if (alternative_at(alt, alt_len, words, n, i, len))
            return true;
        alt += alt_len;
        if (*alt == '|')
            alt++;
    }
    return false;
}

static bool appears(const char *alts, const char *const *words, size_t n)
{
    size_t len;
    for (size_t i = 0; i < n; i++) {
        if (agent_phrase_match_at(alts, words, n, i, &len))
            return true;
    }
    return false;
}

enum agent_intent agent_phrase_intent(const char *const *words, size_t n)
{
    for (size_t r = 0; r < sizeof intent_rows / sizeof intent_rows[0]; r++) {
        const struct intent_row *row = &intent_rows[r];
        bool ok = row->without == NULL || !appears(row->without, words, n);
        for (size_t k = 0; ok && k < 4 && row->need[k] != NULL; k++)
            ok = appears(row->need[k], words, n);
        if (ok)
            return row->intent;
    }
    return AGENT_INTENT_NONE;
}
