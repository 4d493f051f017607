# A Python 3 program mid-run: its whole output must be the same whether
# or not it was dumped and restored along the way.
import hashlib
import os
import time

os.closerange(3, 4096)  # nothing inherited beyond 0-2

print("READY", os.getpid(), flush=True)
h = hashlib.sha256()
table = {}
for i in range(60):
    h.update(str(i).encode())
    table[i] = [j * i for j in range(2000)]
    total = sum(sum(v) for v in table.values())
    print(i, h.hexdigest()[:16], total, flush=True)
    time.sleep(0.05)
print("PASS", flush=True)
