"""The Observer writes only its own file (issue 61, docs/hosts.md "Observe"): each case points an Observer at a
path it must not touch, or at its own file in a state a crash leaves, and checks the bytes after. Runs on the
harness's simulated device. Prints a JSON object: "failed", the cases that broke their rule, and "cases".
"""

import json
import logging
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ["VRAMFIT_REPO"])

from harness import configs, fake  # noqa: E402

import vramfit_vae  # noqa: E402

failed = []
cases = [0]
log_lines = []


class Catch(logging.Handler):
    def emit(self, record):
        log_lines.append(record.getMessage())


logging.getLogger("vramfit_vae").addHandler(Catch())
logging.getLogger("vramfit_vae").propagate = False
cuda = fake.Cuda()
sdxl = configs.load("sdxl")["config"]
need = vramfit_vae.reserve("sdxl", "decode", 512, 512, dtype="fp16", os="linux", env={})
header = vramfit_vae._native.OBSERVATION_HEADER.encode()
work = tempfile.mkdtemp()


def check(name, ok, said=""):
    cases[0] += 1
    if not ok:
        failed.append("%s: %s" % (name, said))


def bytes_of(p):
    with open(p, "rb") as f:
        return f.read()


def refused_at_setup(name, path):
    """An Observer on `path` raises ValueError when built."""
    try:
        vramfit_vae.Observer(path, device=cuda)
    except ValueError as e:
        check(name + " (refused when built)", True)
        return str(e)
    check(name + " (refused when built)", False, "built")
    return ""


def one_op(observer, reservation=need):
    with observer(reservation):
        return list(cuda.run(sdxl, "decode", "fp16", 512, 512))


# A notes file without a final line end: refused, not one byte cut.
notes = os.path.join(work, "notes.txt")
with open(notes, "wb") as f:
    f.write(b"first line\nlast line, no newline")
before = bytes_of(notes)
refused_at_setup("notes file", notes)
check("notes file unchanged", bytes_of(notes) == before)

# A binary file of 100 kB.
blob = os.path.join(work, "blob.bin")
with open(blob, "wb") as f:
    f.write(bytes(range(256)) * 400)
before = bytes_of(blob)
refused_at_setup("binary file", blob)
check("binary file unchanged", bytes_of(blob) == before)

# A link to a real observation file, and a dangling link.
own = os.path.join(work, "own.csv")
good = vramfit_vae.Observer(own, device=cuda)
one_op(good)
check("own file written", bytes_of(own).startswith(header) and bytes_of(own).count(b"\n") == 2, bytes_of(own)[:80])
link = os.path.join(work, "link.csv")
os.symlink(own, link)
before = bytes_of(own)
words = refused_at_setup("link", link)
check("link named by its file name alone", work not in words, words)
check("link's target unchanged", bytes_of(own) == before)
dangling = os.path.join(work, "dangling.csv")
os.symlink(os.path.join(work, "target-never.csv"), dangling)
refused_at_setup("dangling link", dangling)
check("dangling link's target not created", not os.path.exists(os.path.join(work, "target-never.csv")))

# A FIFO and a device: refused at once, never opened for writing.
fifo = os.path.join(work, "pipe")
os.mkfifo(fifo)
refused_at_setup("FIFO", fifo)
refused_at_setup("device", "/dev/null")
refused_at_setup("folder", work)

# A torn last row of its own file is cut; the rows before it stay.
torn = os.path.join(work, "torn.csv")
t = vramfit_vae.Observer(torn, device=cuda)
one_op(t)
whole = bytes_of(torn)
with open(torn, "ab") as f:
    f.write(b"o-torn-row,half")
one_op(t)
after = bytes_of(torn)
check("torn row cut, rows kept", after.startswith(whole) and b"o-torn-row" not in after and after.count(b"\n") == 3,
      after[-200:])

# Replaced after the observer was set up by a file it did not write: the op's result stands, the row is dropped,
# the file is left as it is, one log line names it without its folder.
swapped = os.path.join(work, "swapped.csv")
s = vramfit_vae.Observer(swapped, device=cuda)
with open(swapped, "wb") as f:
    f.write(b"someone else's notes\n")
before = bytes_of(swapped)
del log_lines[:]
result = one_op(s)
check("op result returned", result == list(cuda.run(sdxl, "decode", "fp16", 512, 512)))
check("replaced file unchanged", bytes_of(swapped) == before)
check("row dropped", s.counts["dropped"] == 1 and s.counts["rows"] == 0, s.counts)
check("one log line without a path", len(log_lines) == 1 and work not in log_lines[0], log_lines)

# coefficients= a path: no row and no log line holds it; the file is named by its digest.
coefficients = os.path.join(work, "my-coefficients.json")
shutil.copy(os.environ["VRAMFIT_COEFFICIENTS"], coefficients)
low = vramfit_vae.reserve("sdxl", "decode", 64, 64, dtype="fp16", os="linux", env={}, coefficients=coefficients)
rows = os.path.join(work, "rows.csv")
r = vramfit_vae.Observer(rows, device=cuda)
del log_lines[:]
with r(low):
    # Far more than a 64x64 decode reserves: an under-reservation, logged.
    list(cuda.run(sdxl, "decode", "fp16", 2048, 2048))
text = bytes_of(rows).decode()
check("row holds no path", work not in text and "my-coefficients" not in text, text[-400:])
check("row names the file by its digest", "sha256:" in text, text[-400:])
check("log line holds no path", log_lines and all(work not in line for line in log_lines), log_lines)

print(json.dumps({"failed": failed, "cases": cases[0]}))
