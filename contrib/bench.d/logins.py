"""logins.py - the open-loop login load of contrib/bench (part logins).

    python3 logins.py PORT EMAIL PASSWORD RATE SECONDS

Starts RATE logins per second for SECONDS seconds, each POST /v1/session
on its own connection from its own thread at its scheduled time, whether
or not the earlier ones were answered (an open loop: a slow server does
not slow the offered load). Prints
    LOGINS <started> <seconds> <200s> <503s> <other> <p50_ms> <p99_ms>
with the latency of the answered ones. Standard library only.
"""

import http.client
import json
import sys
import threading
import time


def main(port, email, password, rate, seconds):
    body = json.dumps({"email": email, "password": password})
    headers = {"Content-Type": "application/json"}
    results = []
    lock = threading.Lock()

    def one():
        started = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/v1/session", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            status = response.status
            conn.close()
        except (OSError, http.client.HTTPException):
            status = 0
        with lock:
            results.append((status, time.monotonic() - started))

    total = int(rate * seconds)
    threads = []
    start = time.monotonic()
    for i in range(total):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one)
        t.start()
        threads.append(t)
    elapsed = time.monotonic() - start
    for t in threads:
        t.join()
    ok = sum(1 for s, _ in results if s == 200)
    busy = sum(1 for s, _ in results if s == 503)
    times = sorted(d for s, d in results if s == 200) or [0.0]
    p50 = times[len(times) // 2] * 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000
    print(f"LOGINS {total} {elapsed:.3f} {ok} {busy} {len(results) - ok - busy} {p50:.1f} {p99:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
