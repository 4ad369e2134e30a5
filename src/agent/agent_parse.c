/*
 * agent_parse.c - the built-in agent's intent parser (see agent_parse.h):
 * the engine that reads a sentence with the tables of agent_phrases.c.
 *
 * A message is cut into words (whitespace and commas separate; quotes,
 * brackets and trailing punctuation are stripped; case is kept for values
 * and folded for keywords). A JSON object in the text is cut out first and
 * kept as a possible evaluation context. Multi-word phrases are folded,
 * environment aliases and flags named by name resolved against the
 * catalogue, the time of a change read ("at 09:00", "in 2 hours"); the
 * intent is the first matching row of the intent table; then each intent
 * reads its slots: flag, environments, variant, percentage, attribute and
 * values, marking every word it read.
 *
 * Invariants: an action is only built from slots that all exist in the
 * catalogue (or, for creation, do not exist yet); a sentence that leaves a
 * qualifier unread proposes nothing (settle); every path that proposes
 * nothing says why in the reply.
 */
#include "agent/agent_parse.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/agent_phrases.h"
#include "eval/isotime.h"
#include "mgmt/validate.h"

#define WORDS_MAX 2048

struct word {
    char *orig; /* as written (punctuation stripped) */
    char *low;  /* lowercased */
};

struct text {
    struct word *w;
    size_t n;
    char *buf;                /* both spellings of every word */
    unsigned char *used;      /* per word: read by a slot (qualifier check) */
    const char **lows;        /* w[i].low, for the phrase tables */
    struct json_object *json; /* a JSON object found in the text, or NULL */
};

/* When a change should happen: now (none), at a time, or unreadable. */
enum when_kind { WHEN_NOW, WHEN_AT, WHEN_UNCLEAR };

struct parse {
    const struct agent_catalog *c;
    const struct json_object *messages;
    struct text tx;
    FILE *reply;
    struct agent_outcome *out;
    struct json_object *summaries; /* what each proposed action does */
    enum when_kind when;
    char at[ISOTIME_FORMAT_SIZE]; /* with WHEN_AT */
};

/* ---- words ---- */

static bool is_separator(char ch)
{
    return isspace((unsigned char)ch) || ch == ',';
}

/* Cuts the first parseable JSON object out of s (replaced by spaces),
 * trying at most JSON_STARTS_MAX opening braces so that a text full of them
 * costs linear time. */
#define JSON_STARTS_MAX 8

static struct json_object *cut_json_object(char *s)
{
    int starts = 0;
    for (char *open = strchr(s, '{'); open != NULL && starts++ < JSON_STARTS_MAX;
         open = strchr(open + 1, '{')) {
        struct json_tokener *tok = json_tokener_new_ex(16);
        if (tok == NULL)
            return NULL;
        struct json_object *obj = json_tokener_parse_ex(tok, open, (int)strlen(open));
        size_t end = json_tokener_get_parse_end(tok);
        bool ok = json_tokener_get_error(tok) == json_tokener_success && obj != NULL &&
                  json_object_is_type(obj, json_type_object);
        json_tokener_free(tok);
        if (ok) {
            memset(open, ' ', end);
            return obj;
        }
        json_object_put(obj);
    }
    return NULL;
}

static void strip_word(char **start, size_t *len)
{
    static const char leading[] = "\"'`(<[*";
    static const char trailing[] = ".;:!?\"'`)>]*";
    while (*len > 0 && strchr(leading, **start) != NULL) {
        (*start)++;
        (*len)--;
    }
    while (*len > 0 && strchr(trailing, (*start)[*len - 1]) != NULL)
        (*len)--;
}

static void text_free(struct text *tx);
static void text_fold(struct text *tx);

/* Cuts content into words; with want_json, a JSON object in it is kept
 * aside (tx->json) first. */
static int text_init(struct text *tx, const char *content, bool want_json)
{
    memset(tx, 0, sizeof *tx);
    size_t len = strlen(content);
    size_t cap = len / 2 + 1 < WORDS_MAX ? len / 2 + 1 : WORDS_MAX;
    char *copy = strdup(content);
    tx->buf = malloc(3 * len + 2); /* each word twice, with NULs */
    tx->w = calloc(cap, sizeof *tx->w);
    tx->used = calloc(cap, 1);
    tx->lows = calloc(cap, sizeof *tx->lows);
    if (copy == NULL || tx->buf == NULL || tx->w == NULL || tx->used == NULL || tx->lows == NULL) {
        free(copy);
        text_free(tx);
        return -1;
    }
    if (want_json)
        tx->json = cut_json_object(copy);
    char *out = tx->buf;
    for (char *p = copy; *p && tx->n < cap;) {
        while (*p && is_separator(*p))
            p++;
        char *start = p;
        while (*p && !is_separator(*p))
            p++;
        size_t wlen = (size_t)(p - start);
        strip_word(&start, &wlen);
        if (wlen == 0)
            continue;
        struct word *w = &tx->w[tx->n++];
        w->orig = out;
        memcpy(out, start, wlen);
        out[wlen] = '\0';
        out += wlen + 1;
        w->low = out;
        for (size_t i = 0; i < wlen; i++)
            out[i] = (char)tolower((unsigned char)start[i]);
        out[wlen] = '\0';
        out += wlen + 1;
    }
    free(copy);
    text_fold(tx);
    return 0;
}

static void text_free(struct text *tx)
{
    free(tx->w);
    free(tx->buf);
    free(tx->used);
    free(tx->lows);
    json_object_put(tx->json);
    memset(tx, 0, sizeof *tx);
}

/* Drops count words from i on (their text stays in buf, unused). */
static void text_drop(struct text *tx, size_t i, size_t count)
{
    memmove(&tx->w[i], &tx->w[i + count], (tx->n - i - count) * sizeof *tx->w);
    memmove(&tx->used[i], &tx->used[i + count], tx->n - i - count);
    tx->n -= count;
}

/* Word i becomes the single word `to` (a static or catalogue string), in
 * place of `count` words. */
static void text_replace(struct text *tx, size_t i, size_t count, const char *to)
{
    tx->w[i].orig = (char *)to;
    tx->w[i].low = (char *)to;
    if (count > 1)
        text_drop(tx, i + 1, count - 1);
}

static void text_sync_lows(struct text *tx)
{
    for (size_t i = 0; i < tx->n; i++)
        tx->lows[i] = tx->w[i].low;
}

/* Folds the multi-word phrases of agent_folds into one word each. */
static void text_fold(struct text *tx)
{
    for (size_t i = 0; i < tx->n; i++) {
        for (size_t f = 0; f < agent_fold_count; f++) {
            const struct agent_fold *fold = &agent_folds[f];
            size_t k = 0;
            while (k < 3 && fold->from[k] != NULL && i + k < tx->n &&
                   strcmp(tx->w[i + k].low, fold->from[k]) == 0)
                k++;
            if (k > 0 && (k == 3 || fold->from[k] == NULL)) {
                text_replace(tx, i, k, fold->to);
                break;
            }
        }
    }
    text_sync_lows(tx);
}

/* Index of the first word equal to word at or after from, or -1. */
static long find_word(const struct text *tx, const char *word, size_t from)
{
    for (size_t i = from; i < tx->n; i++) {
        if (strcmp(tx->w[i].low, word) == 0)
            return (long)i;
    }
    return -1;
}

static bool has(const struct text *tx, const char *word)
{
    return find_word(tx, word, 0) >= 0;
}

static bool has_any(const struct text *tx, const char *const *words)
{
    for (; *words; words++) {
        if (has(tx, *words))
            return true;
    }
    return false;
}

static bool is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++) {
        if (strcmp(s, *words) == 0)
            return true;
    }
    return false;
}

/* Grammar words: never taken for a key the user meant. */
static const char *const grammar_words[] = {
    "a",       "an",        "the",        "flag",     "flags",       "feature", "in",
    "on",      "off",       "for",        "of",       "to",          "and",     "or",
    "with",    "by",        "please",     "can",      "you",         "could",   "would",
    "i",       "want",      "set",        "make",     "turn",        "switch",  "enable",
    "disable", "activate",  "deactivate", "create",   "add",         "new",     "archive",
    "restore", "unarchive", "serve",      "rule",     "default",     "roll",    "out",
    "rollout", "segment",   "variant",    "variants", "environment", "env",     "it",
    "this",    "that",      "is",         "be",       "called",      "named",   "users",
    "user",    "everyone",  "all",        "percent",  "explain",     "what",    "does",
    "get",     "gets",      "why",        "which",    "bucketed",    "bucket",  "rest",
    "others",  "remaining", "now",        "me",       "my",          "our",     "at",
    "from",    "where",     "whose",      "who",      "key",         "value",   "values",
    NULL};

static bool is_grammar(const char *low)
{
    return is_one_of(low, grammar_words);
}

/* ---- the reply ---- */

static void say(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->reply, fmt, ap);
    va_end(ap);
}

