"""streams.py - change-notification streams for contrib/bench.

    python3 streams.py PORT SDK_KEY CONNINFO ORG MASTER_PID STREAMS CHANGES

Opens STREAMS event streams (GET of the eventStreams URL of the SDK key's
bulk answer) on loopback, in batches, and reads them all from one epoll
loop. Measures the workers' RSS (from /proc, children of MASTER_PID whose
title names a worker) before and after, so the idle memory per stream is
the RSS delta over the streams. Then makes CHANGES configuration changes,
one every 0.5 s (each a committed UPDATE of the development flag `moving`
through one psql session; the clock starts when psql reports the commit),
and records for every stream when its refetchEvaluation event arrives.
Prints
    STREAMS <open> <refused> <seconds to open> <rss delta kB> <sockets per worker: n,n>
    NOTIFY <samples> <p50 ms> <p99 ms> <max ms> <missed> <first p50 ms>
(first: per change, the first stream to hear of it, i.e. without the time
this client takes to read the other streams)
With CHANGES 0 it only opens the streams, prints the STREAMS line and
holds them (reading) until its standard input closes, 120 s at most.
Bounded: at most 60 s to open, 5 s per change. Standard library only.
"""

import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import time
import http.client

UPDATE = ("UPDATE flag_environments fe SET default_serve = jsonb_build_object('variant', :'v')"
          " FROM flags f JOIN orgs o ON o.id = f.org_id JOIN environments e ON e.org_id = o.id"
          " WHERE fe.flag_id = f.id AND fe.environment_id = e.id AND o.slug = :'org'"
          " AND f.key = 'moving' AND e.key = 'development';\n")
MARK = b'"refetchEvaluation"'
BATCH = 500


def stream_path(port, key):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/ofrep/v1/evaluate/flags", body="{}",
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    url = json.loads(conn.getresponse().read())["eventStreams"][0]["url"]
    conn.close()
    return url[url.index("/ofrep/"):]


def worker_rss(master):
    """{pid: VmRSS kB} of the master's worker children."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != master:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"worker" not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        found[int(pid)] = int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return found


def worker_fds(pids):
    counts = []
    for pid in sorted(pids):
        try:
            counts.append(sum(1 for name in os.listdir(f"/proc/{pid}/fd")
                              if os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:")))
        except OSError:
            counts.append(-1)
    return counts


class Client:
    __slots__ = ("sock", "status", "head", "tail", "seen", "times")

    def __init__(self, sock):
        self.sock = sock
        self.status = 0
        self.head = b""
        self.tail = b""
        self.seen = 0
        self.times = []


def read(client, now):
    try:
        data = client.sock.recv(65536)
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    if not data:
        return False
    if client.status == 0:
        client.head += data
        if b"\r\n" not in client.head:
            return True
        client.status = int(client.head.split(b" ", 2)[1])
        data = client.head
    text = client.tail + data
    found = text.count(MARK) - client.tail.count(MARK)
    for _ in range(found):
        client.seen += 1
        client.times.append(now)
    client.tail = text[-len(MARK):]
    return True


def open_streams(port, path, count, sel):
    request = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               "Accept: text/event-stream\r\n\r\n").encode()
    clients = []
    deadline = time.monotonic() + 60
    while len(clients) < count and time.monotonic() < deadline:
        batch = []
        for _ in range(min(BATCH, count - len(clients))):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(request)
            sock.setblocking(False)
            client = Client(sock)
            sel.register(sock, selectors.EVENT_READ, client)
            batch.append(client)
        clients += batch
        while time.monotonic() < deadline and any(c.status == 0 for c in batch):
            pump(sel, 0.05)
    return clients


def pump(sel, timeout):
    for key, _ in sel.select(timeout):
        if not read(key.data, time.monotonic()):
            sel.unregister(key.fileobj)
            key.data.status = key.data.status or -1


def hold(sel):
    done = []
    sel.register(sys.stdin, selectors.EVENT_READ, done)
    deadline = time.monotonic() + 120
    while not done and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            if key.data is done:
                if not os.read(sys.stdin.fileno(), 4096):
                    done.append(True)
            elif not read(key.data, time.monotonic()):
                sel.unregister(key.fileobj)


def percentile(values, p):
    index = min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[index]


def main(port, key, conninfo, org, master, count, changes):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))
    path = stream_path(port, key)
    before = worker_rss(master)
    sel = selectors.EpollSelector()
    started = time.monotonic()
    clients = open_streams(port, path, count, sel)
    open_seconds = time.monotonic() - started
    ok = [c for c in clients if c.status == 200]
    for _ in range(20):  # let the workers settle before measuring memory
        pump(sel, 0.05)
    after = worker_rss(master)
    delta = sum(after.values()) - sum(before.get(pid, 0) for pid in after)
    print(f"STREAMS {len(ok)} {len(clients) - len(ok)} {open_seconds:.2f} {delta} "
          f"{','.join(str(n) for n in worker_fds(after))}", flush=True)
    if changes == 0:
        hold(sel)
        return
    psql = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo,
                             "-v", f"org={org}", "-f", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    samples, firsts, missed = [], [], 0
    for i in range(changes):
        target = i + 1
        psql.stdin.write(f"\\set v {'a' if i % 2 else 'b'}\n" + UPDATE + "\\echo done\n")
        psql.stdin.flush()
        psql.stdout.readline()
        committed = time.monotonic()
        deadline = committed + 5
        while time.monotonic() < deadline and any(c.seen < target for c in ok):
            pump(sel, 0.01)
        heard = [c.times[target - 1] for c in ok if c.seen >= target]
        if heard:
            firsts.append((min(heard) - committed) * 1000)
        for c in ok:
            if c.seen >= target:
                samples.append((c.times[target - 1] - committed) * 1000)
            else:
                missed += 1
                while c.seen < target:
                    c.seen += 1
                    c.times.append(committed)
        pause = committed + 0.5
        while time.monotonic() < pause:
            pump(sel, 0.05)
    psql.stdin.close()
    psql.wait(10)
    samples.sort()
    if samples:
        firsts.sort()
        print(f"NOTIFY {len(samples)} {percentile(samples, 50):.1f} {percentile(samples, 99):.1f} "
              f"{samples[-1]:.1f} {missed} {percentile(firsts, 50):.1f}", flush=True)
    else:
        print(f"NOTIFY 0 0 0 0 {missed} 0", flush=True)
    for c in clients:
        c.sock.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
         int(sys.argv[6]), int(sys.argv[7]))
