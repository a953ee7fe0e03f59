"""python-etcd3's Lock as another team's program uses it: the foreign holder of the interop cases.

Usage: python_etcd3_lock.py PORT NAME TTL WAIT
Prints "acquired <create revision>" once it holds /locks/NAME, or "refused" when WAIT seconds
passed; then releases at the first line on stdin (or its end) and prints "released".

Debian 12's python3-etcd3 0.12 cannot wait in Lock.acquire with its tenacity (the wait callback's
signature is an older tenacity's: TypeError on the first retry), so a waiter here tries with
timeout=0, which never reaches the callback, and watches the key between tries, as acquire would.
"""
import sys
import time

import etcd3

port, name, ttl, wait = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
client = etcd3.client(host="127.0.0.1", port=port)
lock = client.lock(name, ttl=ttl)
until = time.monotonic() + wait
while not lock.acquire(timeout=0):
    left = until - time.monotonic()
    if left <= 0:
        print("refused", flush=True)
        sys.exit(0)
    try:
        client.watch_once(lock.key, timeout=min(left, 1.0))
    except etcd3.exceptions.WatchTimedOut:
        pass
_, meta = client.get(lock.key)
print("acquired", meta.create_revision, flush=True)
sys.stdin.readline()
print("released" if lock.release() else "not held", flush=True)
