/*
 * agent_parse.h - the built-in agent: a deterministic intent parser over
 * the product's own vocabulary, turning a conversation into a reply and the
 * proposed actions (never broader than asked). Pure: no database, no I/O, no clock (the
 * catalogue carries what it needs).
 *
 * Intents (doc/choices.md has the table of accepted phrasings): create a
 * flag; enable or disable a flag in environments (several actions, one per
 * environment), now or at a time (schedule_change); set the default serve;
 * roll out a percentage (optionally bucketed by an attribute); add a rule;
 * archive; restore; create a segment; the usage questions (unused, not
 * evaluated for N days, one variant to everyone); explain what a context
 * gets (evaluated by the caller, see `explain`); is a flag on (status);
 * restore a revision. Each write becomes an action {tool, input, summary}
 * whose input is exactly the REST operation's (agent_tools.h). Unknown flags, environments,
 * variants and segments are named in the reply with the closest existing key; missing or ambiguous
 * parts get a question back; nothing is guessed. A JSON object inside the text is only ever read as
 * an evaluation context.
 *
 * Conversation: the last message is the user's. When it names no flag,
 * the flag of the latest earlier user message that named exactly one
 * existing flag is used (and the reply says so). When it has no intent and
 * the previous message was the agent's question, it is read together with
 * the user message before that question (answering "which flag?").
 *
 * Called by agent.c; tested by tests/unit/test_agent_parse.c and, sentence
 * by sentence, tests/unit/test_agent_sentences.c.
 */
#ifndef ENSIGN_AGENT_PARSE_H
#define ENSIGN_AGENT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "agent/agent_catalog.h"

struct agent_outcome {
    char *reply;                 /* malloc'd text */
    struct json_object *actions; /* array of {tool, input, summary}; owned */
    /* Explain: the caller evaluates flag in env for context and appends
     * the evaluator's answer to reply. */
    bool explain;
    char explain_flag[64];
    char explain_env[64];
    struct json_object *explain_context; /* owned object */
};

/*
 * Answers messages (a non-empty array of {role, content} objects, roles
 * "user" or "assistant", the last "user") against the catalogue. Fills
 * *out (free with agent_outcome_free). Returns 0, or -1 when out of memory.
 */
int agent_respond(const struct agent_catalog *c, const struct json_object *messages,
                  struct agent_outcome *out);

void agent_outcome_free(struct agent_outcome *out);

/* Whitespace-separated words of text: the built-in agent's usage unit. */
size_t agent_count_words(const char *text);

#endif
