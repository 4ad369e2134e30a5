/*
 * test_agent_sentences.c - the built-in agent's phrasings as data: every
 * sentence of tests/unit/agent_sentences.txt, read against one fixed
 * catalogue, must produce exactly the actions (or the question, or
 * nothing) written under it.
 *
 * The file's lines:
 *   # ...            a comment
 *   > SENTENCE       a one-message conversation
 *   = TOOL INPUT     an expected action, in order (INPUT compact JSON)
 *   ?                no action, and the reply asks (holds '?')
 *   -                no action
 *   ~ TEXT           the reply holds TEXT (with any of the above)
 * With AGENT_SENTENCES_DUMP=1 in the environment the suite prints what
 * the parser gives for every sentence, in the same format (to write new
 * cases), and fails nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_catalog.h"
#include "agent/agent_parse.h"
#include "suites.h"

/* now: 2026-11-27T12:00:00Z */
static const char sentences_catalog[] =
    "{\"now\":1795780800,"
    "\"environments\":[\"production\",\"preview\",\"development\",\"staging\"],"
    "\"segments\":[\"beta-testers\",\"internal-staff\"],"
    "\"flags\":["
    "{\"key\":\"new-checkout\",\"name\":\"New checkout\",\"type\":\"boolean\","
    "\"archived\":false,\"variants\":[\"on\",\"off\"],\"total\":10,\"idleDays\":0,"
    "\"served\":{\"production\":[\"on\"]},\"enabled\":{\"production\":true,\"preview\":false,"
    "\"development\":true,\"staging\":false}},"
    "{\"key\":\"old-banner\",\"name\":\"Old banner\",\"type\":\"boolean\",\"archived\":false,"
    "\"variants\":[\"on\",\"off\"],\"total\":5,\"idleDays\":40,\"served\":{},"
    "\"enabled\":{\"production\":false}},"
    "{\"key\":\"color\",\"name\":\"Button color\",\"type\":\"string\",\"archived\":false,"
    "\"variants\":[\"red\",\"green\",\"blue\"],\"total\":0,\"idleDays\":null,\"served\":{},"
    "\"enabled\":{}},"
    "{\"key\":\"dark-mode\",\"name\":\"Dark mode\",\"type\":\"boolean\",\"archived\":false,"
    "\"variants\":[\"on\",\"off\"],\"total\":3,\"idleDays\":2,\"served\":{},"
    "\"enabled\":{\"preview\":true}},"
    "{\"key\":\"search-v2\",\"name\":\"Search v2\",\"type\":\"boolean\",\"archived\":false,"
    "\"variants\":[\"on\",\"off\"],\"total\":0,\"idleDays\":null,\"served\":{},\"enabled\":{}},"
    "{\"key\":\"gone-flag\",\"name\":\"Gone\",\"type\":\"boolean\",\"archived\":true,"
    "\"variants\":[\"on\",\"off\"],\"total\":0,\"idleDays\":null,\"served\":{},\"enabled\":{}}"
    "]}";

struct expectation {
    char actions[8192]; /* "TOOL INPUT\n" per action */
    bool asks, nothing;
    char holds[4][256];
    int nholds;
};

static FILE *open_sentences(void)
{
    const char *top = getenv("top_srcdir");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/unit/agent_sentences.txt", top && *top ? top : ".");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    return f;
}

