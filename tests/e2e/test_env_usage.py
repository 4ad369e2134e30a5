"""test_env_usage.py - end-to-end tests of GET
/v1/orgs/{org}/environments/{envKey}/usage (doc/api.md): each flag's
evaluations per UTC day over the last seven days in one environment, the
data of the dashboard's seven-day sparklines (one request for the list).

Counts are written straight into usage_counters (the flusher's table) at
chosen hours: today, two days ago, eight days ago (outside the window) and
in another environment; then the answer's days, series and the flags it
leaves out are checked, with roles, other organizations and an unknown
environment.

Run by tests/e2e/run (the class has its own database and ensignd).
"""

import datetime

from flagfixture import FlagTestCase


class EnvUsageTest(FlagTestCase):

    def count(self, key, env, days_ago, n, variant="on"):
        self.database.query(
            "INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count)"
            " SELECT f.id, e.id, %s, date_trunc('hour', now()) - make_interval(days => %s),"
            " %s FROM flags f JOIN orgs o ON o.id = f.org_id"
            " JOIN environments e ON e.org_id = o.id"
            " WHERE o.slug = 'acme' AND f.key = %s AND e.key = %s"
            " ON CONFLICT (flag_id, environment_id, variant_key, hour)"
            " DO UPDATE SET count = usage_counters.count + EXCLUDED.count"
            % ("'%s'" % variant, days_ago, n, "'%s'" % key, "'%s'" % env))

    def week(self, env="production", token="viewer"):
        return self.call("GET", f"/acme/environments/{env}/usage", token)

    def test_days_and_series(self):
        for key in ("busy", "quiet", "idle"):
            self.flag(key)
        self.count("busy", "production", 0, 5)
        self.count("busy", "production", 0, 2, variant="off")
        self.count("busy", "production", 2, 3)
        self.count("busy", "production", 8, 100)   # before the seven days
        self.count("busy", "preview", 0, 40)       # another environment
        self.count("quiet", "production", 6, 1)    # the first of the seven days
        self.count("idle", "preview", 1, 9)        # counted elsewhere only
        body = self.assertStatus(self.week(), 200)
        self.assertEqual(set(body), {"environment", "days", "flags"})
        self.assertEqual(body["environment"], "production")
        today = datetime.datetime.now(datetime.timezone.utc).date()
        self.assertEqual(body["days"][-1], today.isoformat())
        self.assertEqual(body["days"],
                         [(today - datetime.timedelta(days=6 - i)).isoformat() for i in range(7)])
        series = {f["key"]: f["series"] for f in body["flags"]}
        self.assertEqual(set(series), {"busy", "quiet"})
        # hours near midnight may fall on the day before: compare sums per window
        self.assertEqual(sum(series["busy"]), 10)
        self.assertEqual(series["busy"][-1] + series["busy"][-2], 7)
        self.assertEqual(sum(series["quiet"]), 1)
        self.assertEqual(len(series["busy"]), 7)
        preview = self.assertStatus(self.week("preview"), 200)
        self.assertEqual({f["key"]: sum(f["series"]) for f in preview["flags"]},
                         {"busy": 40, "idle": 9})

    def test_empty_and_errors(self):
        body = self.assertStatus(self.week("development"), 200)
        self.assertEqual(body["flags"], [])
        self.assertEqual(len(body["days"]), 7)
        self.assertStatus(self.week("nowhere"), 404)
        self.assertStatus(self.week(token=None), 401)
        for token in ("outsider", "outsider_org"):
            self.assertStatus(self.week(token=token), 404)
        self.assertStatus(self.week(token="readonly"), 200)
