"""A Python test program for mosrun: prints a deterministic sequence of
lines, computed and written one by one with short sleeps between them, so
that a test can move it mid-run and compare its output with an unmoved
run's. It also imports a module late, after the move."""
import hashlib
import sys
import time

state = b"osmosis"
for i in range(40):
    for _ in range(2000):
        state = hashlib.sha256(state).digest()
    if i == 20:
        import json  # an import served from home
        print(json.dumps({"i": i, "h": state.hex()[:16]}))
    print(i, state.hex()[:32], flush=True)
    time.sleep(0.05)
print("done", sum(state) % 1000)
