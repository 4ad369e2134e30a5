"""streams.py - change-notification streams for contrib/bench.

    python3 streams.py PORT SDK_KEY CONNINFO ORG MASTER_PID STREAMS CHANGES CLIENT HOLDERS

Opens STREAMS event streams (GET of the eventStreams URL of the SDK key's
bulk answer) on loopback with CLIENT (contrib/bench.d/stream-client.c,
one epoll loop in C), after HOLDERS other CLIENTs that open STREAMS each
and only hold them. Measures the workers' RSS (from /proc: children of
MASTER_PID whose command line names a worker) before and after, so the
idle memory per stream is the RSS delta over the streams. Then makes
CHANGES configuration changes, one every 0.5 s (each a committed UPDATE of
the development flag `moving` through one psql session; the clock starts
when psql reports the commit), and takes from CLIENT when each stream's
refetchEvaluation event arrived. Prints
    STREAMS <open> <refused> <seconds to open> <rss delta kB> <sockets per worker: n,n>
    NOTIFY <samples> <p50 ms> <p99 ms> <max ms> <missed> <first p50 ms>
(first: per change, the first stream to hear of it). Bounded: the clients
open within 60 s each, a change is waited for 2 s.
"""

import http.client
import json
import os
import subprocess
import sys
import time

import spread  # beside this script: the workers of a master

UPDATE = ("UPDATE flag_environments fe SET default_serve = jsonb_build_object('variant', :'v')"
          " FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id"
          " WHERE fe.flag_id = f.id AND fe.environment_id = e.id AND o.slug = :'org'"
          " AND f.key = 'moving' AND e.key = 'development';\n")


def stream_path(port, key):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/ofrep/v1/evaluate/flags", body="{}",
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    url = json.loads(conn.getresponse().read())["eventStreams"][0]["url"]
    conn.close()
    return url[url.index("/ofrep/"):]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sockets(pid):
    return sum(1 for name in os.listdir(f"/proc/{pid}/fd")
               if os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"))


def start_client(client, port, path, count):
    proc = subprocess.Popen([client, str(port), path, str(count)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    ok, refused = (int(line[1]), int(line[2])) if line[:1] == ["OPEN"] else (0, count)
    return proc, ok, refused


def percentile(values, p):
    index = min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[index]


def main(port, key, conninfo, org, master, count, changes, client, holders):
    path = stream_path(port, key)
    workers = spread.workers(master)
    before = sum(rss_kb(pid) for pid in workers)
    started = time.monotonic()
    held = [start_client(client, port, path, count) for _ in range(holders)]
    proc, ok, refused = start_client(client, port, path, count)
    open_seconds = time.monotonic() - started
    time.sleep(1)
    delta = sum(rss_kb(pid) for pid in workers) - before
    total_ok = ok + sum(h[1] for h in held)
    total_refused = refused + sum(h[2] for h in held)
    print(f"STREAMS {total_ok} {total_refused} {open_seconds:.2f} {delta} "
          f"{','.join(str(sockets(pid)) for pid in workers)}", flush=True)
    psql = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo,
                             "-v", f"org={org}", "-f", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    commits = []
    for i in range(changes):
        psql.stdin.write(f"\\set v {'a' if i % 2 else 'b'}\n" + UPDATE + "\\echo done\n")
        psql.stdin.flush()
        psql.stdout.readline()
        commits.append(time.monotonic())
        time.sleep(0.5)
    time.sleep(1.5)
    psql.stdin.close()
    psql.wait(10)
    out, _ = proc.communicate(timeout=60)
    for h in held:
        h[0].communicate(timeout=60)
    arrivals = {}
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["EV"]:
            arrivals[int(fields[1])] = [float(t) for t in fields[2:]]
    samples, firsts, missed = [], [], 0
    for k, committed in enumerate(commits, 1):
        got = [(t - committed) * 1000 for t in arrivals.get(k, [])]
        missed += ok - len(got)
        samples += got
        if got:
            firsts.append(min(got))
    samples.sort()
    firsts.sort()
    if samples:
        print(f"NOTIFY {len(samples)} {percentile(samples, 50):.1f} {percentile(samples, 99):.1f} "
              f"{samples[-1]:.1f} {missed} {percentile(firsts, 50):.1f}", flush=True)
    else:
        print(f"NOTIFY 0 0 0 0 {missed} 0", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
         int(sys.argv[6]), int(sys.argv[7]), sys.argv[8], int(sys.argv[9]))
