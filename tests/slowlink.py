#!/usr/bin/env python3
"""slowlink.py - a loopback TCP proxy that makes a link slow, far or broken.

    slowlink.py PORTFILE TARGET_PORT BYTES_PER_SECOND [DELAY_MS]

Listens on 127.0.0.1 (a free port, written to PORTFILE once it listens)
and relays each connection to 127.0.0.1:TARGET_PORT. Each direction:
- passes at most BYTES_PER_SECOND, in small, steady chunks: a big message
  takes long, but its bytes keep flowing, as on a slow network;
- delivers every byte DELAY_MS (0) after it was read: a one-way delay, as
  on a long link (the round trip is twice that).
On command, for every connection at once (this kernel has no netem):
- SIGUSR1 stalls the links: no byte crosses, connections stay open (a
  network partition: nothing is refused, nothing arrives); new connections
  are accepted and stall too;
- SIGUSR2 ends the stall: what was held flows on;
- SIGHUP cuts every connection (a reset, as a failed router would).
Each command is logged on stderr.
"""
import collections
import os
import signal
import socket
import struct
import sys
import threading
import time

flowing = threading.Event()
flowing.set()
conns_lock = threading.Lock()
conns = set()


def log(msg):
    sys.stderr.write("slowlink: %s\n" % msg)
    sys.stderr.flush()


class Direction:
    """One direction of one connection: a reader thread queues what it
    reads with its due time; a writer thread sends it when due, paced."""

    def __init__(self, src, dst, rate, delay, done):
        self.src, self.dst, self.rate, self.delay = src, dst, rate, delay
        self.done = done
        self.queue = collections.deque()
        self.queued = 0
        # What the link holds at once: its bandwidth-delay product (at least
        # 64 KiB), so a sender feels back-pressure as on a real link.
        self.limit = max(64 << 10, int(rate * delay))
        self.cond = threading.Condition()
        self.eof = False
        self.failed = False
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.write, daemon=True).start()

    def read(self):
        chunk = max(1, self.rate // 50)          # about 50 chunks a second
        try:
            while True:
                flowing.wait()
                data = self.src.recv(chunk)
                if not data:
                    break
                with self.cond:
                    self.queue.append((time.monotonic() + self.delay, data))
                    self.queued += len(data)
                    self.cond.notify_all()
                    while self.queued > self.limit and not self.failed:
                        self.cond.wait()
        except OSError:
            self.failed = True
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def write(self):
        next_free = time.monotonic()            # when the link is free again
        try:
            while True:
                with self.cond:
                    while not self.queue and not self.eof:
                        self.cond.wait()
                    if not self.queue:
                        break
                    due, data = self.queue.popleft()
                    self.queued -= len(data)
                    self.cond.notify_all()
                flowing.wait()
                now = time.monotonic()
                start = max(due, next_free, now)
                if start > now:
                    time.sleep(start - now)
                flowing.wait()
                self.dst.sendall(data)
                next_free = start + len(data) / self.rate
        except OSError:
            with self.cond:
                self.failed = True
                self.cond.notify_all()
        self.finish()

    def finish(self):
        # Pass the end on as TCP would: this direction is over (FIN), and
        # the other direction still delivers what is on its way, such as
        # the last words of a peer that exits. Closing both at once here
        # would drop them.
        for s, how in ((self.dst, socket.SHUT_WR), (self.src, socket.SHUT_RD)):
            if how == socket.SHUT_WR or self.failed:
                try:
                    s.shutdown(how)
                except OSError:
                    pass
        if self.done.acquire(blocking=False):
            return                              # the other direction is still on
        close_pair(self.src, self.dst)


def close_pair(a, b):
    """Closes a connection pair as a host would: after both ends said all
    (FIN), what still comes in is read and dropped until the peer closes
    too (2 s at most). Closing with unread bytes would send a reset, and a
    reset makes the peer's kernel drop what it has not yet read, such as a
    JM's last words delayed on their way."""
    with conns_lock:
        conns.discard((a, b))
    deadline = time.monotonic() + 2
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    for s in (a, b):
        try:
            while time.monotonic() < deadline:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                if not s.recv(65536):
                    break
        except OSError:
            pass
        s.close()


def on_signal(signum, frame):
    if signum == signal.SIGUSR1:
        flowing.clear()
        log("links stalled")
    elif signum == signal.SIGUSR2:
        flowing.set()
        log("links flow again")
    elif signum == signal.SIGHUP:
        with conns_lock:
            pairs = list(conns)
        for a, b in pairs:
            for s in (a, b):
                try:
                    # SO_LINGER 0: the peer gets a reset; shutdown wakes
                    # this proxy's own threads blocked on the socket.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        log("%d connection(s) cut" % len(pairs))


def main():
    portfile, target, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    delay = (float(sys.argv[4]) if len(sys.argv) > 4 else 0.0) / 1000.0
    for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP):
        signal.signal(s, on_signal)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        try:
            client, _ = listener.accept()
        except InterruptedError:
            continue
        try:
            server = socket.create_connection(("127.0.0.1", target))
        except OSError:
            client.close()
            continue
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conns_lock:
            conns.add((client, server))
        # The second direction of a pair to finish closes both sockets.
        done = threading.Semaphore(1)
        Direction(client, server, rate, delay, done)
        Direction(server, client, rate, delay, done)


if __name__ == "__main__":
    main()
