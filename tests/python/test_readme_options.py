"""README's table of session options says what `rlx options` says.

Every option that `rlx options` lists (its key, values, default and
environment variable, and its description, from src/base/options.c) has one
row in README.md's options table with the same environment variable, values,
default and description (the row may add a parenthesised note after it, such
as "(per process)"), and the table has no row for an option that does not
exist. The gpu.qgemm_tile row still described the variants before the
sixteenth session's tiles when this test was written."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
C = R.Checker("test_readme_options")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

p = subprocess.run([RLX, "options"], capture_output=True, text=True)
C.check(p.returncode == 0, "rlx options: rc %d %r" % (p.returncode, p.stderr))
# "key  type  values (default D; ENV)" then the description indented by 4
opts = {}
lines = p.stdout.split("\n")
for i, line in enumerate(lines[:-1]):
    m = re.match(r"^(\S+)\s+(\w+)\s+(.*?) \(default (.*?)(?:; (RLX_[A-Z0-9_]+))?\)( per process)?$", line)
    if m and lines[i + 1].startswith("    "):
        opts[m.group(1)] = {"values": m.group(3), "default": m.group(4), "env": m.group(5) or "",
                            "desc": lines[i + 1].strip()}
C.check(len(opts) >= 40, "parsed %d options from rlx options:\n%s" % (len(opts), p.stdout[:600]))

rows = {}
with open(os.path.join(ROOT, "README.md")) as f:
    for line in f:
        m = re.match(r"^\| `([a-z0-9_.]+)` \| `?([A-Z0-9_]*)`? \| (.*?) \| `?(.*?)`? \| (.*) \|$", line.rstrip("\n"))
        if m:
            C.check(m.group(1) not in rows, "README lists option %s twice" % m.group(1))
            rows[m.group(1)] = {"env": m.group(2), "values": m.group(3).replace("\\|", "|"), "default": m.group(4),
                                "desc": m.group(5).replace("\\|", "|")}

for k, o in sorted(opts.items()):
    r = rows.get(k)
    if not C.check(r is not None, "README's options table has no row for %s" % k):
        continue
    C.check(r["env"] == o["env"], "%s: README's environment variable %r, rlx options %r" % (k, r["env"], o["env"]))
    C.check(r["values"] == o["values"] or o["values"].startswith("<"),
            "%s: README's values %r, rlx options %r" % (k, r["values"], o["values"]))
    C.check(r["default"] == o["default"] or (o["default"] == "empty" and r["default"] in ('""', "")), "%s: README's default %r, rlx options %r" % (k, r["default"], o["default"]))
    C.check(r["desc"] == o["desc"] or (r["desc"].startswith(o["desc"]) and r["desc"][len(o["desc"]):].startswith(" (")),
            "%s: README's description differs from rlx options':\n  README: %s\n  rlx:    %s" % (k, r["desc"], o["desc"]))
for k in sorted(set(rows) - set(opts)):
    C.check(False, "README's options table lists %s, which rlx options does not" % k)
C.done()
