"""spread.py PORT MASTER_PID - the connections each ensignd worker holds.

Prints one line: "SPREAD n1 n2 ..." with, per worker (children of
MASTER_PID titled "ensignd: worker", in pid order), the TCP connections
of its descriptors whose local port is PORT (listening sockets excluded):
socket inodes from /proc/PID/fd matched against /proc/net/tcp and tcp6.
Called by contrib/bench (part spread) in the middle of a wrk run.
"""

import os
import sys

TCP_LISTEN = "0A"


def connections(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] != TCP_LISTEN:
                inodes.add(int(fields[9]))
    return inodes


def workers(master):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        if ppid == master and title.startswith("ensignd: worker"):
            pids.append(int(entry))
    return sorted(pids)


def held(pid, inodes):
    n = 0
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return 0
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            n += 1
    return n


def main():
    port, master = int(sys.argv[1]), int(sys.argv[2])
    inodes = connections(port)
    print("SPREAD", " ".join(str(held(pid, inodes)) for pid in workers(master)))


if __name__ == "__main__":
    main()