/* "a, b and c" of an array of strings (or objects with "key"), at most 20. */
static void say_list(struct parse *p, const struct json_object *items)
{
    size_t n = items ? json_object_array_length(items) : 0;
    if (n == 0) {
        say(p, "none");
        return;
    }
    size_t shown = n > 20 ? 20 : n;
    for (size_t i = 0; i < shown; i++) {
        struct json_object *item = json_object_array_get_idx(items, i);
        const char *s = json_object_is_type(item, json_type_string) ? json_object_get_string(item)
                                                                    : agent_flag_key(item);
        say(p, "%s%s", i == 0 ? "" : i + 1 == shown && shown == n ? " and " : ", ", s);
    }
    if (shown < n)
        say(p, " and %zu more", n - shown);
}

static void say_unknown(struct parse *p, const char *what, const char *name,
                        const struct json_object *candidates)
{
    const char *closest = agent_closest(candidates, name);
    say(p, "I don't know %s %s called \"%s\".", strchr("aeiou", what[0]) ? "an" : "a", what, name);
    if (closest != NULL)
        say(p, " Did you mean %s?", closest);
    else if (candidates != NULL && json_object_array_length(candidates) > 0 &&
             strcmp(what, "flag") != 0) {
        say(p, " Known %ss: ", what);
        say_list(p, candidates);
        say(p, ".");
    }
}

/* Adds an action; the reply names every action once the sentence is
 * read whole (say_proposals), unless a qualifier was left unread. */
static void propose(struct parse *p, const char *tool, struct json_object *input,
                    const char *summary)
{
    struct json_object *action = json_object_new_object();
    json_object_object_add(action, "tool", json_object_new_string(tool));
    json_object_object_add(action, "input", input);
    json_object_object_add(action, "summary", json_object_new_string(summary));
    json_object_array_add(p->out->actions, action);
    json_object_array_add(p->summaries, json_object_new_string(summary));
}

static void say_proposals(struct parse *p)
{
    size_t n = json_object_array_length(p->summaries);
    if (n == 0)
        return;
    say(p, "I propose to ");
    for (size_t i = 0; i < n; i++)
        say(p, "%s%s",
            i == 0       ? ""
            : i + 1 == n ? "; and "
                         : "; ",
            json_object_get_string(json_object_array_get_idx(p->summaries, i)));
    say(p, n == 1 ? ". Nothing changes until you execute it."
                  : ". Each is a separate action; nothing changes until you execute it.");
}

/* ---- what the sentence said that was read ---- */

static void use(struct parse *p, long i)
{
    if (i >= 0 && (size_t)i < p->tx.n)
        p->tx.used[i] = 1;
}

/* Marks the words from i on that are in words (stops at the first other). */
static void use_run(struct parse *p, long i, const char *const *words)
{
    while (i >= 0 && (size_t)i < p->tx.n && is_one_of(p->tx.w[i].low, words))
        p->tx.used[i++] = 1;
}

/* Marks the words before i that are in words (stops at the first other). */
static void use_run_back(struct parse *p, long i, const char *const *words)
{
    while (--i >= 0 && is_one_of(p->tx.w[i].low, words))
        p->tx.used[i] = 1;
}

/* Marks every word equal to one of words. */
static void use_all(struct parse *p, const char *const *words)
{
    for (size_t i = 0; i < p->tx.n; i++) {
        if (is_one_of(p->tx.w[i].low, words))
            p->tx.used[i] = 1;
    }
}

/*
 * The first word a proposal left unread that narrows the change (an
 * audience, a time, a share, a condition: agent_phrase_is_qualifier), or
 * -1. Proposing the change without it would do more than was asked.
 */
static long unread_qualifier(const struct parse *p)
{
    for (size_t i = 0; i < p->tx.n; i++) {
        if (!p->tx.used[i] && agent_phrase_is_qualifier(p->tx.w[i].low))
            return (long)i;
    }
    return -1;
}

/* ---- slots ---- */

/* The distinct existing flag keys the text names. */
static struct json_object *named_flags(const struct agent_catalog *c, const struct text *tx)
{
    struct json_object *found = json_object_new_array();
    for (size_t i = 0; i < tx->n; i++) {
        if (agent_catalog_flag(c, tx->w[i].low) != NULL && !agent_array_has(found, tx->w[i].low))
            json_object_array_add(found, json_object_new_string(tx->w[i].low));
    }
    return found;
}

/* The one flag an earlier user message named, or NULL. */
static struct json_object *earlier_flag(struct parse *p)
{
    size_t n = json_object_array_length(p->messages);
    for (size_t i = n - 1; i-- > 0;) {
        struct json_object *msg = json_object_array_get_idx(p->messages, i), *role, *content;
        if (!json_object_object_get_ex(msg, "role", &role) ||
            strcmp(json_object_get_string(role), "user") != 0 ||
            !json_object_object_get_ex(msg, "content", &content))
            continue;
        struct text tx;
        if (text_init(&tx, json_object_get_string(content), false) != 0)
            return NULL;
        struct json_object *found = named_flags(p->c, &tx);
        struct json_object *flag =
            json_object_array_length(found) == 1
                ? agent_catalog_flag(p->c,
                                     json_object_get_string(json_object_array_get_idx(found, 0)))
                : NULL;
        size_t count = json_object_array_length(found);
        json_object_put(found);
        text_free(&tx);
        if (count > 0)
            return flag;
    }
    return NULL;
}

/* A word after one of anchors that looks like a key the user meant. */
static const char *key_candidate(const struct parse *p, const char *const *anchors)
{
    static const char *const skip[] = {"the",     "a",      "an",    "flag",
                                       "feature", "called", "named", NULL};
    for (size_t i = 0; i < p->tx.n; i++) {
        if (!is_one_of(p->tx.w[i].low, anchors))
            continue;
        size_t j = i + 1;
        while (j < p->tx.n && is_one_of(p->tx.w[j].low, skip))
            j++;
        if (j < p->tx.n && validate_key_ok(p->tx.w[j].low) && !is_grammar(p->tx.w[j].low) &&
            !agent_catalog_has_env(p->c, p->tx.w[j].low))
            return p->tx.w[j].low;
    }
    return NULL;
}

static const char *const flag_anchors[] = {"flag",       "enable",  "disable", "activate",
                                           "deactivate", "archive", "restore", "unarchive",
                                           "for",        "of",      "explain", NULL};

/* The flag the text is about, or NULL after saying why. */
static struct json_object *flag_slot(struct parse *p)
{
    struct json_object *found = named_flags(p->c, &p->tx);
    size_t n = json_object_array_length(found);
    struct json_object *flag = NULL;
    if (n == 1) {
        flag =
            agent_catalog_flag(p->c, json_object_get_string(json_object_array_get_idx(found, 0)));
        static const char *const before[] = {"for",    "of",    "flag", "the", "feature",
                                             "called", "named", "on",   NULL};
        static const char *const after[] = {"flag", "feature", NULL};
        for (size_t i = 0; i < p->tx.n; i++) {
            if (strcmp(p->tx.w[i].low, agent_flag_key(flag)) != 0)
                continue;
            use(p, (long)i);
            use_run_back(p, (long)i, before);
            use_run(p, (long)i + 1, after);
        }
    } else if (n > 1) {
        say(p, "Which flag do you mean: ");
        say_list(p, found);
        say(p, "?");
    } else {
        const char *candidate = key_candidate(p, flag_anchors);
        if (candidate != NULL) {
            say_unknown(p, "flag", candidate, p->c->flags);
        } else if ((flag = earlier_flag(p)) != NULL) {
            say(p, "(Taking the flag %s from earlier in the conversation.) ", agent_flag_key(flag));
        } else {
            say(p, "Which flag? Name it by its key.");
        }
    }
    json_object_put(found);
    return flag;
}

/* Marks the environment word i and the words that lead to it. */
static void use_env_word(struct parse *p, size_t i)
{
    static const char *const before[] = {"in",  "on", "environment", "env", "the",
                                         "and", "to", "both",        NULL};
    static const char *const after[] = {"environment", "environments", "env", NULL};
    use(p, (long)i);
    use_run_back(p, (long)i, before);
    use_run(p, (long)i + 1, after);
}

/* An unknown name where an environment was expected ("in staging"), said
 * with the closest known one; true when one was found. */
static bool unknown_env_named(struct parse *p)
{
    static const char *const anchors[] = {"in", "environment", "env", "and", NULL};
    for (size_t i = p->tx.n; i-- > 0;) {
        if (!is_one_of(p->tx.w[i].low, anchors) || i + 1 >= p->tx.n)
            continue;
        size_t j = i + 1;
        if (strcmp(p->tx.w[j].low, "the") == 0 && j + 1 < p->tx.n)
            j++;
        const char *name = p->tx.w[j].low;
        if (p->tx.used[j] || agent_catalog_has_env(p->c, name))
            continue;
        if (strcmp(p->tx.w[i].low, "and") == 0 &&
            (i == 0 || !agent_catalog_has_env(p->c, p->tx.w[i - 1].low)))
            continue; /* "and" not after an environment */
        if (validate_key_ok(name) && !is_grammar(name) && strcmp(name, "segment") != 0 &&
            agent_catalog_flag(p->c, name) == NULL && !agent_phrase_is_qualifier(name)) {
            say_unknown(p, "environment", name, p->c->environments);
            return true;
        }
    }
    return false;
}

