"""One run of one point, in a fresh process: `python -m harness.child`
reads the point as JSON on standard input and prints one JSON line:
the deltas and the facts of the device, or `{"oom": message}` (exit 3).
A fresh process per run means no cache, workspace or fragment left over
from another point, and an out-of-memory error that cannot poison the next.
"""

import json
import os
import platform
import sys

from . import configs

OOM_EXIT = 3


def main():
    spec = json.load(sys.stdin)
    doc = configs.load(spec["family"])
    args = (spec["op"], spec["tile"], spec["dtype"], spec["width"], spec["height"], spec["batch"])
    try:
        if spec["device"] == "fake":
            from . import fake

            facts = fake.facts()
            facts["os"] = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(platform.system(), "")
            deltas = fake.measure(doc["config"], *args, env=os.environ, run=spec["run"], key=spec["key"])
        else:
            from . import measure

            facts = measure.facts()
            deltas = measure.measure(doc, *args)
    except MemoryError as e:
        print(json.dumps({"oom": str(e)}))
        sys.exit(OOM_EXIT)
    reserved, allocated, driver = deltas
    facts.update({"reserved": reserved, "allocated": allocated, "driver": driver})
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
