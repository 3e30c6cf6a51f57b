"""Sleeps (or fails) without starting Spark: cancel and exit-code tests need only the supervised process."""

import sys
import time

print("sleeper started", flush=True)
if sys.argv[1:] == ["fail"]:
    print("something went wrong", flush=True)
    sys.exit(3)
time.sleep(600)