/*
 * The environments the text names (a new array of keys: "everywhere"
 * means all of them), or NULL after saying why (none named, or an unknown
 * one among them).
 */
static struct json_object *env_list_slot(struct parse *p)
{
    struct json_object *envs = json_object_new_array();
    for (size_t i = 0; i < p->tx.n; i++) {
        const char *low = p->tx.w[i].low;
        if (strcmp(low, "everywhere") == 0) {
            use(p, (long)i);
            size_t n = json_object_array_length(p->c->environments);
            for (size_t k = 0; k < n; k++) {
                const char *env =
                    json_object_get_string(json_object_array_get_idx(p->c->environments, k));
                if (!agent_array_has(envs, env))
                    json_object_array_add(envs, json_object_new_string(env));
            }
        } else if (agent_catalog_has_env(p->c, low)) {
            use_env_word(p, i);
            if (!agent_array_has(envs, low))
                json_object_array_add(envs, json_object_new_string(low));
        }
    }
    if (unknown_env_named(p)) {
        json_object_put(envs);
        return NULL;
    }
    if (json_object_array_length(envs) > 0)
        return envs;
    json_object_put(envs);
    say(p, "In which environment (");
    say_list(p, p->c->environments);
    say(p, ", or everywhere)?");
    return NULL;
}

/* The one environment the text names, or NULL after saying why. */
static const char *env_slot(struct parse *p)
{
    struct json_object *envs = env_list_slot(p);
    if (envs == NULL)
        return NULL;
    const char *env = NULL;
    if (json_object_array_length(envs) == 1) {
        const char *name = json_object_get_string(json_object_array_get_idx(envs, 0));
        size_t n = json_object_array_length(p->c->environments);
        for (size_t k = 0; k < n && env == NULL; k++) { /* a string that outlives envs */
            const char *known =
                json_object_get_string(json_object_array_get_idx(p->c->environments, k));
            if (strcmp(known, name) == 0)
                env = known;
        }
    } else {
        say(p, "Which environment do you mean: ");
        say_list(p, envs);
        say(p, "?");
    }
    json_object_put(envs);
    return env;
}

/* A variant key of flag that word names (true/false name on/off on boolean flags). */
static const char *variant_of(const struct json_object *flag, const char *low)
{
    if (strcmp(agent_flag_type(flag), "boolean") == 0) {
        if (strcmp(low, "true") == 0)
            return "on";
        if (strcmp(low, "false") == 0)
            return "off";
    }
    struct json_object *variants = agent_flag_variants(flag);
    size_t n = variants ? json_object_array_length(variants) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = json_object_get_string(json_object_array_get_idx(variants, i));
        if (strcmp(key, low) == 0)
            return key;
    }
    return NULL;
}

/* The variant named right after word at (skipping "variant"), or NULL
 * after saying why. */
static const char *variant_after(struct parse *p, const struct json_object *flag, long at)
{
    size_t j = (size_t)at + 1;
    if (j < p->tx.n && strcmp(p->tx.w[j].low, "variant") == 0)
        j++;
    if (j >= p->tx.n) {
        say(p, "Which variant of %s (", agent_flag_key(flag));
        say_list(p, agent_flag_variants(flag));
        say(p, ")?");
        return NULL;
    }
    const char *variant = variant_of(flag, p->tx.w[j].low);
    if (variant != NULL) {
        use(p, at);
        use(p, (long)j);
        if (j > (size_t)at + 1)
            use(p, at + 1);
    }
    if (variant == NULL) {
        say(p, "The flag %s has no variant \"%s\".", agent_flag_key(flag), p->tx.w[j].orig);
        const char *closest = agent_closest(agent_flag_variants(flag), p->tx.w[j].low);
        if (closest != NULL)
            say(p, " Did you mean %s?", closest);
        say(p, " Its variants: ");
        say_list(p, agent_flag_variants(flag));
        say(p, ".");
    }
    return variant;
}

/* Variant keys of flag the text names anywhere (distinct, excluding the
 * flag's and environments' own keys). */
static struct json_object *named_variants(struct parse *p, const struct json_object *flag)
{
    struct json_object *found = json_object_new_array();
    for (size_t i = 0; i < p->tx.n; i++) {
        const char *low = p->tx.w[i].low;
        if (strcmp(low, agent_flag_key(flag)) == 0 || agent_catalog_has_env(p->c, low))
            continue;
        const char *variant = variant_of(flag, low);
        if (variant == NULL)
            continue;
        static const char *const before[] = {"to", "variant", "serve", "the",
                                             "as", "make",    "and",   NULL};
        use(p, (long)i);
        use_run_back(p, (long)i, before);
        if (!agent_array_has(found, variant))
            json_object_array_add(found, json_object_new_string(variant));
    }
    return found;
}

static bool archived_refusal(struct parse *p, const struct json_object *flag)
{
    if (!agent_flag_archived(flag))
        return false;
    say(p, "The flag %s is archived; restore it first (\"restore %s\").", agent_flag_key(flag),
        agent_flag_key(flag));
    return true;
}

/* An attribute path as the conditions take it. */
static bool attribute_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > VALIDATE_ATTRIBUTE_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && ch != '_' && ch != '.' && ch != '-' && ch != '$')
            return false;
    }
    return true;
}

/*
 * An audience "ATTRIBUTE [is|in|=] V1 [and|or] V2 ..." or "segment KEY"
 * starting at word i, up to a stop word ("in" before an environment, "for",
 * "of"). Returns the conditions array (caller owns), or NULL after saying
 * why. *text_out receives a description for the summary.
 */
static struct json_object *audience_read(struct parse *p, size_t i, size_t *end, char *text_out,
                                         size_t text_len);

/* audience_read, marking every word it read. */
static struct json_object *audience(struct parse *p, size_t i, char *text_out, size_t text_len)
{
    size_t end = i;
    struct json_object *conds = audience_read(p, i, &end, text_out, text_len);
    if (conds != NULL) {
        for (size_t k = i; k < end && k < p->tx.n; k++)
            use(p, (long)k);
    }
    return conds;
}

static struct json_object *audience_read(struct parse *p, size_t i, size_t *end, char *text_out,
                                         size_t text_len)
{
    static const char *const skip[] = {"users", "user",  "people", "contexts", "everybody",
                                       "with",  "whose", "where",  "from",     "the",
                                       "a",     "an",    NULL};
    static const char *const joiners[] = {"is",  "in",  "=",   "equals", "of",
                                          "one", "any", "are", NULL};
    while (i < p->tx.n && (is_one_of(p->tx.w[i].low, skip) ||
                           (strcmp(p->tx.w[i].low, "in") == 0 && i + 1 < p->tx.n &&
                            strcmp(p->tx.w[i + 1].low, "segment") == 0)))
        i++;
    if (i < p->tx.n && strcmp(p->tx.w[i].low, "segment") == 0) {
        if (i + 1 >= p->tx.n) {
            say(p, "Which segment?");
            return NULL;
        }
        const char *key = p->tx.w[i + 1].low;
        if (!agent_catalog_has_segment(p->c, key)) {
            say_unknown(p, "segment", key, p->c->segments);
            return NULL;
        }
        struct json_object *conds = json_object_new_array();
        struct json_object *cond = json_object_new_object();
        json_object_object_add(cond, "segment", json_object_new_string(key));
        json_object_array_add(conds, cond);
        snprintf(text_out, text_len, "the segment %s", key);
        *end = i + 2;
        return conds;
    }
    if (i >= p->tx.n || !attribute_ok(p->tx.w[i].orig) || is_grammar(p->tx.w[i].low)) {
        say(p, "To whom? Say e.g. \"to country NL and BE\" or \"to segment beta-testers\".");
        return NULL;
    }
    const char *attribute = p->tx.w[i].orig;
    i++;
    while (i < p->tx.n && is_one_of(p->tx.w[i].low, joiners) &&
           !(strcmp(p->tx.w[i].low, "in") == 0 && i + 1 < p->tx.n &&
             agent_catalog_has_env(p->c, p->tx.w[i + 1].low)))
        i++;
    struct json_object *values = json_object_new_array();
    int used = snprintf(text_out, text_len, "contexts whose %s is", attribute);
    for (; i < p->tx.n; i++) {
        const char *low = p->tx.w[i].low;
        if (strcmp(low, "and") == 0 || strcmp(low, "or") == 0)
            continue;
        if (strcmp(low, "in") == 0 || strcmp(low, "for") == 0 || strcmp(low, "of") == 0 ||
            agent_catalog_has_env(p->c, low) || agent_catalog_flag(p->c, low) != NULL)
            break;
        if (json_object_array_length(values) == VALIDATE_VALUES_MAX)
            break;
        json_object_array_add(values, json_object_new_string(p->tx.w[i].orig));
        if (used > 0 && (size_t)used < text_len)
            used += snprintf(text_out + used, text_len - (size_t)used, "%s %s",
                             json_object_array_length(values) == 1 ? "" : " or", p->tx.w[i].orig);
    }
    if (json_object_array_length(values) == 0) {
        json_object_put(values);
        say(p, "Which values of %s? Say e.g. \"to %s NL and BE\".", attribute, attribute);
        return NULL;
    }
    *end = i;
    struct json_object *cond = json_object_new_object();
    json_object_object_add(cond, "attribute", json_object_new_string(attribute));
    json_object_object_add(cond, "operator", json_object_new_string(cond_op_name(SNAPSHOT_OP_IN)));
    json_object_object_add(cond, "values", values);
    struct json_object *conds = json_object_new_array();
    json_object_array_add(conds, cond);
    return conds;
}

