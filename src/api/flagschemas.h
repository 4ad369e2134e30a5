/*
 * flagschemas.h - JSON Schemas (text) of the flag management routes'
 * request and success bodies, for the route table and /openapi.json.
 * See flagschemas.c; each text is one JSON object.
 */
#ifndef ENSIGN_FLAGSCHEMAS_H
#define ENSIGN_FLAGSCHEMAS_H

extern const char flagschema_flag_create[];
extern const char flagschema_flag_update[];
extern const char flagschema_flag_answer[];   /* {flag} */
extern const char flagschema_flag_list[];     /* {flags: [list item]} */
extern const char flagschema_flag_detail[];   /* {flag, revisions, variants, environments} */
extern const char flagschema_revision_list[]; /* {revisions}, a page */
extern const char flagschema_flag_usage[];    /* {usage} */
extern const char flagschema_ack[];           /* {ok} */
extern const char flagschema_variant_create[];
extern const char flagschema_variant_update[];
extern const char flagschema_variant_answer[];   /* {variant} */
extern const char flagschema_environment_list[]; /* {environments} */
extern const char flagschema_configure[];        /* PATCH .../environments/{envKey} */
extern const char flagschema_rule_create[];
extern const char flagschema_rule_update[];
extern const char flagschema_rule_replace[];
extern const char flagschema_rule_reorder[];
extern const char flagschema_rule_answer[];        /* {rule} */
extern const char flagschema_rule_list[];          /* {rules} */
extern const char flagschema_revision_answer[];    /* {revision} with its state */
extern const char flagschema_copy[];               /* POST .../environments/{envKey}/copy */
extern const char flagschema_environment_answer[]; /* {environment}: a flag's configuration */

#endif
