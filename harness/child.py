"""One child process: `python -m harness.child` reads a group of points
as JSON on standard input ({"device", "points": [...]}) and runs them in
order in this one process, printing one JSON line per point: its deltas,
the tiles it ran and the facts of the device, or `{"oom": message}` (the
rest of the group still runs; the exit code is then 3). The first op of the process is
its first use (context fresh); every later one runs warm. A fresh process
per group means no cache, workspace or fragment left over from another
group, and an out-of-memory error that cannot poison the next.
"""

import json
import os
import platform
import sys

from . import configs

OOM_EXIT = 3


def main():
    spec = json.load(sys.stdin)
    device = spec["device"]
    os_name = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(platform.system(), "")
    vaes = {}
    facts = None
    any_oom = False
    for i, p in enumerate(spec["points"]):
        doc = configs.load(p["family"])
        try:
            if device == "fake":
                from . import fake

                facts = facts or dict(fake.facts(), os=os_name)
                tile, walked = (fake.HOST_TILE if p["host_tiles"] else p["tile"]), 0
                deltas = fake.measure(doc["config"], p["op"], tile, p["dtype"], p["width"], p["height"],
                                      p["batch"], env=os.environ, run=p["run"], key=p["key"], frames=p["frames"],
                                      first=i == 0)
            else:
                from . import measure

                facts = facts or measure.facts()
                vae = vaes.get((p["family"], p["dtype"]))
                if vae is None:
                    # One VAE on the device at a time: the previous family's
                    # weights are freed before the next is built.
                    vaes.clear()
                    measure.release()
                    vae = vaes.setdefault((p["family"], p["dtype"]), measure.build(doc, p["dtype"], "cuda", 0))
                tile = measure.configure_tiling(vae, doc, p["tile"], p["host_tiles"])
                walked = measure.temporal_tile(vae, p["op"], p["frames"])
                deltas = measure.measure_once(vae, doc, p["op"], p["dtype"], p["width"], p["height"], p["batch"],
                                              p["frames"])
        except MemoryError as e:
            # The next point of the group still runs: what the failed op
            # held is released first (its measurement starts from its own
            # baseline either way).
            print(json.dumps({"key": p["key"], "oom": str(e)}), flush=True)
            any_oom = True
            if device != "fake":
                from . import measure

                measure.release()
            continue
        reserved, allocated, driver = deltas
        answer = dict(facts, key=p["key"], reserved=reserved, allocated=allocated, driver=driver, tile=tile,
                      temporal_tile=walked, earlier=i, first=spec["points"][0]["key"])
        print(json.dumps(answer), flush=True)
    if any_oom:
        sys.exit(OOM_EXIT)


if __name__ == "__main__":
    main()