/* ---- intents ---- */

/* The flag (not archived) and environments of a configuration write, or
 * false after saying what is missing (*envs is then NULL). */
static bool writable_flag_in_envs(struct parse *p, struct json_object **flag,
                                  struct json_object **envs)
{
    *envs = NULL;
    *flag = flag_slot(p);
    if (*flag == NULL || archived_refusal(p, *flag))
        return false;
    *envs = env_list_slot(p);
    return *envs != NULL;
}

static const char *env_at(const struct json_object *envs, size_t i)
{
    return json_object_get_string(json_object_array_get_idx(envs, i));
}

static struct json_object *env_input(const char *flag, const char *env)
{
    struct json_object *input = json_object_new_object();
    json_object_object_add(input, "flag", json_object_new_string(flag));
    json_object_object_add(input, "environment", json_object_new_string(env));
    return input;
}

/*
 * Proposes changes (the environment PATCH body; owned here) for flag in
 * env: now (update_flag_environment), or at the time the sentence named
 * (schedule_change). summary says what it does, without the time.
 */
static void propose_env_change(struct parse *p, const char *flag, const char *env,
                               struct json_object *changes, const char *summary)
{
    struct json_object *input = env_input(flag, env);
    json_object_object_add(input, "changes", changes);
    if (p->when != WHEN_AT) {
        propose(p, "update_flag_environment", input, summary);
        return;
    }
    json_object_object_add(input, "at", json_object_new_string(p->at));
    char scheduled[700];
    snprintf(scheduled, sizeof scheduled, "schedule for %s (UTC): %s", p->at, summary);
    propose(p, "schedule_change", input, scheduled);
}

static void intent_toggle(struct parse *p)
{
    bool on = false, off = false;
    for (size_t i = 0; i < p->tx.n; i++) {
        if (agent_phrase_is_on_word(p->tx.w[i].low))
            on = true, use(p, (long)i);
        else if (agent_phrase_is_off_word(p->tx.w[i].low))
            off = true, use(p, (long)i);
    }
    static const char *const verbs[] = {"turn", "switch", "flip", "everyone", "please", NULL};
    use_all(p, verbs);
    if (on == off) {
        say(p, on ? "Should the flag be enabled or disabled? Please say only one."
                  : "Should the flag be turned on or off?");
        return;
    }
    struct json_object *flag, *envs;
    if (!writable_flag_in_envs(p, &flag, &envs))
        return;
    for (size_t i = 0; i < json_object_array_length(envs); i++) {
        struct json_object *changes = json_object_new_object();
        json_object_object_add(changes, "enabled", json_object_new_boolean(on));
        char summary[256];
        snprintf(summary, sizeof summary, "%s the flag %s in %s", on ? "enable" : "disable",
                 agent_flag_key(flag), env_at(envs, i));
        propose_env_change(p, agent_flag_key(flag), env_at(envs, i), changes, summary);
    }
    json_object_put(envs);
}

static void propose_default(struct parse *p, const struct json_object *flag,
                            const struct json_object *envs, const char *variant)
{
    for (size_t i = 0; i < json_object_array_length(envs); i++) {
        struct json_object *changes = json_object_new_object(), *serve = json_object_new_object();
        json_object_object_add(serve, "variant", json_object_new_string(variant));
        json_object_object_add(changes, "defaultServe", serve);
        char summary[256];
        snprintf(summary, sizeof summary, "serve %s by default for the flag %s in %s", variant,
                 agent_flag_key(flag), env_at(envs, i));
        propose_env_change(p, agent_flag_key(flag), env_at(envs, i), changes, summary);
    }
}

static void intent_default(struct parse *p)
{
    static const char *const words[] = {"set", "make", "default",  "serve",
                                        "the", "as",   "everyone", NULL};
    use_all(p, words);
    struct json_object *flag, *envs;
    if (!writable_flag_in_envs(p, &flag, &envs))
        return;
    struct json_object *named = named_variants(p, flag);
    size_t n = json_object_array_length(named);
    if (n == 1) {
        propose_default(p, flag, envs, json_object_get_string(json_object_array_get_idx(named, 0)));
    } else if (n > 1) {
        say(p, "Which variant should %s serve by default: ", agent_flag_key(flag));
        say_list(p, named);
        say(p, "?");
    } else {
        long to = -1;
        for (long i = find_word(&p->tx, "to", 0); i >= 0;
             i = find_word(&p->tx, "to", (size_t)i + 1))
            to = i;
        if (to < 0)
            to = find_word(&p->tx, "serve", 0);
        if (to >= 0)
            variant_after(p, flag, to); /* names the unknown variant */
        else {
            say(p, "Which variant should %s serve by default (", agent_flag_key(flag));
            say_list(p, agent_flag_variants(flag));
            say(p, ")?");
        }
    }
    json_object_put(named);
    json_object_put(envs);
}

/* The percentage the text names (0 to 100), or -1 when none, -2 when out
 * of range; marks its words. */
static double percentage(struct parse *p)
{
    const struct text *tx = &p->tx;
    for (size_t i = 0; i < tx->n; i++) {
        const char *s = tx->w[i].low;
        size_t len = strlen(s);
        bool sign = len > 1 && s[len - 1] == '%';
        bool word =
            !sign && i + 1 < tx->n &&
            (strcmp(tx->w[i + 1].low, "%") == 0 || strcmp(tx->w[i + 1].low, "percent") == 0);
        if (!sign && !word)
            continue;
        char number[32];
        snprintf(number, sizeof number, "%.*s", (int)(sign ? len - 1 : len), s);
        char *end;
        double value = strtod(number, &end);
        if (end == number || *end != '\0' || !isfinite(value))
            continue;
        use(p, (long)i);
        if (word)
            use(p, (long)i + 1);
        static const char *const before[] = {"to", "of", "for", "at", NULL};
        static const char *const after[] = {"of",     "the",      "users", "traffic",
                                            "people", "contexts", NULL};
        use_run_back(p, (long)i, before);
        use_run(p, (long)i + (word ? 2 : 1), after);
        return value < 0 || value > 100 ? -2 : value;
    }
    return -1;
}

static const char *bucket_attribute(struct parse *p, bool *bad)
{
    *bad = false;
    long by = find_word(&p->tx, "by", 0);
    if (by < 0)
        return NULL;
    if ((size_t)by + 1 >= p->tx.n || !attribute_ok(p->tx.w[by + 1].orig) ||
        is_grammar(p->tx.w[by + 1].low)) {
        say(p, "Bucket by which attribute? Say e.g. \"by userId\".");
        *bad = true;
        return NULL;
    }
    use(p, by);
    use(p, by + 1);
    if (by > 0 && strcmp(p->tx.w[by - 1].low, "bucketed") == 0)
        use(p, by - 1);
    return p->tx.w[by + 1].orig;
}

/* The variants of a multivariate rollout: who gets the percentage, who the rest. */
static bool rollout_variants(struct parse *p, const struct json_object *flag, const char **share,
                             const char **rest)
{
    if (strcmp(agent_flag_type(flag), "boolean") == 0) {
        *share = "on";
        *rest = "off";
        return true;
    }
    struct json_object *named = named_variants(p, flag), *all = agent_flag_variants(flag);
    size_t n = json_object_array_length(named), total = all ? json_object_array_length(all) : 0;
    bool ok = false;
    /* named holds copies: take the catalogue's strings, which outlive it */
    if (n == 2) {
        *share = variant_of(flag, json_object_get_string(json_object_array_get_idx(named, 0)));
        *rest = variant_of(flag, json_object_get_string(json_object_array_get_idx(named, 1)));
        ok = true;
    } else if (n == 1 && total == 2) {
        *share = variant_of(flag, json_object_get_string(json_object_array_get_idx(named, 0)));
        const char *first = json_object_get_string(json_object_array_get_idx(all, 0));
        *rest = strcmp(first, *share) == 0
                    ? json_object_get_string(json_object_array_get_idx(all, 1))
                    : first;
        ok = true;
    }
    if (!ok) {
        say(p,
            "Which variant of %s gets the percentage, and which the rest? Say e.g. \"roll "
            "out %s variant A to 25%% and B to the rest in production\". Its variants: ",
            agent_flag_key(flag), agent_flag_key(flag));
        say_list(p, all);
        say(p, ".");
    }
    json_object_put(named);
    return ok;
}

static struct json_object *rollout_changes(const char *share, const char *rest, double pct,
                                           const char *bucket_by)
{
    long weight = (long)(pct * 10000.0 + 0.5);
    struct json_object *items = json_object_new_array();
    const char *keys[2] = {share, rest};
    long weights[2] = {weight, VALIDATE_WEIGHT_MAX - weight};
    for (int i = 0; i < 2; i++) {
        struct json_object *item = json_object_new_object();
        json_object_object_add(item, "variant", json_object_new_string(keys[i]));
        json_object_object_add(item, "weight", json_object_new_int64(weights[i]));
        json_object_array_add(items, item);
    }
    struct json_object *serve = json_object_new_object();
    json_object_object_add(serve, "rollout", items);
    if (bucket_by != NULL)
        json_object_object_add(serve, "bucketBy", json_object_new_string(bucket_by));
    struct json_object *changes = json_object_new_object();
    json_object_object_add(changes, "enabled", json_object_new_boolean(true));
    json_object_object_add(changes, "defaultServe", serve);
    return changes;
}

