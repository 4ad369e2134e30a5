/*
 * cond_ops.c - the operator table of the rule language (see cond_ops.h).
 */
#include "eval/cond_ops.h"

#include <string.h>

#define COND_OP_ROW_(id, op_name, value_kind, one, twin)                                           \
    [SNAPSHOT_OP_##id] = {.name = op_name,                                                         \
                          .kind = COND_VALUES_##value_kind,                                        \
                          .single_value = one,                                                     \
                          .positive = SNAPSHOT_OP_##twin},

const struct cond_op cond_ops[SNAPSHOT_OP_COUNT] = {COND_OPS(COND_OP_ROW_, COND_OP_ROW_)};

/* One row per snapshot operator, in its order. */
#define COND_OP_ONE_(id, name, kind, one, twin) +1
_Static_assert(0 COND_OPS(COND_OP_ONE_, COND_OP_ONE_) == SNAPSHOT_OP_COUNT,
               "one row per enum snapshot_op");

enum snapshot_op cond_op_from_name(const char *name)
{
    for (int i = 0; name != NULL && i < SNAPSHOT_OP_COUNT; i++)
        if (strcmp(cond_ops[i].name, name) == 0)
            return (enum snapshot_op)i;
    return SNAPSHOT_OP_COUNT;
}

const char *cond_op_name(enum snapshot_op op)
{
    return (unsigned)op < SNAPSHOT_OP_COUNT ? cond_ops[op].name : "?";
}

bool cond_op_reads_instants(enum snapshot_op op)
{
    return (unsigned)op < SNAPSHOT_OP_COUNT &&
           (cond_ops[op].kind == COND_VALUES_TIMESTAMP || cond_ops[op].kind == COND_VALUES_NONE);
}
