# A Python 3 program with threads mid-run (the GIL, sleeps, a lock): its
# whole output must be the same whether or not it was dumped and restored
# along the way.
import hashlib
import os
import threading
import time

os.closerange(3, 4096)  # nothing inherited beyond 0-2

print("READY", os.getpid(), flush=True)
results = {}
lock = threading.Lock()


def work(n):
    h = hashlib.sha256(str(n).encode())
    total = 0
    for i in range(120):
        h.update(h.digest())
        total += sum(j * n for j in range(3000))
        time.sleep(0.01)
    with lock:
        results[n] = (threading.current_thread().name, h.hexdigest()[:16],
                      total, threading.get_native_id() > 0)


threads = [threading.Thread(target=work, args=(n,), name="w%d" % n)
           for n in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for n in sorted(results):
    print(n, *results[n], flush=True)
print("PASS", flush=True)
