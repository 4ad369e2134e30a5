/*
 * agent_phrases.h - the built-in agent's vocabulary as data: which words
 * name which intent, the synonyms the parser folds before it reads a
 * sentence, and the qualifier words that must never be dropped.
 *
 * The tables live in agent_phrases.c; the engine here is small on
 * purpose: a sentence's intent is the first row of the intent table whose
 * every requirement is met and whose exclusions are absent. A requirement
 * is a list of alternatives separated by '|'; an alternative is one word,
 * two words in a row ("roll out"), "^word" (the sentence's first word), or
 * "#percent" (a number with '%' or followed by "percent"). New phrasings
 * are new rows or alternatives, not new code; tests/unit/agent_sentences.txt
 * holds the sentences each must turn into.
 *
 * Pure: no catalogue, no I/O. Called by agent_parse.c.
 */
#ifndef ENSIGN_AGENT_PHRASES_H
#define ENSIGN_AGENT_PHRASES_H

#include <stdbool.h>
#include <stddef.h>

enum agent_intent {
    AGENT_INTENT_NONE,
    AGENT_INTENT_REFUSE,
    AGENT_INTENT_STATUS,
    AGENT_INTENT_USAGE,
    AGENT_INTENT_EXPLAIN,
    AGENT_INTENT_REVISION,
    AGENT_INTENT_ARCHIVE,
    AGENT_INTENT_RESTORE,
    AGENT_INTENT_SEGMENT,
    AGENT_INTENT_FLAG,
    AGENT_INTENT_ROLLOUT,
    AGENT_INTENT_DEFAULT,
    AGENT_INTENT_RULE,
    AGENT_INTENT_TOGGLE
};

/* The intent of a sentence given as its lowercased words. */
enum agent_intent agent_phrase_intent(const char *const *words, size_t n);

/* True when words[i] (and, for two-word alternatives, words[i + 1])
 * matches one alternative of alts; *len receives the words it covers. */
bool agent_phrase_match_at(const char *alts, const char *const *words, size_t n, size_t i,
                           size_t *len);

/* A multi-word phrase folded into one word before parsing ("all
 * environments" -> "everywhere", "roll back" -> "revert"). */
struct agent_fold {
    const char *from[3]; /* consecutive lowercased words, NULL-terminated */
    const char *to;
};
extern const struct agent_fold agent_folds[];
extern const size_t agent_fold_count;

/* An environment's short name and the key it stands for, used only when
 * the organization has the long key and not the short one. */
struct agent_alias {
    const char *alias, *key;
};
extern const struct agent_alias agent_env_aliases[];
extern const size_t agent_env_alias_count;

/* True when low, left unread by the parser in a sentence that proposes a
 * change, means the user asked for something narrower than the change (an
 * audience, a time, a share, a condition): the agent then asks. Any word
 * holding a digit counts too. */
bool agent_phrase_is_qualifier(const char *low);

/* True when low turns a flag on (enable, activate, on) or off. */
bool agent_phrase_is_on_word(const char *low);
bool agent_phrase_is_off_word(const char *low);

/* True when low names a time the parser does not read (a weekday, a month,
 * "tonight", "later"): a schedule then asks for an exact time. */
bool agent_phrase_is_vague_time(const char *low);

#endif
