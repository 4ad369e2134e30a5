"""spread.py PORT MASTER_PID - the connections each ensignd worker holds.

Prints one line: "SPREAD n1 n2 ..." with, per worker (children of
MASTER_PID titled "ensignd: worker", in pid order), the TCP connections
of its descriptors whose local port is PORT (listening sockets excluded):
socket inodes from /proc/PID/fd matched against /proc/net/tcp and tcp6.
Called by contrib/bench (part spread) in the middle of a wrk run; its
functions also serve tests/e2e/test_spread.py.
"""

import os
import sys

TCP_LISTEN = "0A"


def connections(port):
    """{inode: client port} of the TCP sockets whose local port is port,
    the listening ones excepted."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] != TCP_LISTEN:
                found[int(fields[9])] = int(fields[2].rsplit(":", 1)[1], 16)
    return found


def workers(master):
    """Pids of master's children titled "ensignd: worker", sorted."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        if int(fields[1]) == master and fields[0] != "Z" and title.startswith("ensignd: worker"):
            pids.append(int(entry))
    return sorted(pids)


def held(pid, table):
    """The client ports of the connections of table ({inode: port}) that
    pid holds a descriptor of."""
    ports = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return ports
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in table:
            ports.add(table[int(target[8:-1])])
    return ports


def main():
    port, master = int(sys.argv[1]), int(sys.argv[2])
    table = connections(port)
    print("SPREAD", " ".join(str(len(held(pid, table))) for pid in workers(master)))


if __name__ == "__main__":
    main()
