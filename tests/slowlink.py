#!/usr/bin/env python3
"""slowlink.py - a loopback TCP proxy that caps each direction's bandwidth.

    slowlink.py PORTFILE TARGET_PORT BYTES_PER_SECOND

Listens on 127.0.0.1 (a free port, written to PORTFILE once it listens)
and relays each connection to 127.0.0.1:TARGET_PORT, passing at most
BYTES_PER_SECOND each way in small, steady chunks: a big message through
it takes long, but its bytes keep flowing, as on a slow network.
"""
import os
import socket
import sys
import threading
import time


def pump(src, dst, rate, done):
    chunk = max(1, rate // 50)          # about 50 chunks a second
    failed = False
    try:
        while True:
            data = src.recv(chunk)
            if not data:
                break
            dst.sendall(data)
            time.sleep(len(data) / rate)
    except OSError:
        failed = True
    # Pass the end on as TCP would: this direction is over (FIN), and the
    # other direction still delivers what is on its way, such as the last
    # words of a peer that exits. Closing both at once here would drop them.
    for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
        if how == socket.SHUT_WR or failed:
            try:
                s.shutdown(how)
            except OSError:
                pass
    if done.acquire(blocking=False):
        return                          # the other direction is still on
    src.close()
    dst.close()


def main():
    portfile, target, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection(("127.0.0.1", target))
        except OSError:
            client.close()
            continue
        # The second pump of a pair to finish closes both sockets.
        done = threading.Semaphore(1)
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=pump, args=(a, b, rate, done),
                             daemon=True).start()


if __name__ == "__main__":
    main()
