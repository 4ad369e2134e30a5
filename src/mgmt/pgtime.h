/*
 * pgtime.h - the /v1 timestamp form ("2025-01-31T12:00:00.123Z",
 * as sql/0002's ensign_iso() writes it) from PostgreSQL's text of a
 * timestamptz, so that statements return plain timestamptz columns and the
 * formatting runs in C rather than as to_char in every row.
 *
 * The text is what a session of db.c gets: DateStyle ISO and TimeZone UTC,
 * "YYYY-MM-DD HH:MM:SS[.f{1,6}]+00" (the year may have more than four
 * digits). Milliseconds are the first three fraction digits, as to_char's
 * MS truncates; no calendar arithmetic happens, so every year stays as
 * PostgreSQL wrote it. Pure function, no allocation.
 *
 * Called by jsonout.c.
 */
#ifndef ENSIGN_PGTIME_H
#define ENSIGN_PGTIME_H

#include <stddef.h>

/* A six-digit year (timestamptz ends in 294276) and "-MM-DDTHH:MM:SS.mmmZ", NUL. */
#define PGTIME_ISO_SIZE 32

/*
 * Writes the API form of text (len bytes) into out and returns its length,
 * or returns 0 when text has another shape (infinity, BC, another zone):
 * the caller then writes null, as ensign_iso() answers for infinity.
 */
size_t pgtime_iso(const char *text, size_t len, char out[PGTIME_ISO_SIZE]);

#endif