static void intent_rollout(struct parse *p)
{
    static const char *const words[] = {"roll",      "out", "rollout", "the",   "rest", "others",
                                        "remaining", "and", "to",      "serve", "of",   NULL};
    double pct = percentage(p);
    if (pct == -2) {
        say(p, "A percentage must be between 0 and 100.");
        return;
    }
    struct json_object *flag, *envs;
    if (!writable_flag_in_envs(p, &flag, &envs))
        return;
    bool bad;
    const char *bucket_by = NULL, *share, *rest;
    if (pct < 0)
        say(p, "Roll %s out to what percentage? Say e.g. \"to 25%%\".", agent_flag_key(flag));
    else if (!(bucket_by = bucket_attribute(p, &bad), bad) &&
             rollout_variants(p, flag, &share, &rest)) {
        use_all(p, words);
        for (size_t i = 0; i < json_object_array_length(envs); i++) {
            char summary[512];
            snprintf(summary, sizeof summary,
                     "enable the flag %s in %s and serve %s to %g%% and %s to the rest, "
                     "bucketed by %s",
                     agent_flag_key(flag), env_at(envs, i), share, pct, rest,
                     bucket_by ? bucket_by : "targetingKey");
            propose_env_change(p, agent_flag_key(flag), env_at(envs, i),
                               rollout_changes(share, rest, pct, bucket_by), summary);
        }
    }
    json_object_put(envs);
}

static void propose_rules(struct parse *p, const struct json_object *flag,
                          const struct json_object *envs, const char *variant,
                          const struct json_object *conds, const char *who)
{
    for (size_t i = 0; i < json_object_array_length(envs); i++) {
        struct json_object *rule = json_object_new_object(), *serve = json_object_new_object();
        json_object_object_add(serve, "variant", json_object_new_string(variant));
        struct json_object *copy = NULL;
        json_object_deep_copy((struct json_object *)conds, &copy, NULL);
        json_object_object_add(rule, "conditions", copy);
        json_object_object_add(rule, "serve", serve);
        struct json_object *input = env_input(agent_flag_key(flag), env_at(envs, i));
        json_object_object_add(input, "rule", rule);
        char summary[600];
        snprintf(summary, sizeof summary, "add a rule to the flag %s in %s: serve %s to %s",
                 agent_flag_key(flag), env_at(envs, i), variant, who);
        propose(p, "add_rule", input, summary);
    }
}

static void intent_rule(struct parse *p)
{
    struct json_object *flag, *envs;
    if (!writable_flag_in_envs(p, &flag, &envs))
        return;
    long serve = find_word(&p->tx, "serve", 0);
    if (serve < 0) {
        say(p, "What should the rule serve, and to whom? Say e.g. \"serve on to country NL and "
               "BE in production\".");
        json_object_put(envs);
        return;
    }
    use(p, serve);
    use(p, find_word(&p->tx, "rule", 0));
    long to = find_word(&p->tx, "to", (size_t)serve + 1);
    static const char *const all_words[] = {"everyone", "all", "everybody", NULL};
    bool everyone =
        (to >= 0 && (size_t)to + 1 < p->tx.n && is_one_of(p->tx.w[to + 1].low, all_words)) ||
        has(&p->tx, "everyone");
    const char *variant = variant_after(p, flag, serve);
    if (variant != NULL && everyone) {
        use_all(p, all_words);
        use(p, to);
        propose_default(p, flag, envs, variant);
    } else if (variant != NULL && to < 0) {
        say(p, "To whom should %s serve %s? Say e.g. \"to country NL and BE\".",
            agent_flag_key(flag), variant);
    } else if (variant != NULL) {
        use(p, to);
        char who[400];
        struct json_object *conds = audience(p, (size_t)to + 1, who, sizeof who);
        if (conds != NULL && p->when != WHEN_NOW)
            say(p, "A rule cannot be scheduled yet: schedules change an environment's "
                   "settings (enabled, default serve, off variant), not its rules.");
        else if (conds != NULL)
            propose_rules(p, flag, envs, variant, conds, who);
        json_object_put(conds);
    }
    json_object_put(envs);
}

static void intent_archive(struct parse *p, bool archive)
{
    static const char *const words[] = {"archive",   "retire", "restore",
                                        "unarchive", "please", NULL};
    use_all(p, words);
    struct json_object *flag = flag_slot(p);
    if (flag == NULL)
        return;
    if (agent_flag_archived(flag) == archive) {
        say(p, "The flag %s is %s already; nothing to do.", agent_flag_key(flag),
            archive ? "archived" : "active");
        return;
    }
    struct json_object *input = json_object_new_object();
    json_object_object_add(input, "flag", json_object_new_string(agent_flag_key(flag)));
    char summary[160];
    snprintf(summary, sizeof summary, "%s the flag %s", archive ? "archive" : "restore",
             agent_flag_key(flag));
    propose(p, archive ? "archive_flag" : "restore_flag", input, summary);
}

/* The key after "segment"/"flag" (skipping called/named), or NULL after saying why. */
static const char *new_key(struct parse *p, const char *noun)
{
    static const char *const skip[] = {"called", "named", "key", "with", NULL};
    long at = find_word(&p->tx, noun, 0);
    size_t j = (size_t)at + 1;
    while (j < p->tx.n && is_one_of(p->tx.w[j].low, skip))
        j++;
    const char *orig = j < p->tx.n ? p->tx.w[j].orig : NULL;
    for (size_t k = (size_t)at; k <= j && k < p->tx.n; k++)
        use(p, (long)k);
    if (orig != NULL && validate_key_ok(orig) && !is_grammar(orig))
        return orig;
    if (orig == NULL || is_grammar(p->tx.w[j].low)) {
        /* "create a new-checkout flag": the word before the noun */
        if (at > 0 && validate_key_ok(p->tx.w[at - 1].orig) && !is_grammar(p->tx.w[at - 1].low) &&
            validate_flag_type_from_name(p->tx.w[at - 1].low) < 0) {
            use(p, at - 1);
            return p->tx.w[at - 1].orig;
        }
        say(p,
            "What key should the %s have? Keys are 1 to 63 lowercase letters, digits and "
            "dashes, e.g. new-checkout.",
            noun);
        return NULL;
    }
    char suggestion[VALIDATE_KEY_MAX + 1];
    validate_slugify(orig, suggestion);
    say(p, "\"%s\" is not a valid %s key: keys are 1 to 63 lowercase letters, digits and dashes",
        orig, noun);
    if (suggestion[0] != '\0')
        say(p, " (for example %s)", suggestion);
    say(p, ".");
    return NULL;
}

/* The words after "variants"/"values" as variant objects, or NULL after saying why. */
static struct json_object *variant_list(struct parse *p, const char *type, bool *given)
{
    long at = find_word(&p->tx, "variants", 0);
    if (at < 0)
        at = find_word(&p->tx, "values", 0);
    *given = at >= 0;
    struct json_object *variants = json_object_new_array();
    if (at < 0)
        return variants;
    for (size_t i = (size_t)at; i < p->tx.n; i++)
        use(p, (long)i);
    if (at > 0 && strcmp(p->tx.w[at - 1].low, "with") == 0)
        use(p, at - 1);
    for (size_t i = (size_t)at + 1; i < p->tx.n; i++) {
        const char *orig = p->tx.w[i].orig, *low = p->tx.w[i].low;
        if (strcmp(low, "and") == 0 || strcmp(low, "or") == 0)
            continue;
        if (json_object_array_length(variants) == 64) {
            say(p, "A flag is created with at most 64 variants.");
            json_object_put(variants);
            return NULL;
        }
        struct json_object *value;
        if (strcmp(type, "number") == 0) {
            char *end;
            double number = strtod(orig, &end);
            if (end == orig || *end != '\0' || !isfinite(number)) {
                say(p, "\"%s\" is not a number, and a number flag's variants are numbers.", orig);
                json_object_put(variants);
                return NULL;
            }
            value = number > -9e15 && number < 9e15 && number == (double)(int64_t)number
                        ? json_object_new_int64((int64_t)number)
                        : json_object_new_double(number);
        } else {
            value = json_object_new_string(orig);
        }
        struct json_object *variant = json_object_new_object();
        json_object_object_add(variant, "value", value);
        json_object_array_add(variants, variant);
    }
    return variants;
}

static const char *flag_type_named(struct parse *p, bool *ambiguous)
{
    static const char *const names[] = {"boolean", "bool", "string", "number",
                                        "numeric", "json", NULL};
    static const char *const types[] = {"boolean", "boolean", "string", "number", "number", "json"};
    const char *type = NULL;
    *ambiguous = false;
    use_all(p, names);
    for (size_t i = 0; names[i]; i++) {
        if (!has(&p->tx, names[i]))
            continue;
        if (type != NULL && strcmp(type, types[i]) != 0)
            *ambiguous = true;
        type = types[i];
    }
    return type;
}

