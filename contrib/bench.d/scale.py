"""scale.py - the client side of contrib/bench part scale (data set:
contrib/bench.d/scale.sql).

    python3 scale.py key N [dev|prd]
        prints the SDK key scale.sql gave organization N (development, or
        production for organizations 1, 2 and 8)
    python3 scale.py check PORT TOKEN ORGS
        checks a sample of the data set through the API of the node on PORT
        (TOKEN: a personal token of the organizations' owner; ORGS: how many
        scale.sql made): evaluations with known SDK keys give the variants
        scale.sql configured, unknown flags and keys are refused, the flag
        detail and list show what was written, and a rule PATCH is served.
        Prints CHECK ok <checks> and exits 0, or the first failure and 1.
    python3 scale.py serves PORT KEY TIMEOUT
        waits until the node on PORT evaluates `moving` with KEY (200);
        prints SERVES <seconds> or exits 1 after TIMEOUT seconds
    python3 scale.py writes WRITE_PORT READ_PORTS TOKEN TARGETS RATE SECONDS
        RATE writes per second for SECONDS through WRITE_PORT, each in an
        organization drawn at random from the TARGETS file (lines
        "slug rule_id dev_key": the development rule of `moving`), each
        setting the rule's condition to `seq lte i` (the rule serves b);
        one reader per port of READ_PORTS (comma-separated) follows the
        writes in order and records when each is first served (variant b for
        {"seq": i}), as propagation.py does for one organization; a write
        not served ENSIGN_SCALE_NEVER_S (10) seconds after the reader's last
        progress counts as never served. Prints per read port
            WRITES <port> <served> <p50 ms> <p99 ms> <max ms> <failed> <never>
                   <write p50 ms> <write p99 ms>
The writer and the readers are propagation.py's (measure). Standard
library only.
"""

import http.client
import json
import os
import sys
import time

import propagation  # the writer and readers of write-to-served latency
from propagation import percentile

# A write not served this long after the last progress counts as never.
NEVER_S = float(os.environ.get("ENSIGN_SCALE_NEVER_S", "10"))


def sdk_key(n, env="dev"):
    body = ("ScalePrd" if env == "prd" else "ScaleDev") + str(n).zfill(6)
    return "svc_sdk_" + body.ljust(43, "x")


def slug(n):
    return f"scale-{n:05d}"


def request(conn, method, path, token=None, body=None):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    try:
        parsed = json.loads(data) if data else None
    except ValueError:
        parsed = None
    return response.status, parsed


def evaluate(conn, key, flag, context=None):
    return request(conn, "POST", f"/ofrep/v1/evaluate/flags/{flag}", key,
                   {"context": {"targetingKey": "scale", **(context or {})}})


# ---- check -------------------------------------------------------------------


