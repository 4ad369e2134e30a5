"""propagation.py - write-to-served latency across two nodes, for contrib/bench.

    python3 propagation.py WRITE_PORT READ_PORT TOKEN ORG RULE_ID SDK_KEY RATE SECONDS

A writer sends RATE management writes per second for SECONDS seconds to
the node on WRITE_PORT, paced to the clock: write i is
PATCH /v1/orgs/ORG/flags/moving/environments/development/rules/RULE_ID
setting the rule's condition to `seq lte i` (the rule serves variant b).
A reader asks the node on READ_PORT, on its own keep-alive connection,
POST /ofrep/v1/evaluate/flags/moving (SDK_KEY, a development key of ORG)
with the context {"seq": k} for the oldest write k not yet seen: the
answer is b exactly when the snapshot that node serves holds write k or a
later one. Write k's latency runs from the moment its 200 answer arrived
(the commit) to the first answer b for k on the other node (0 when the
other node served it before the writer heard back). Prints
    PROPAGATION <writes> <p50 ms> <p99 ms> <max ms> <failed writes> <never served>
                <write p50 ms> <write p99 ms>
the last two being the PATCH round trips on the first node.
The writer, readers and their figures (measure) are also what scale.py's
writes over many organizations use. Standard library only.
"""

import http.client
import json
import random
import sys
import threading
import time

NEVER_S = 10.0  # a write not served this long after the last one counts as never


def percentile(sorted_values, p):
    index = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


class Writes:
    def __init__(self, total):
        self.acked = [None] * total  # monotonic time of each write's 200
        self.targets = [None] * total  # the (org, rule id, SDK key) each write went to
        self.round_trips = []  # ms of each successful PATCH
        self.sent = 0  # writes sent so far (the reader may look at these)
        self.failures = 0
        self.done = False
        self.lock = threading.Lock()


def post_json(conn, method, path, key, body):
    conn.request(method, path, body=json.dumps(body),
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


def write_all(port, token, targets, rate, writes):
    """Write i goes to a target picked at random (the only one, when one)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.monotonic()
    for i in range(len(writes.acked)):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        org, rule_id, _ = target = random.choice(targets)
        with writes.lock:
            writes.targets[i] = target
            writes.sent = i + 1
        sent = time.monotonic()
        status, _ = post_json(conn, "PATCH",
                              f"/v1/orgs/{org}/flags/moving/environments/development/rules/{rule_id}",
                              token,
                              {"conditions": [{"attribute": "seq", "operator": "lte", "values": [i]}]})
        with writes.lock:
            if status == 200:
                writes.acked[i] = time.monotonic()
                writes.round_trips.append((writes.acked[i] - sent) * 1000)
            else:
                writes.failures += 1
    with writes.lock:
        writes.done = True


def serves_b(conn, key, seq):
    status, data = post_json(conn, "POST", "/ofrep/v1/evaluate/flags/moving", key,
                             {"context": {"targetingKey": "probe", "seq": seq}})
    return status == 200 and json.loads(data).get("variant") == "b"


def read_all(port, writes, served, never_s):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    k = 0
    last_progress = time.monotonic()
    while k < len(served):
        with writes.lock:
            sent, done, target = writes.sent, writes.done, writes.targets[k]
        if k >= sent:
            time.sleep(0.001)
            continue
        if serves_b(conn, target[2], k):
            served[k] = time.monotonic()
            k += 1
            last_progress = served[k - 1]
            continue
        if done and time.monotonic() - last_progress > never_s:
            return
        time.sleep(0.001)


def measure(write_port, read_ports, token, targets, rate, seconds, never_s=NEVER_S):
    """Runs the writer and one reader per port; returns the writes, and per
    port the sorted latencies (ms) and the count of writes never served."""
    total = int(rate * seconds)
    writes = Writes(total)
    served = {port: [None] * total for port in read_ports}
    readers = [threading.Thread(target=read_all, args=(port, writes, served[port], never_s))
               for port in read_ports]
    for reader in readers:
        reader.start()
    write_all(write_port, token, targets, rate, writes)
    for reader in readers:
        reader.join()
    results = {}
    for port in read_ports:
        pairs = list(zip(writes.acked, served[port]))
        latencies = sorted(max(0.0, s - a) * 1000 for a, s in pairs
                           if a is not None and s is not None)
        never = sum(1 for a, s in pairs if a is not None and s is None)
        results[port] = (latencies, never)
    return writes, results


def main(write_port, read_port, token, org, rule_id, key, rate, seconds):
    writes, results = measure(write_port, [read_port], token, [(org, rule_id, key)], rate, seconds)
    latencies, never = results[read_port]
    if not latencies:
        raise SystemExit("propagation.py: no write was served")
    trips = sorted(writes.round_trips)
    print(f"PROPAGATION {len(latencies)} {percentile(latencies, 50):.1f} "
          f"{percentile(latencies, 99):.1f} {latencies[-1]:.1f} {writes.failures} {never} "
          f"{percentile(trips, 50):.1f} {percentile(trips, 99):.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6],
         float(sys.argv[7]), float(sys.argv[8]))