static void intent_create_flag(struct parse *p)
{
    static const char *const words[] = {"create", "add", "new", "make", "a", "an", "please", NULL};
    use_all(p, words);
    bool ambiguous;
    const char *type = flag_type_named(p, &ambiguous);
    if (ambiguous) {
        say(p, "Which type should the flag have: boolean, string, number or json?");
        return;
    }
    if (type == NULL)
        type = "boolean";
    const char *key = new_key(p, "flag");
    if (key == NULL)
        return;
    if (agent_catalog_flag(p->c, key) != NULL) {
        say(p, "A flag called %s already exists.", key);
        return;
    }
    bool given;
    struct json_object *variants = variant_list(p, type, &given);
    if (variants == NULL)
        return;
    size_t count = json_object_array_length(variants);
    if (strcmp(type, "boolean") == 0 && given) {
        say(p,
            "Boolean flags always have the two variants on and off; say \"create a string "
            "flag %s with variants ...\" for other values.",
            key);
        json_object_put(variants);
        return;
    }
    if (strcmp(type, "json") == 0 && count > 0) {
        say(p,
            "I cannot read JSON variant values from a sentence: create the json flag %s "
            "without variants and add them with POST /v1/orgs/{org}/flags/%s/variants.",
            key, key);
        json_object_put(variants);
        return;
    }
    if (given && count == 0) {
        say(p, "Which variants? Say e.g. \"with variants red, green and blue\".");
        json_object_put(variants);
        return;
    }
    struct json_object *input = json_object_new_object();
    json_object_object_add(input, "slug", json_object_new_string(key));
    json_object_object_add(input, "type", json_object_new_string(type));
    if (count > 0)
        json_object_object_add(input, "variants", variants);
    else
        json_object_put(variants);
    char summary[200];
    snprintf(summary, sizeof summary,
             "create the %s flag %s with %zu variant%s (disabled in every environment)", type, key,
             strcmp(type, "boolean") == 0 ? 2 : count,
             (strcmp(type, "boolean") == 0 ? 2 : count) == 1 ? "" : "s");
    propose(p, "create_flag", input, summary);
}

static void intent_create_segment(struct parse *p)
{
    const char *key = new_key(p, "segment");
    if (key == NULL)
        return;
    if (agent_catalog_has_segment(p->c, key)) {
        say(p, "A segment called %s already exists.", key);
        return;
    }
    static const char *const anchors[] = {"for", "with", "where", "of", "whose", NULL};
    static const char *const verbs[] = {"create", "add", "new", "make", "define", "a", NULL};
    use_all(p, verbs);
    long at = find_word(&p->tx, "segment", 0);
    struct json_object *conds = NULL;
    char who[400] = "";
    for (size_t i = (size_t)at + 1; i < p->tx.n; i++) {
        if (is_one_of(p->tx.w[i].low, anchors)) {
            if ((conds = audience(p, i + 1, who, sizeof who)) == NULL)
                return;
            use(p, (long)i);
            break;
        }
    }
    struct json_object *input = json_object_new_object();
    json_object_object_add(input, "key", json_object_new_string(key));
    json_object_object_add(input, "name", json_object_new_string(key));
    json_object_object_add(input, "conditions", conds ? conds : json_object_new_array());
    char summary[500];
    snprintf(summary, sizeof summary, "create the segment %s%s%s", key, who[0] ? " of " : "",
             who[0] ? who : " (no conditions: it matches every context)");
    propose(p, "create_segment", input, summary);
}

/* ---- read-only answers ---- */

static long long int_member(const struct json_object *obj, const char *name, bool *null)
{
    struct json_object *value;
    *null = !json_object_object_get_ex(obj, name, &value) || value == NULL;
    return *null ? 0 : json_object_get_int64(value);
}

static long days_in_text(const struct text *tx)
{
    for (size_t i = 0; i + 1 < tx->n; i++) {
        char *end;
        long days = strtol(tx->w[i].low, &end, 10);
        if (end != tx->w[i].low && *end == '\0' && (strncmp(tx->w[i + 1].low, "day", 3) == 0))
            return days;
    }
    return -1;
}

static void answer_unused(struct parse *p, long days)
{
    struct json_object *list = json_object_new_array();
    size_t n = json_object_array_length(p->c->flags);
    for (size_t i = 0; i < n; i++) {
        struct json_object *flag = json_object_array_get_idx(p->c->flags, i);
        bool never;
        long long idle = int_member(flag, "idleDays", &never);
        if (agent_flag_archived(flag))
            continue;
        if (days < 0 ? never : (never || idle >= days))
            json_object_array_add(list, json_object_new_string(agent_flag_key(flag)));
    }
    size_t count = json_object_array_length(list);
    if (days < 0)
        say(p, count ? "These active flags have never been evaluated: "
                     : "Every active flag has been evaluated at least once.");
    else
        say(p,
            count ? "These active flags were not evaluated in the last %ld days: "
                  : "Every active flag was evaluated in the last %ld days.",
            days);
    if (count) {
        say_list(p, list);
        say(p, ".");
    }
    json_object_put(list);
}

static void answer_single_variant(struct parse *p)
{
    size_t n = json_object_array_length(p->c->flags), found = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *flag = json_object_array_get_idx(p->c->flags, i), *served;
        if (!json_object_object_get_ex(flag, "served", &served) ||
            !json_object_is_type(served, json_type_object))
            continue;
        json_object_object_foreach(served, env, variants)
        {
            if (json_object_array_length(variants) != 1)
                continue;
            if (found++ == 0)
                say(p, "In the last %d days, ", AGENT_SERVED_DAYS);
            else
                say(p, "; ");
            say(p, "%s served only %s in %s", agent_flag_key(flag),
                json_object_get_string(json_object_array_get_idx(variants, 0)), env);
        }
    }
    if (found)
        say(p, ". Such flags may be ready to clean up.");
    else
        say(p,
            "No flag served a single variant to everyone in the last %d days (flags never "
            "evaluated are not counted: ask \"which flags are unused?\").",
            AGENT_SERVED_DAYS);
}

static void intent_usage(struct parse *p)
{
    long days = days_in_text(&p->tx);
    static const char *const single[] = {"one", "single", "same", "only", NULL};
    if (has(&p->tx, "variant") && has_any(&p->tx, single))
        answer_single_variant(p);
    else if (days >= 0)
        answer_unused(p, days);
    else if (has(&p->tx, "stale") || has(&p->tx, "dead"))
        answer_unused(p, 30);
    else if (has(&p->tx, "unused") || has(&p->tx, "never"))
        answer_unused(p, -1);
    else
        say(p, "I can answer: which flags are unused, which flags were not evaluated for N "
               "days, and which flags serve one variant to everyone.");
}

/* Context words: "user ID" / "targetingKey ID" and ATTRIBUTE=VALUE pairs. */
static struct json_object *context_from_words(const struct text *tx)
{
    struct json_object *ctx = json_object_new_object();
    for (size_t i = 0; i < tx->n; i++) {
        const char *eq = strchr(tx->w[i].orig, '=');
        if (eq != NULL && eq != tx->w[i].orig && eq[1] != '\0') {
            char name[VALIDATE_ATTRIBUTE_MAX + 1];
            snprintf(name, sizeof name, "%.*s", (int)(eq - tx->w[i].orig), tx->w[i].orig);
            if (attribute_ok(name))
                json_object_object_add(ctx, name, json_object_new_string(eq + 1));
            continue;
        }
        bool user = strcmp(tx->w[i].low, "user") == 0 ||
                    strcmp(tx->w[i].low, "targetingkey") == 0 ||
                    (strcmp(tx->w[i].low, "does") == 0 && i + 1 < tx->n &&
                     strcmp(tx->w[i + 1].low, "user") != 0);
        if (user && i + 1 < tx->n && !is_grammar(tx->w[i + 1].low))
            json_object_object_add(ctx, "targetingKey", json_object_new_string(tx->w[i + 1].orig));
    }
    if (json_object_object_length(ctx) == 0) {
        json_object_put(ctx);
        return NULL;
    }
    return ctx;
}

static void intent_explain(struct parse *p)
{
    struct json_object *flag = flag_slot(p);
    if (flag == NULL)
        return;
    const char *env = env_slot(p);
    if (env == NULL)
        return;
    struct json_object *ctx = p->tx.json ? json_object_get(p->tx.json) : context_from_words(&p->tx);
    if (ctx == NULL) {
        say(p,
            "For which context? Say e.g. \"what does user user-42 get for %s in %s\", add "
            "attributes as country=NL, or give the context as a JSON object.",
            agent_flag_key(flag), env);
        return;
    }
    p->out->explain = true;
    snprintf(p->out->explain_flag, sizeof p->out->explain_flag, "%s", agent_flag_key(flag));
    snprintf(p->out->explain_env, sizeof p->out->explain_env, "%s", env);
    p->out->explain_context = ctx;
}

