/*
 * test_rowindex.c - the hash index over a result column (src/db/rowindex.c)
 * on results made in memory (PQmakeEmptyPGresult, no server): every value
 * found, its rows chained in row order, absent values and an empty result
 * answered -1, and values of every length around the eight-byte steps of
 * the hash.
 */
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "db/rowindex.h"
#include "suites.h"

/* A one-column text result of count rows, row i holding values[i]. */
static PGresult *result_of(const char *const *values, int count)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc column = {.name = "v", .format = 0, .typid = 25, .typlen = -1, .atttypmod = -1};
    ck_assert_ptr_nonnull(res);
    ck_assert_int_eq(PQsetResultAttrs(res, 1, &column), 1);
    for (int row = 0; row < count; row++)
        ck_assert_int_eq(PQsetvalue(res, row, 0, (char *)values[row], (int)strlen(values[row])), 1);
    return res;
}

START_TEST(equal_values_are_chained_in_row_order)
{
    const char *const values[] = {"b", "a", "b", "c", "b"};
    PGresult *res = result_of(values, 5);
    struct rowindex ri;
    ck_assert_int_eq(rowindex_build(&ri, res, 0), 0);
    int row = rowindex_first(&ri, "b");
    ck_assert_int_eq(row, 0);
    ck_assert_int_eq(row = rowindex_next(&ri, row), 2);
    ck_assert_int_eq(row = rowindex_next(&ri, row), 4);
    ck_assert_int_eq(rowindex_next(&ri, row), -1);
    ck_assert_int_eq(rowindex_first(&ri, "a"), 1);
    ck_assert_int_eq(rowindex_next(&ri, 1), -1);
    ck_assert_int_eq(rowindex_first(&ri, "c"), 3);
    ck_assert_int_eq(rowindex_first(&ri, "d"), -1);
    ck_assert_int_eq(rowindex_first(&ri, ""), -1);
    rowindex_free(&ri);
    PQclear(res);
}
END_TEST

START_TEST(an_empty_result_finds_nothing)
{
    PGresult *res = result_of(NULL, 0);
    struct rowindex ri;
    ck_assert_int_eq(rowindex_build(&ri, res, 0), 0);
    ck_assert_int_eq(rowindex_first(&ri, "a"), -1);
    rowindex_free(&ri);
    PQclear(res);
}
END_TEST

/* Many uuid-like values (36 characters) and prefixes of every length from 0
 * to 40: each found at its own row, none confused with another. */
START_TEST(many_values_of_every_length_are_found)
{
    enum { UUIDS = 5000, LENGTHS = 41, ROWS = UUIDS + LENGTHS };
    static char text[ROWS][48];
    static const char *values[ROWS];
    for (int i = 0; i < UUIDS; i++) {
        snprintf(text[i], sizeof text[i], "%08x-0000-4000-8000-%012x", (unsigned)i * 2654435761u,
                 (unsigned)i);
        values[i] = text[i];
    }
    for (int n = 0; n < LENGTHS; n++) {
        memset(text[UUIDS + n], 'x', (size_t)n);
        text[UUIDS + n][n] = '\0';
        values[UUIDS + n] = text[UUIDS + n];
    }
    PGresult *res = result_of(values, ROWS);
    struct rowindex ri;
    ck_assert_int_eq(rowindex_build(&ri, res, 0), 0);
    for (int row = 0; row < ROWS; row++) {
        ck_assert_int_eq(rowindex_first(&ri, values[row]), row);
        ck_assert_int_eq(rowindex_next(&ri, row), -1);
    }
    ck_assert_int_eq(rowindex_first(&ri, "00000000-0000-4000-8000-00000000000z"), -1);
    ck_assert_int_eq(rowindex_first(&ri, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), -1);
    rowindex_free(&ri);
    PQclear(res);
}
END_TEST

Suite *suite_rowindex(void)
{
    Suite *s = suite_create("rowindex");
    TCase *tc = tcase_create("index");
    tcase_add_test(tc, equal_values_are_chained_in_row_order);
    tcase_add_test(tc, an_empty_result_finds_nothing);
    tcase_add_test(tc, many_values_of_every_length_are_found);
    suite_add_tcase(s, tc);
    return s;
}
