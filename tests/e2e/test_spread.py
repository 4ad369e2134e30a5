"""test_spread.py - connections spread evenly over the workers.

Every worker polls every listening socket and accepts only while it holds
no more connections than its least loaded sibling (src/http/accept_balance.h),
so keep-alive connections end up within one of even, whatever socket the
kernel's SO_REUSEPORT hash queued them on (the hash alone gave one of two
workers 60-65% of 16 connections). What each worker holds is read from
/proc (contrib/bench.d/spread.py, which the bench uses too): the socket
inodes of its descriptors matched against /proc/net/tcp.

Connections are opened one after another and each answers a request before
the next opens, as a client pool warming up does. Run by tests/e2e/run.
"""

import importlib.util
import os
import signal
import socket
import time

import harness

REQUEST = b"GET /v1/healthz HTTP/1.1\r\nHost: spread\r\n\r\n"


def load_spread():
    """contrib/bench.d/spread.py: the /proc readers the bench uses too."""
    path = os.path.join(harness.SRC_DIR, "contrib", "bench.d", "spread.py")
    spec = importlib.util.spec_from_file_location("spread", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spread = load_spread()


class SpreadMixin:
    """Opening keep-alive connections and reading which worker holds them."""

    def setUp(self):
        self.clients = []
        self.wait_held(lambda h: not any(h.values()), "no connection left from before")

    def tearDown(self):
        for client in self.clients:
            client.close()

    def worker_pids(self):
        return spread.workers(self.server.pid)

    def held(self):
        """{worker pid: set of client ports of the connections it holds}."""
        table = spread.connections(self.server.port)
        return {pid: spread.held(pid, table) for pid in self.worker_pids()}

    def wait_held(self, predicate, what):
        held = harness.wait_for(lambda: (lambda h: h if predicate(h) else None)(self.held()),
                                5.0)
        self.assertIsNotNone(held, f"{what}: workers hold {self.counts(self.held())}")
        return held

    @staticmethod
    def counts(held):
        return {pid: len(ports) for pid, ports in held.items()}

    def connect(self, n):
        """Opens n keep-alive connections, one after another, each answering
        a request before the next opens."""
        for _ in range(n):
            client = socket.create_connection(("127.0.0.1", self.server.port),
                                              timeout=harness.HTTP_TIMEOUT)
            self.clients.append(client)
            client.sendall(REQUEST)
            received = b""
            while not harness.raw_response_complete(received):
                chunk = client.recv(65536)
                self.assertTrue(chunk, "the server closed a keep-alive connection")
                received += chunk
            self.assertTrue(received.startswith(b"HTTP/1.1 200"), received[:80])

    def connect_at_once(self, n):
        """Opens n keep-alive connections together, then sends a request on
        each: the workers find them queued all at once."""
        clients = [socket.create_connection(("127.0.0.1", self.server.port),
                                            timeout=harness.HTTP_TIMEOUT) for _ in range(n)]
        self.clients.extend(clients)
        for client in clients:
            client.sendall(REQUEST)
        for client in clients:
            received = b""
            while not harness.raw_response_complete(received):
                chunk = client.recv(65536)
                self.assertTrue(chunk, "the server closed a keep-alive connection")
                received += chunk

    def close_clients(self, ports):
        for client in [c for c in self.clients if c.getsockname()[1] in ports]:
            client.close()
            self.clients.remove(client)

    def assert_even(self, total):
        held = self.wait_held(lambda h: sum(map(len, h.values())) == total and len(h) == 2,
                              f"{total} connections on 2 workers")
        counts = sorted(self.counts(held).values())
        self.assertEqual(counts, [total // 2, total - total // 2],
                         f"{total} connections spread {self.counts(held)}")
        return held


class SpreadTest(SpreadMixin, harness.ServerTestCase):
    workers = 2

    def test_sixteen_connections_spread_evenly(self):
        self.connect(16)
        self.assert_even(16)

    def test_a_burst_of_sixteen_spreads_evenly(self):
        self.connect_at_once(16)
        self.assert_even(16)

    def test_new_connections_go_to_the_worker_that_lost_some(self):
        self.connect(16)
        held = self.assert_even(16)
        loser, keeper = self.worker_pids()
        self.close_clients(set(sorted(held[loser])[:4]))
        self.wait_held(lambda h: len(h.get(loser, ())) == 4, "4 connections closed")
        time.sleep(0.2)  # the other worker re-checks the balance on a timer
        self.connect(4)
        held = self.assert_even(16)
        self.assertEqual(len(held[keeper]), 8, self.counts(held))

    def test_a_stopped_worker_holds_no_connection_back(self):
        self.connect(16)
        held = self.assert_even(16)
        stopped, other = self.worker_pids()
        self.close_clients(held[stopped])
        self.wait_held(lambda h: not h.get(stopped), "the first worker's connections closed")
        os.kill(stopped, signal.SIGSTOP)
        try:
            started = time.monotonic()
            self.connect(4)  # the balance says the stopped worker is least loaded
            elapsed = time.monotonic() - started
        finally:
            os.kill(stopped, signal.SIGCONT)
        self.assertLess(elapsed, 2.0, "connections waited for the stopped worker")
        held = self.wait_held(lambda h: len(h.get(other, ())) == 12, "12 on the running worker")
        self.assertEqual(len(held[stopped]), 0, self.counts(held))


class SpreadAfterReloadTest(SpreadMixin, harness.ServerTestCase):
    """After SIGHUP the new workers share the connections evenly: the old
    generation's entries in the balance no longer count."""

    workers = 2

    def test_connections_spread_over_the_new_workers(self):
        old = set(self.worker_pids())
        self.connect(4)
        clients, self.clients = self.clients, []
        self.server.signal(signal.SIGHUP)

        def new_workers():
            pids = set(self.worker_pids())
            return pids if len(pids) == 2 and not pids & old else None

        self.assertIsNotNone(harness.wait_for(new_workers, 10.0), self.server.stderr())
        for client in clients:
            client.close()
        self.wait_held(lambda h: not any(h.values()), "the old connections closed")
        self.connect(16)
        held = self.assert_even(16)
        self.assertFalse(set(held) & old, "an old worker still holds connections")


class SpreadAtTheCapTest(SpreadMixin, harness.ServerTestCase):
    """A worker at max_connections_per_worker is absent from the balance:
    its sibling takes what it cannot, and a client beyond both caps waits in
    the kernel's queue until a connection closes."""

    workers = 2
    settings = {"max_connections_per_worker": 16}  # the smallest allowed

    def test_full_workers_hold_nobody_back_and_the_next_client_waits(self):
        self.connect(32)
        held = self.assert_even(32)
        waiting = socket.create_connection(("127.0.0.1", self.server.port))
        self.clients.append(waiting)
        waiting.sendall(REQUEST)
        waiting.settimeout(0.8)
        with self.assertRaises(socket.timeout):
            waiting.recv(1)
        self.close_clients({min(next(iter(held.values())))})
        waiting.settimeout(5)
        self.assertTrue(waiting.recv(64).startswith(b"HTTP/1.1 200"))
