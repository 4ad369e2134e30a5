/*
 * snapshot_fixture.h - snapshot files for the unit tests that serve them
 * (parts, packs, chunks, the environment evaluation): an organization's
 * part with flags of two variants, the index of the two organizations the
 * parts and chunks suites name, written into a scratch directory
 * (scratch_dir.h). Every call fails the test when the builder or the file
 * system refuses.
 */
#ifndef ENSIGN_SNAPSHOT_FIXTURE_H
#define ENSIGN_SNAPSHOT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "eval/snapshot_build.h"

/* The two organizations of snapshot_fixture_two_orgs: one environment
 * ("production") and one SDK key digest each. */
#define ORG1 "10000000-0000-0000-0000-000000000001"
#define ORG2 "20000000-0000-0000-0000-000000000002"
#define ENV1 "e1000000-0000-0000-0000-000000000001"
#define ENV2 "e2000000-0000-0000-0000-000000000002"
#define KEY1 "aa00000000000000000000000000000000000000000000000000000000000001"
#define KEY2 "bb00000000000000000000000000000000000000000000000000000000000002"

/* A builder at generation holding org's environment env, "production". */
struct snapshot_builder *snapshot_fixture_builder(uint64_t generation, const char *org,
                                                  const char *env);

/* Adds the string flag key to env: variants "a" ("A") and "b" ("B"), off
 * variant "b", enabled or not, serving serve_json. */
void snapshot_fixture_add_flag(struct snapshot_builder *b, const char *env, const char *key,
                               bool enabled, const char *serve_json);

/* The same flag, enabled, serving variant ("a" or "b"). */
void snapshot_fixture_add_flag_serving(struct snapshot_builder *b, const char *env, const char *key,
                                       const char *variant);

/* The index builder at generation with ORG1/ENV1/KEY1 and ORG2/ENV2/KEY2,
 * naming no parts yet. */
struct snapshot_builder *snapshot_fixture_two_orgs(uint64_t generation);

/* Names the file dir/name, one part that is the whole file (a pack of one
 * extent), as org's part at generation in b. */
void snapshot_fixture_add_file_part(struct snapshot_builder *b, const char *dir, const char *org,
                                    const char *name, uint64_t generation);

/* Writes b to dir/name and frees it; returns the file's length. */
uint64_t snapshot_fixture_write(struct snapshot_builder *b, const char *dir, const char *name);

/* The length of dir/name, UINT64_MAX when there is none. */
uint64_t snapshot_fixture_size(const char *dir, const char *name);

/* Flips every bit of the byte at offset in dir/name (damage a checksum finds). */
void snapshot_fixture_flip_byte(const char *dir, const char *name, uint64_t offset);

#endif
