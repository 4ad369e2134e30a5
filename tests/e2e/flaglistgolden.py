"""flaglistgolden.py - a fixed organization whose flag list body was
recorded before the list learned to page (tests/e2e/flaglist_golden_*.json),
so that test_flag_pages.py can prove the list without parameters answers
byte for byte as it did.

make_golden_flags() creates the flags through the API (every trigger runs),
then pins by SQL what would differ from run to run: timestamps, usage and
rolled-out times. normalize() puts placeholders in place of the ids the
database chose (a flag's id, a user's id). Recording again (only when the
list's body is meant to change): ENSIGN_RECORD_GOLDEN=1 makes the test write
the file instead of comparing.

Not a test module itself (no test_ prefix).
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def golden_path(name):
    """The recorded body name: list, archived or stale."""
    return os.path.join(HERE, f"flaglist_golden_{name}.json")

ODD_TEXT = 'quote " back \\ slash, tab\t, newline\n, é, 💡, <b>&</b>'


def make_golden_flags(case):
    """Flags of acme for the golden list, made by case (a FlagTestCase)."""
    case.flag("alpha", description="The first", tags=["checkout", "web"])
    case.string_flag("beta-color", "Red", "blue")
    case.flag("gamma-number", type="number", variants=[{"value": 1.5}, {"value": 42}])
    case.flag("delta-json", type="json",
              variants=[{"value": {"a": [1, "x"], "b": None}}, {"value": [True]}])
    case.flag("epsilon", description=ODD_TEXT, tags=["odd", ODD_TEXT[:40]])
    case.flag("zeta-permanent")
    case.flag("eta-archived")
    case.flag("theta-unused")
    case.flag("iota-rolled")
    patch = {"name": "Zeta, the permanent one", "permanent": True,
             "maintainerUserId": case.user_ids["member"]}
    case.assertStatus(case.call("PATCH", "/acme/flags/zeta-permanent", "member", body=patch), 200)
    case.assertStatus(case.call("PATCH", "/acme/flags/epsilon", "member",
                                body={"name": ODD_TEXT[:60]}), 200)
    case.assertStatus(case.configure("alpha", {"enabled": True}), 200)
    case.assertStatus(case.configure("alpha", {"enabled": True}, env="preview"), 200)
    case.assertStatus(case.configure("iota-rolled", {"enabled": True}, env="development"), 200)
    case.archive("eta-archived")
    pin = [
        "UPDATE flags SET created_at = timestamptz '2020-01-02 03:04:05.678+00'"
        " + (ascii(key) - 97) * interval '1 day',"
        " updated_at = timestamptz '2020-03-04 05:06:07.891+00',"
        " archived_at = CASE WHEN archived_at IS NULL THEN NULL"
        " ELSE timestamptz '2020-04-05 06:07:08.912+00' END,"
        " rolled_out_since = CASE WHEN key = 'iota-rolled'"
        " THEN timestamptz '2020-05-06 07:08:09+00' END",
        "UPDATE flag_environments SET rolled_out_since = NULL",
        "INSERT INTO flag_usage_totals (flag_id, total, last_seen_at)"
        " SELECT id, 1234567, timestamptz '2020-06-07 08:09:10.123+00' FROM flags"
        " WHERE key IN ('alpha', 'beta-color')",
        "INSERT INTO flag_usage_series (flag_id, newest_hour, counts, counts_text)"
        " SELECT id, timestamptz '2020-06-07 08:00+00', array_fill(7::bigint, ARRAY[24]),"
        " array_to_string(array_fill(7::bigint, ARRAY[24]), ',')"
        " FROM flags WHERE key = 'alpha'",
    ]
    for sql in pin:
        case.database.query(sql)


def normalize(case, body):
    """body (text) with each flag id as @flag:KEY@ and each user id as @user:ROLE@."""
    rows = case.database.query("SELECT f.id || ' ' || f.key FROM flags f JOIN orgs o"
                               " ON o.id = f.org_id WHERE o.slug = 'acme'")
    for line in rows.splitlines():
        flag_id, key = line.split(" ")
        body = body.replace(flag_id, f"@flag:{key}@")
    for role, user_id in case.user_ids.items():
        body = body.replace(user_id, f"@user:{role}@")
    return body