static void say_help(struct parse *p)
{
    say(p, "I understand: \"create a boolean|string|number|json flag KEY [with variants A, B]\", "
           "\"enable|disable FLAG in ENV\", \"set the default of FLAG to VARIANT in ENV\", "
           "\"roll out FLAG to N%% in ENV [by ATTRIBUTE]\", \"serve VARIANT of FLAG to "
           "ATTRIBUTE V1 and V2 in ENV\", \"archive|restore FLAG\", \"create a segment KEY for "
           "ATTRIBUTE V1 and V2\", \"which flags are unused?\", \"which flags were not evaluated "
           "for N days?\", \"which flags serve one variant to everyone?\" and \"what does user "
           "ID get for FLAG in ENV?\". I only propose changes; nothing happens until you execute "
           "one.");
}

/* ---- status questions ---- */

/* "is X on in production?": read from the catalogue, proposes nothing. */
static void intent_status(struct parse *p)
{
    struct json_object *flag = flag_slot(p), *enabled;
    if (flag == NULL)
        return;
    if (agent_flag_archived(flag))
        say(p, "The flag %s is archived (it still evaluates as configured). ",
            agent_flag_key(flag));
    bool any_env = false;
    for (size_t i = 0; i < p->tx.n && !any_env; i++)
        any_env = agent_catalog_has_env(p->c, p->tx.w[i].low) ||
                  strcmp(p->tx.w[i].low, "everywhere") == 0;
    struct json_object *envs = any_env ? env_list_slot(p) : json_object_get(p->c->environments);
    if (envs == NULL)
        return;
    if (!json_object_object_get_ex(flag, "enabled", &enabled))
        enabled = NULL;
    size_t n = json_object_array_length(envs);
    say(p, "%s is ", agent_flag_key(flag));
    for (size_t i = 0; i < n; i++) {
        struct json_object *on = NULL;
        if (enabled != NULL)
            json_object_object_get_ex(enabled, env_at(envs, i), &on);
        say(p, "%s%s in %s",
            i == 0       ? ""
            : i + 1 == n ? " and "
                         : ", ",
            on != NULL && json_object_get_boolean(on) ? "on" : "off", env_at(envs, i));
    }
    say(p, ".");
    json_object_put(envs);
}

/* ---- revisions ---- */