class Check:
    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.token = token
        self.count = 0

    def expect(self, what, got, wanted):
        self.count += 1
        if got != wanted:
            raise SystemExit(f"CHECK failed: {what}: got {got!r}, wanted {wanted!r}")

    def variant(self, n, flag, context, wanted_variant, wanted_value, env="dev"):
        status, body = evaluate(self.conn, sdk_key(n, env), flag, context)
        self.expect(f"{slug(n)} {env} {flag} {context} status", status, 200)
        self.expect(f"{slug(n)} {env} {flag} {context}", (body["variant"], body["value"]),
                    (wanted_variant, wanted_value))

    def evaluations(self, orgs):
        sample = sorted({1, 2, 7, 8, orgs // 2, orgs})
        for n in sample:
            self.variant(n, "moving", {}, "a", "value-a")
            self.variant(n, "moving", {"country": "XX"}, "b", "value-b")
            self.variant(n, "flag-000002", {"country": "DE"}, "on", True)
            self.variant(n, "flag-000002", {"country": "NL"}, "off", False)
            self.variant(n, "flag-000019", {"country": "BE"}, "on", True)
        for n in (1, 2, 8):  # production: no rules, the default serve
            self.variant(n, "flag-000001", {"country": "NL"}, "off", False, env="prd")
            self.variant(n, "flag-000002", {"country": "NL"}, "on", True, env="prd")
        status, _ = evaluate(self.conn, sdk_key(8), "flag-000020")  # org 8 has 20 flags
        self.expect("a flag the organization does not have", status, 404)
        status, _ = evaluate(self.conn, sdk_key(orgs + 1), "moving")
        self.expect("an SDK key nobody has", status, 401)
        status, body = request(self.conn, "POST", "/ofrep/v1/evaluate/flags", sdk_key(8),
                               {"context": {"targetingKey": "scale"}})
        self.expect("bulk evaluation of scale-00008 status", status, 200)
        self.expect("bulk evaluation of scale-00008 flags", len(body["flags"]), 20)

    def management(self):
        base = f"/v1/orgs/{slug(8)}/flags"
        status, body = request(self.conn, "GET", f"{base}/flag-000003", self.token)
        self.expect("GET flag-000003 status", status, 200)
        envs = {e["key"]: e for e in body["environments"]}
        self.expect("flag-000003 environments", sorted(envs), ["development", "preview",
                                                               "production"])
        self.expect("flag-000003 enabled", {k: e["enabled"] for k, e in envs.items()},
                    {"development": True, "preview": False, "production": True})
        self.expect("flag-000003 development rules", len(envs["development"]["rules"]), 1)
        self.expect("flag-000003 variants", [v["key"] for v in body["variants"]], ["on", "off"])
        status, body = request(self.conn, "GET", f"{base}?limit=100", self.token)
        self.expect("GET the flag list status", status, 200)
        self.expect("GET the flag list", sorted(f["key"] for f in body["flags"])[:2],
                    ["flag-000001", "flag-000002"])
        self.expect("GET the flag list length", len(body["flags"]), 20)
        status, _ = request(self.conn, "GET", f"/v1/orgs/{slug(8)}/flags/flag-000020", self.token)
        self.expect("GET a flag the organization does not have", status, 404)
        status, body = request(self.conn, "GET", f"{base}/moving", self.token)
        rule = {e["key"]: e for e in body["environments"]}["development"]["rules"][0]["id"]
        self.patch_served(f"{base}/moving/environments/development/rules/{rule}", "DE")
        self.variant(9, "moving", {"country": "DE"}, "a", "value-a")  # another org: unchanged
        # back as scale.sql wrote it (and served), so the next check finds it
        self.patch_served(f"{base}/moving/environments/development/rules/{rule}", "XX")

    def patch_served(self, path, country):
        """PATCHes the rule of scale-00008's moving to country eq COUNTRY and
        waits (30 s at most) until that country is served b."""
        status, _ = request(self.conn, "PATCH", path, self.token,
                            {"conditions": [{"attribute": "country", "operator": "eq",
                                             "values": [country]}]})
        self.expect(f"PATCH the rule of moving to {country}", status, 200)
        deadline = time.monotonic() + 30
        while True:
            _, body = evaluate(self.conn, sdk_key(8), "moving", {"country": country})
            if body.get("variant") == "b" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.expect(f"the PATCH to {country} served", body.get("variant"), "b")


def check(port, token, orgs):
    c = Check(port, token)
    c.evaluations(orgs)
    c.management()
    print(f"CHECK ok {c.count}")


def serves(port, key, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            status, _ = evaluate(conn, key, "moving")
            conn.close()
            if status == 200:
                print(f"SERVES {time.monotonic() - start:.3f}")
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.02)
    raise SystemExit(f"scale.py: port {port} did not serve within {timeout} s")


# ---- writes over random organizations ----------------------------------------------


def writes_main(write_port, read_ports, token, targets_path, rate, seconds):
    with open(targets_path) as f:
        targets = [tuple(line.split()) for line in f if line.strip()]
    writes, results = propagation.measure(write_port, read_ports, token, targets, rate, seconds,
                                          NEVER_S)
    trips = sorted(writes.round_trips) or [0.0]
    for port in read_ports:
        latencies, never = results[port]
        latencies = latencies or [float("nan")]
        print(f"WRITES {port} {len(latencies)} {percentile(latencies, 50):.1f} "
              f"{percentile(latencies, 99):.1f} {latencies[-1]:.1f} {writes.failures} {never} "
              f"{percentile(trips, 50):.1f} {percentile(trips, 99):.1f}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "key":
        print(sdk_key(int(argv[1]), argv[2] if len(argv) > 2 else "dev"))
    elif len(argv) == 4 and argv[0] == "check":
        check(int(argv[1]), argv[2], int(argv[3]))
    elif len(argv) == 4 and argv[0] == "serves":
        serves(int(argv[1]), argv[2], float(argv[3]))
    elif len(argv) == 7 and argv[0] == "writes":
        writes_main(int(argv[1]), [int(p) for p in argv[2].split(",")], argv[3], argv[4],
                    float(argv[5]), float(argv[6]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
