"""propagation.py - write-to-served latency for contrib/bench.

    python3 propagation.py PORT SDK_KEY CONNINFO ORG N

Alternates the default serve of the development flag `moving` between
variants a and b N times. Each change is one committed UPDATE through a
persistent psql session; the clock starts when psql reports the commit and
stops when POST /ofrep/v1/evaluate/flags/moving (with the development SDK
key) first serves the new variant. Prints
    PROPAGATION <n> <p50 ms> <p99 ms> <max ms>
Standard library only.
"""

import http.client
import json
import subprocess
import sys
import time

UPDATE = ("UPDATE flag_environments fe SET default_serve = jsonb_build_object('variant', :'v')"
          " FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id"
          " WHERE fe.flag_id = f.id AND fe.environment_id = e.id AND o.slug = :'org'"
          " AND f.key = 'moving' AND e.key = 'development';\n")


def served_variant(conn, key):
    body = json.dumps({"context": {"targetingKey": "probe"}})
    conn.request("POST", "/ofrep/v1/evaluate/flags/moving", body=body,
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    return json.loads(data).get("variant") if response.status == 200 else None


def percentile(sorted_values, p):
    index = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def main(port, key, conninfo, org, count):
    psql = subprocess.Popen(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-v",
                             f"org={org}", "-d", conninfo], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    latencies = []
    current = served_variant(conn, key)
    for i in range(count):
        target = "b" if current == "a" else "a"
        psql.stdin.write(f"\\set v {target}\n" + UPDATE + "\\echo committed\n")
        psql.stdin.flush()
        if psql.stdout.readline().strip() != "committed":
            raise SystemExit("propagation.py: psql failed")
        start = time.monotonic()
        while served_variant(conn, key) != target:
            if time.monotonic() - start > 10:
                raise SystemExit("propagation.py: change not served within 10 s")
            time.sleep(0.001)
        latencies.append((time.monotonic() - start) * 1000)
        current = target
        time.sleep(0.05)
    psql.stdin.close()
    psql.wait()
    latencies.sort()
    print(f"PROPAGATION {len(latencies)} {percentile(latencies, 50):.1f} "
          f"{percentile(latencies, 99):.1f} {latencies[-1]:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
