"""Where does the API key appear on this host? Reads the key from stdin (never argv or the
environment, which /proc shows) and prints JSON: files holding it (path, octal mode, owner) and
processes whose command line holds it (redacted). real-sglang scenario, serve part."""

import glob
import json
import os
import pwd
import sys

key = sys.stdin.read().strip().encode()
# Ansible's own module files (this very task's arguments among them) live there while a task runs.
SKIP = ("/root/.ansible/tmp",)
files = []
for top in ("/etc", "/var", "/run", "/tmp", "/opt", "/srv", "/usr/local", "/root"):
    for root, dirs, names in os.walk(top):
        dirs[:] = [
            d
            for d in dirs
            if not os.path.islink(os.path.join(root, d)) and os.path.join(root, d) not in SKIP
        ]
        for name in names:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
                if not os.path.isfile(path) or os.path.islink(path) or st.st_size > 50_000_000:
                    continue
                with open(path, "rb") as f:
                    if key not in f.read():
                        continue
            except OSError:
                continue
            files.append([path, oct(st.st_mode & 0o777)[2:], pwd.getpwuid(st.st_uid).pw_name])
cmdlines = []
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        with open(path, "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        continue
    if any(key in w for w in words):
        cmdlines.append(b" ".join(words).replace(key, b"<KEY>").decode(errors="replace")[:300])
print(json.dumps({"files": files, "cmdlines": cmdlines}))