static bool revision_id_ok(const char *s)
{
    size_t len = strlen(s);
    if (len != 36)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* "restore X to revision ID", "revert X to revision ID": one new revision
 * bringing back that targeting. Without an id it asks for one. */
static void intent_revision(struct parse *p)
{
    static const char *const words[] = {"revert",  "undo",  "rollback", "restore",
                                        "return",  "reset", "to",       "revision",
                                        "version", "the",   "please",   NULL};
    use_all(p, words);
    struct json_object *flag = flag_slot(p);
    if (flag == NULL)
        return;
    const char *id = NULL;
    for (size_t i = 0; i < p->tx.n && id == NULL; i++) {
        if (revision_id_ok(p->tx.w[i].low)) {
            id = p->tx.w[i].low;
            use(p, (long)i);
        }
    }
    if (id == NULL) {
        say(p,
            "Which revision of %s should I restore? Its history lists them with their ids "
            "(GET /v1/orgs/{org}/flags/%s/revisions); say \"restore %s to revision ID\".",
            agent_flag_key(flag), agent_flag_key(flag), agent_flag_key(flag));
        return;
    }
    struct json_object *input = json_object_new_object();
    json_object_object_add(input, "flag", json_object_new_string(agent_flag_key(flag)));
    json_object_object_add(input, "revision", json_object_new_string(id));
    char summary[200];
    snprintf(summary, sizeof summary,
             "restore the targeting of the flag %s as it was after revision %s (a new revision)",
             agent_flag_key(flag), id);
    propose(p, "restore_revision", input, summary);
}

/* ---- when ---- */

static int64_t catalog_now_us(const struct agent_catalog *c)
{
    struct json_object *now;
    if (!json_object_object_get_ex(c->root, "now", &now))
        return 0;
    return json_object_get_int64(now) * 1000000;
}

/* "14:00", "9:30", "9", "9am", "9pm" (with am/pm as its own next word
 * too) as minutes after midnight, or -1. */
static int clock_minutes(const struct text *tx, size_t i, size_t *len)
{
    const char *s = tx->w[i].low;
    char *end;
    long hours = strtol(s, &end, 10), minutes = 0;
    if (end == s || hours < 0 || hours > 23)
        return -1;
    if (*end == ':') {
        const char *m = end + 1;
        minutes = strtol(m, &end, 10);
        if (end != m + 2 || minutes > 59)
            return -1;
    }
    const char *suffix = end;
    *len = 1;
    if (*suffix == '\0' && i + 1 < tx->n &&
        (strcmp(tx->w[i + 1].low, "am") == 0 || strcmp(tx->w[i + 1].low, "pm") == 0 ||
         strcmp(tx->w[i + 1].low, "utc") == 0)) {
        suffix = tx->w[i + 1].low;
        *len = 2;
    }
    if (strcmp(suffix, "pm") == 0 && hours < 12)
        hours += 12;
    else if (strcmp(suffix, "am") == 0 && hours == 12)
        hours = 0;
    else if (*suffix != '\0' && strcmp(suffix, "am") != 0 && strcmp(suffix, "pm") != 0 &&
             strcmp(suffix, "utc") != 0 && strcmp(suffix, "z") != 0)
        return -1;
    return (int)(hours * 60 + minutes);
}

static void set_at(struct parse *p, int64_t us)
{
    isotime_format(us, p->at);
    p->when = WHEN_AT;
}

/* "in N minutes|hours|days" at word i. */
static bool when_in(struct parse *p, size_t i, int64_t now)
{
    if (strcmp(p->tx.w[i].low, "in") != 0 || i + 2 >= p->tx.n)
        return false;
    char *end;
    long n = strtol(p->tx.w[i + 1].low, &end, 10);
    const char *unit = p->tx.w[i + 2].low;
    int64_t seconds = strncmp(unit, "minute", 6) == 0 ? 60
                      : strncmp(unit, "hour", 4) == 0 ? 3600
                      : strncmp(unit, "day", 3) == 0  ? 86400
                                                      : 0;
    if (*end != '\0' || end == p->tx.w[i + 1].low || n <= 0 || n > 366 * 24 * 60 || seconds == 0)
        return false;
    set_at(p, now + (int64_t)n * seconds * 1000000);
    use(p, (long)i);
    use(p, (long)i + 1);
    use(p, (long)i + 2);
    return true;
}

/* "[tomorrow|today] at CLOCK [tomorrow]" at word i ("at"). */
static bool when_clock(struct parse *p, size_t i, int64_t now)
{
    size_t len;
    int minutes;
    if (strcmp(p->tx.w[i].low, "at") != 0 || i + 1 >= p->tx.n ||
        (minutes = clock_minutes(&p->tx, i + 1, &len)) < 0)
        return false;
    int64_t day_us = 86400LL * 1000000;
    int64_t at = now - now % day_us + (int64_t)minutes * 60 * 1000000;
    long tomorrow = find_word(&p->tx, "tomorrow", 0), today = find_word(&p->tx, "today", 0);
    if (tomorrow >= 0) {
        at += day_us;
        use(p, tomorrow);
    } else if (today >= 0) {
        use(p, today);
    } else if (at <= now + 10 * 1000000) {
        at += day_us; /* the next such time */
    }
    set_at(p, at);
    for (size_t k = i; k <= i + len; k++)
        use(p, (long)k);
    return true;
}

/* An ISO 8601 timestamp at word i (with an optional "at"/"on" before it). */
static bool when_iso(struct parse *p, size_t i)
{
    int64_t us;
    const char *s = p->tx.w[i].orig;
    if (strchr(s, ':') == NULL || strchr(s, '-') == NULL || !isotime_parse(s, strlen(s), &us))
        return false;
    set_at(p, us);
    use(p, (long)i);
    static const char *const before[] = {"at", "on", NULL};
    use_run_back(p, (long)i, before);
    return true;
}

/* Reads when the sentence wants its change: now, at a time, or unclear
 * ("tomorrow" without a time, "next week": the qualifier check then asks). */
static void read_when(struct parse *p)
{
    p->when = WHEN_NOW;
    int64_t now = catalog_now_us(p->c);
    for (size_t i = 0; i < p->tx.n && p->when == WHEN_NOW; i++) {
        if (when_iso(p, i) || (now > 0 && (when_in(p, i, now) || when_clock(p, i, now))))
            break;
    }
    if (p->when == WHEN_AT) {
        int64_t us;
        isotime_parse(p->at, strlen(p->at), &us);
        if (us < now + 10LL * 1000000 || us > now + 366LL * 86400 * 1000000)
            p->when = WHEN_UNCLEAR;
    }
}

/* ---- names ---- */

/* Environment aliases ("prod" for production) where the organization has
 * the long key and not the short one. */
static void resolve_env_aliases(struct parse *p)
{
    for (size_t i = 0; i < p->tx.n; i++) {
        const char *low = p->tx.w[i].low;
        if (agent_catalog_has_env(p->c, low))
            continue;
        for (size_t k = 0; k < agent_env_alias_count; k++) {
            if (strcmp(low, agent_env_aliases[k].alias) == 0 &&
                agent_catalog_has_env(p->c, agent_env_aliases[k].key)) {
                text_replace(&p->tx, i, 1, agent_env_aliases[k].key);
                break;
            }
        }
    }
}

/* The key of the one flag whose key is words i..i+count joined by '-', or
 * whose name is those words (case folded), or NULL. */
static const char *flag_spelled(struct parse *p, size_t i, size_t count)
{
    char dashed[VALIDATE_KEY_MAX + 2] = "", spaced[256] = "";
    for (size_t k = 0; k < count; k++) {
        size_t dl = strlen(dashed), sl = strlen(spaced);
        snprintf(dashed + dl, sizeof dashed - dl, "%s%s", k ? "-" : "", p->tx.w[i + k].low);
        snprintf(spaced + sl, sizeof spaced - sl, "%s%s", k ? " " : "", p->tx.w[i + k].low);
    }
    const char *found = NULL;
    size_t n = json_object_array_length(p->c->flags);
    for (size_t f = 0; f < n; f++) {
        struct json_object *flag = json_object_array_get_idx(p->c->flags, f), *name;
        const char *key = agent_flag_key(flag);
        bool by_name = json_object_object_get_ex(flag, "name", &name) &&
                       strcasecmp(json_object_get_string(name), spaced) == 0;
        if (strcmp(key, dashed) != 0 && !by_name)
            continue;
        if (found != NULL && strcmp(found, key) != 0)
            return NULL; /* ambiguous: leave the words as they are */
        found = key;
    }
    return found;
}

/* A flag named with spaces for dashes ("new checkout") or by its name
 * ("New Checkout"), when exactly one flag is meant, becomes its key. */
static void resolve_flag_names(struct parse *p)
{
    for (size_t i = 0; i < p->tx.n; i++) {
        if (agent_catalog_flag(p->c, p->tx.w[i].low) != NULL)
            continue;
        for (size_t count = 4; count >= 1; count--) {
            if (i + count > p->tx.n || (count == 1 && is_grammar(p->tx.w[i].low)))
                continue;
            const char *key = flag_spelled(p, i, count);
            if (key != NULL) {
                text_replace(&p->tx, i, count, key);
                break;
            }
        }
    }
}

static void resolve_names(struct parse *p)
{
    resolve_env_aliases(p);
    resolve_flag_names(p);
    text_sync_lows(&p->tx);
}

/* ---- dispatch ---- */

static enum agent_intent classify(const struct text *tx)
{
    return agent_phrase_intent(tx->lows, tx->n);
}

static void run_intent(struct parse *p, enum agent_intent intent)
{
    switch (intent) {
    case AGENT_INTENT_REFUSE:
        say(p, "I do not delete or remove anything. To retire a flag, say \"archive FLAG\" "
               "(it keeps evaluating and can be restored); deleting is done through the REST "
               "API by a person.");
        break;
    case AGENT_INTENT_STATUS:
        intent_status(p);
        break;
    case AGENT_INTENT_USAGE:
        intent_usage(p);
        break;
    case AGENT_INTENT_EXPLAIN:
        intent_explain(p);
        break;
    case AGENT_INTENT_REVISION:
        intent_revision(p);
        break;
    case AGENT_INTENT_ARCHIVE:
        intent_archive(p, true);
        break;
    case AGENT_INTENT_RESTORE:
        intent_archive(p, false);
        break;
    case AGENT_INTENT_SEGMENT:
        intent_create_segment(p);
        break;
    case AGENT_INTENT_FLAG:
        intent_create_flag(p);
        break;
    case AGENT_INTENT_ROLLOUT:
        intent_rollout(p);
        break;
    case AGENT_INTENT_DEFAULT:
        intent_default(p);
        break;
    case AGENT_INTENT_RULE:
        intent_rule(p);
        break;
    case AGENT_INTENT_TOGGLE:
        intent_toggle(p);
        break;
    case AGENT_INTENT_NONE:
        say_help(p);
        break;
    }
}

/*
 * After the intent: the proposals stand only when every qualifier of the
 * sentence was read into them. Otherwise they are dropped and the reply
 * asks, naming what could not be applied: never a change broader than
 * asked.
 */
static void settle(struct parse *p)
{
    size_t n = json_object_array_length(p->out->actions);
    long q = n > 0 ? unread_qualifier(p) : -1;
    bool unschedulable = false;
    for (size_t i = 0; i < n && p->when == WHEN_AT; i++) {
        struct json_object *tool;
        json_object_object_get_ex(json_object_array_get_idx(p->out->actions, i), "tool", &tool);
        unschedulable |= strcmp(json_object_get_string(tool), "schedule_change") != 0;
    }
    if (unschedulable) {
        json_object_put(p->out->actions);
        p->out->actions = json_object_new_array();
        say(p, "Only an environment's settings can be scheduled (enable, disable, default "
               "serve, a rollout); this change cannot wait for a time, so I propose nothing. "
               "Ask again when it should happen, or without the time?");
        return;
    }
    if (q < 0 && p->when == WHEN_UNCLEAR && n > 0)
        q = 0;
    if (q < 0) {
        say_proposals(p);
        return;
    }
    json_object_put(p->out->actions);
    p->out->actions = json_object_new_array();
    if (p->when == WHEN_UNCLEAR || agent_phrase_is_vague_time(p->tx.w[q].low))
        say(p, "When exactly? I can schedule a change at a time 10 seconds to 366 days ahead: "
               "say e.g. \"at 2027-01-15T09:00:00Z\", \"tomorrow at 09:00\" or \"in 2 hours\" "
               "(times are UTC). I propose nothing until then.");
    else
        say(p,
            "I can't turn \"%s\" and what follows it into this change, and I won't propose a "
            "change broader than you asked. Who or what should it apply to? Say it as a rule "
            "(\"serve on to country NL in production\"), a percentage (\"roll out to 25%%\"), a "
            "time (\"at 09:00\") or an environment list.",
            p->tx.w[q].orig);
}

static const char *message_field(const struct json_object *messages, size_t i, const char *name)
{
    struct json_object *msg = json_object_array_get_idx(messages, i), *value;
    if (msg == NULL || !json_object_object_get_ex(msg, name, &value))
        return "";
    return json_object_get_string(value);
}

/*
 * The text to parse: the last message, or, when it has no intent and
 * answers the agent's question, the user message before that question
 * followed by it. *merged receives that combined text (caller frees).
 */
static int parse_text(struct parse *p, char **merged)
{
    size_t n = json_object_array_length(p->messages);
    const char *last = message_field(p->messages, n - 1, "content");
    *merged = NULL;
    if (text_init(&p->tx, last, true) != 0)
        return -1;
    resolve_names(p);
    if (classify(&p->tx) != AGENT_INTENT_NONE || n < 3 ||
        strcmp(message_field(p->messages, n - 2, "role"), "assistant") != 0 ||
        strchr(message_field(p->messages, n - 2, "content"), '?') == NULL ||
        strcmp(message_field(p->messages, n - 3, "role"), "user") != 0)
        return 0;
    const char *before = message_field(p->messages, n - 3, "content");
    size_t len = strlen(before) + strlen(last) + 2;
    if ((*merged = malloc(len)) == NULL)
        return -1;
    snprintf(*merged, len, "%s %s", before, last);
    struct text mine = p->tx;
    if (text_init(&p->tx, *merged, true) != 0) {
        p->tx = mine;
        return -1;
    }
    resolve_names(p);
    if (classify(&p->tx) == AGENT_INTENT_NONE) {
        text_free(&p->tx);
        p->tx = mine;
        return 0;
    }
    text_free(&mine);
    return 0;
}

int agent_respond(const struct agent_catalog *c, const struct json_object *messages,
                  struct agent_outcome *out)
{
    memset(out, 0, sizeof *out);
    struct parse p = {.c = c, .messages = messages, .out = out};
    size_t reply_len = 0;
    out->actions = json_object_new_array();
    p.summaries = json_object_new_array();
    p.reply = open_memstream(&out->reply, &reply_len);
    if (out->actions == NULL || p.summaries == NULL || p.reply == NULL) {
        if (p.reply != NULL)
            fclose(p.reply);
        json_object_put(p.summaries);
        agent_outcome_free(out);
        return -1;
    }
    char *merged = NULL;
    int rc = parse_text(&p, &merged);
    if (rc == 0) {
        read_when(&p);
        run_intent(&p, classify(&p.tx));
        settle(&p);
    }
    text_free(&p.tx);
    json_object_put(p.summaries);
    free(merged);
    if (fclose(p.reply) != 0 || rc != 0 || out->reply == NULL) {
        agent_outcome_free(out);
        return -1;
    }
    return 0;
}

void agent_outcome_free(struct agent_outcome *out)
{
    free(out->reply);
    json_object_put(out->actions);
    json_object_put(out->explain_context);
    memset(out, 0, sizeof *out);
}

size_t agent_count_words(const char *text)
{
    size_t words = 0;
    bool in_word = false;
    for (const char *s = text; s && *s; s++) {
        bool space = isspace((unsigned char)*s);
        if (!space && !in_word)
            words++;
        in_word = !space;
    }
    return words;
}