static void actual_actions(const struct agent_outcome *out, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < json_object_array_length(out->actions); i++) {
        struct json_object *action = json_object_array_get_idx(out->actions, i), *tool, *input;
        json_object_object_get_ex(action, "tool", &tool);
        json_object_object_get_ex(action, "input", &input);
        int n = snprintf(buf + used, len - used, "%s %s\n", json_object_get_string(tool),
                         json_object_to_json_string_ext(input, JSON_C_TO_STRING_PLAIN));
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static void respond(const struct agent_catalog *c, const char *sentence, struct agent_outcome *out)
{
    struct json_object *messages = json_object_new_array(), *msg = json_object_new_object();
    json_object_object_add(msg, "role", json_object_new_string("user"));
    json_object_object_add(msg, "content", json_object_new_string(sentence));
    json_object_array_add(messages, msg);
    ck_assert_int_eq(agent_respond(c, messages, out), 0);
    json_object_put(messages);
}

/* Checks one sentence; returns the number of failures (printed). */
static int check_one(const struct agent_catalog *c, int line, const char *sentence,
                     const struct expectation *want, bool dump)
{
    struct agent_outcome out;
    respond(c, sentence, &out);
    char got[8192];
    actual_actions(&out, got, sizeof got);
    int failures = 0;
    if (dump) {
        printf("> %s\n", sentence);
        if (got[0] != '\0') {
            for (char *s = got; *s;) {
                char *nl = strchr(s, '\n');
                printf("= %.*s\n", (int)(nl - s), s);
                s = nl + 1;
            }
        } else {
            printf("%s\n", strchr(out.reply, '?') ? "?" : "-");
        }
        printf("# reply: %s\n\n", out.reply);
    } else {
        bool ok = strcmp(got, want->actions) == 0 &&
                  (!want->asks || (got[0] == '\0' && strchr(out.reply, '?') != NULL)) &&
                  (!want->nothing || got[0] == '\0');
        for (int i = 0; i < want->nholds; i++)
            ok = ok && strstr(out.reply, want->holds[i]) != NULL;
        if (!ok) {
            fprintf(stderr,
                    "agent_sentences.txt:%d: \"%s\"\n  want: %s%s%s\n  got:  %s\n  reply: %s\n",
                    line, sentence, want->actions, want->asks ? "(a question)" : "",
                    want->nothing ? "(nothing)" : "", got[0] ? got : "(nothing)\n", out.reply);
            failures++;
        }
    }
    agent_outcome_free(&out);
    return failures;
}

START_TEST(test_sentence_file)
{
    struct agent_catalog c;
    ck_assert_int_eq(agent_catalog_parse(&c, sentences_catalog), 0);
    bool dump = getenv("AGENT_SENTENCES_DUMP") != NULL;
    FILE *f = open_sentences();
    char line[4096], sentence[4096] = "";
    int lineno = 0, sentence_line = 0, failures = 0, count = 0, quiet = 0;
    struct expectation want;
    memset(&want, 0, sizeof want);
    for (bool more = true; more;) {
        more = fgets(line, sizeof line, f) != NULL;
        lineno += more;
        line[strcspn(line, "\n")] = '\0';
        if (more && (line[0] == '#' || line[0] == '\0'))
            continue;
        if ((!more || line[0] == '>') && sentence[0] != '\0') {
            ck_assert_msg(dump || want.actions[0] || want.asks || want.nothing,
                          "agent_sentences.txt:%d: no expectation", sentence_line);
            failures += check_one(&c, sentence_line, sentence, &want, dump);
            count++;
            quiet += want.actions[0] == '\0';
            sentence[0] = '\0';
            memset(&want, 0, sizeof want);
        }
        if (!more)
            break;
        const char *rest = line[1] == ' ' ? line + 2 : line + 1;
        switch (line[0]) {
        case '>':
            snprintf(sentence, sizeof sentence, "%s", rest);
            sentence_line = lineno;
            break;
        case '=': {
            size_t used = strlen(want.actions);
            snprintf(want.actions + used, sizeof want.actions - used, "%s\n", rest);
            break;
        }
        case '?':
            want.asks = true;
            break;
        case '-':
            want.nothing = true;
            break;
        case '~':
            ck_assert(want.nholds < 4);
            snprintf(want.holds[want.nholds++], sizeof want.holds[0], "%.255s", rest);
            break;
        default:
            ck_abort_msg("agent_sentences.txt:%d: unknown line", lineno);
        }
    }
    fclose(f);
    agent_catalog_free(&c);
    if (!dump) {
        ck_assert_msg(count >= 150, "only %d sentences", count);
        ck_assert_msg(quiet >= 30, "only %d sentences that propose nothing", quiet);
        ck_assert_msg(failures == 0, "%d of %d sentences failed (see above)", failures, count);
    }
}
END_TEST

Suite *suite_agent_sentences(void)
{
    Suite *s = suite_create("agent_sentences");
    TCase *tc = tcase_create("sentences");
    tcase_add_test(tc, test_sentence_file);
    suite_add_tcase(s, tc);
    return s;
}
