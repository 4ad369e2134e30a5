"""writes.py - the background management write load of contrib/bench.

    python3 writes.py PORT TOKEN ORG RULE_ID RATE SECONDS

Sends RATE requests per second for SECONDS seconds, each a
PATCH /v1/orgs/ORG/flags/moving/environments/development/rules/RULE_ID
that changes the rule's condition value, on one keep-alive connection,
paced to the clock (a late request is sent at once, not skipped). Each is
a real management write: one transaction that bumps the configuration
generation, so the refresher rebuilds the snapshot and every worker
re-maps it. Prints
    WRITES <requests> <seconds> <non-200 answers>
Standard library only.
"""

import http.client
import json
import sys
import time


def main(port, token, org, rule_id, rate, seconds):
    path = f"/v1/orgs/{org}/flags/moving/environments/development/rules/{rule_id}"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    total = int(rate * seconds)
    failures = 0
    start = time.monotonic()
    for i in range(total):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        body = {"conditions": [{"attribute": "country", "operator": "eq", "values": [f"X{i}"]}]}
        conn.request("PATCH", path, body=json.dumps(body), headers=headers)
        response = conn.getresponse()
        response.read()
        failures += response.status != 200
    print(f"WRITES {total} {time.monotonic() - start:.3f} {failures}")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]),
         float(sys.argv[6]))
