"""test_tcp.py - the TCP options of accepted connections.

Every connection a worker accepts has TCP_NODELAY (inherited from the
listening sockets, src/daemon/listener.c): an answer larger than one write
leaves in several segments, and with Nagle's algorithm the last one waited
for the client's delayed ACK (40 ms per large answer on a keep-alive
connection). The test takes a duplicate of the worker's own descriptor of
the connection (pidfd_getfd(2): the worker is a descendant of this
process) and reads the option from it, so what is checked is the server's
socket, not the client's. Run by tests/e2e/run.
"""

import ctypes
import os
import socket
import unittest

import harness
from test_spread import SpreadMixin, spread

SYS_PIDFD_GETFD = 438


def worker_descriptor(pid, inode):
    """The number of pid's descriptor of the socket with that inode, or None."""
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == f"socket:[{inode}]":
                return int(name)
        except OSError:
            continue
    return None


def duplicate_from(pid, fd):
    """A descriptor of this process for pid's descriptor fd."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        mine = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if mine < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        return mine
    finally:
        os.close(pidfd)


class AcceptedConnectionTest(SpreadMixin, harness.ServerTestCase):
    workers = 2

    def test_accepted_connections_have_tcp_nodelay(self):
        self.connect(1)  # a keep-alive connection that has answered a request
        client = self.clients[0]
        my_port = client.getsockname()[1]
        inode = next((i for i, port in spread.connections(self.server.port).items()
                      if port == my_port), None)
        self.assertIsNotNone(inode, "the connection is not in /proc/net/tcp")
        found = [(pid, worker_descriptor(pid, inode))
                 for pid in spread.workers(self.server.pid)]
        found = [(pid, fd) for pid, fd in found if fd is not None]
        self.assertEqual(len(found), 1, f"workers holding the connection: {found}")
        mine = duplicate_from(*found[0])
        server_side = socket.socket(fileno=mine)
        self.addCleanup(server_side.close)
        self.assertEqual(server_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 1)
        self.assertEqual(server_side.getsockname()[1], self.server.port)
        # the client side keeps the default: the option is the server's
        self.assertEqual(client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 0)


if __name__ == "__main__":
    unittest.main()
