#!/usr/bin/python
# Checks, as root, what the service user will be able to read: from owners, groups, mode bits and
# POSIX ACLs, never os.access (that answers for the real uid, root). Stdlib and module_utils only.
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_weights_readable
short_description: Check that a user can reach and read every file of model directories
description:
  - Read-only. Walks each directory of O(paths) and decides, from owners, groups, mode bits and
    POSIX access ACLs, whether O(user) can enter every directory on the way (x on each ancestor),
    list every directory of the tree (r and x) and read every file (r). It runs as root, so it never
    asks the kernel (C(os.access) answers for root); it computes the answer for the user's uid and
    all of its groups instead.
  - Symlinks are followed the way the kernel does (Hugging Face snapshots are symlinks into
    C(blobs/)), so the directories on the way to a link's target must be enterable as well.
  - "Stops at the FIRST path the user cannot pass and names it, why (mode, owner, the user's uid and
    groups) and the fixes - the exact C(chmod) or C(setfacl), moving the weights, or running the
    server as root (C(sglang_server_user: root))."
  - The user may not exist yet (roles create it after their preflight). It is then checked as a new
    user that owns no file, with the gids of O(group) and O(groups) that exist already, and the
    result says so.
  - uid 0 passes every permission check; a missing path, a broken symlink or a symlink loop still
    fails.
  - Honoured - mode bits and POSIX access ACLs (C(system.posix_acl_access)). Ignored - capabilities
    the service might be given, SELinux and AppArmor, mount options, and systemd sandboxing
    (the sglang_server unit uses neither ProtectHome nor InaccessiblePaths).
  - Never reports C(changed).
version_added: "0.1.0"
author:
  - sglang-specbench project
options:
  paths:
    description:
      - Model directories (or single files) to check, in order. Every regular file below a
        directory is checked, symlinks followed; sockets, FIFOs and devices are skipped.
    type: list
    elements: path
    required: true
  user:
    description: The user the server runs as.
    type: str
    required: true
  group:
    description:
      - The group the server runs as (systemd C(Group=)); its supplementary groups are the user's
        memberships (C(initgroups)). Defaults to the user's primary group.
      - For a user that does not exist yet, its only group when it exists already.
    type: str
  groups:
    description:
      - Supplementary groups the user will be given before the server starts (the roles add the GPU
        device groups); those that do not exist are skipped.
    type: list
    elements: str
    default: []
  fail_on_unreadable:
    description:
      - Fail with the message when something cannot be read. V(false) returns it in C(problems)
        instead, for a preflight that reports every finding at once.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - Stops at the first problem, so a fix may reveal the next one; the suggested C(chmod -R) and
    C(setfacl -R) fix a whole tree at once.
"""

EXAMPLES = r"""
- name: Check the service user can read the weights
  sglang_weights_readable:
    paths: [/srv/models/target, /srv/models/drafter]
    user: sglang
    group: sglang
    groups: [video, render]

- name: Collect the finding instead of failing
  sglang_weights_readable:
    paths: [/root/models/Kimi-K2.6]
    user: sglang
    fail_on_unreadable: false
  register: weights
"""

RETURN = r"""
readable:
  description: Whether the user can read everything under every path.
  type: bool
  returned: always
msg:
  description: One sentence - what was checked, or the first unreadable path, why, and the fixes.
  type: str
  returned: always
  sample: >-
    sglang cannot read the model /root/models/Kimi-K2.6: /root is mode 0700 owner root:root:
    user sglang (uid 998, groups sglang,video) cannot enter it. Fix one of ...
problems:
  description: The message as a one-element list when something is unreadable, else empty.
  type: list
  elements: str
  returned: always
problem:
  description: The first unreadable path, or null.
  type: dict
  returned: always
  contains:
    path: {description: The path the user cannot pass., type: str}
    kind: {description: "enter, list, read, missing, not_directory, loop or error.", type: str}
    root: {description: The entry of O(paths) being checked., type: str}
    via: {description: "The symlink it came through (C(link -> target)) or empty.", type: str}
    mode: {description: Its permission bits in octal (empty when it has none)., type: str}
    owner: {description: Owner name (or uid)., type: str}
    group: {description: Group name (or gid)., type: str}
    acl: {description: Whether it has a POSIX access ACL., type: bool}
    fixes: {description: "The fixes, one sentence each.", type: list, elements: str}
files_checked:
  description: Regular files found readable (all of them when readable is true).
  type: int
  returned: always
fingerprints:
  description:
    - Per entry of O(paths) read whole, a SHA-256 over the relative name, size and modification
      time (ns) of every regular file below it, symlinks followed. Cheap (no file is read) and
      changes when a file is replaced, added, removed or rewritten. A sweep uses it as the model's
      identity when deciding whether an earlier measurement still applies.
    - An entry with an unreadable path is left out.
  type: dict
  returned: always
  sample: {/srv/models/target: 3f2a...}
user:
  description: Who was checked - name, exists, uid (null when it does not exist yet), gids, groups.
  type: dict
  returned: always
  sample: {name: sglang, exists: true, uid: 998, gids: [998, 44], groups: [sglang, video]}
"""

import grp
import hashlib
import os
import pwd
import stat
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.basic import AnsibleModule

R = 4  # permission bits as in a mode class
X = 1
# No file is owned by this uid (it is (uid_t)-1): a user that does not exist yet owns nothing.
NO_UID = -1
MAX_SYMLINKS = 40  # the kernel's limit before ELOOP
ACL_XATTR = "system.posix_acl_access"
# ACL entry tags (linux/posix_acl_xattr.h)
ACL_USER_OBJ = 0x01
ACL_USER = 0x02
ACL_GROUP_OBJ = 0x04
ACL_GROUP = 0x08
ACL_MASK = 0x10
ACL_OTHER = 0x20
PERMISSION_KINDS = ("enter", "list", "read")

ARGUMENT_SPEC: dict[str, Any] = {
    "paths": {"type": "list", "elements": "path", "required": True},
    "user": {"type": "str", "required": True},
    "group": {"type": "str"},
    "groups": {"type": "list", "elements": "str", "default": []},
    "fail_on_unreadable": {"type": "bool", "default": True},
}

Acl = tuple[tuple[int, int, int], ...]  # (tag, perm, id) entries


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str  # enter | list | read | missing | not_directory | loop | error
    root: str
    via: str = ""
    st: os.stat_result | None = None
    acl: bool = False
    detail: str = ""


@dataclass
class Scan:
    problem: Problem | None
    files_checked: int
    fingerprints: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Identity:
    name: str
    exists: bool
    uid: int
    gids: frozenset[int] = field(default_factory=frozenset)

    def as_dict(self) -> dict[str, Any]:
        gids = sorted(self.gids)
        return {
            "name": self.name,
            "exists": self.exists,
            "uid": self.uid if self.exists else None,
            "gids": gids,
            "groups": [group_name(g) for g in gids],
        }


def parse_acl(raw: bytes) -> Acl | None:
    """The entries of a system.posix_acl_access value (version 2), or None when it is not one."""
    if len(raw) < 4 or struct.unpack_from("<I", raw)[0] != 2 or (len(raw) - 4) % 8:
        return None
    return tuple(struct.unpack_from("<HHI", raw, off) for off in range(4, len(raw), 8))


def read_acl(path: str) -> Acl | None:
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        return parse_acl(getxattr(path, ACL_XATTR, follow_symlinks=False))
    except OSError:  # ENODATA (no ACL), ENOTSUP (filesystem without ACLs)
        return None


def permits(st: os.stat_result, acl: Acl | None, uid: int, gids: frozenset[int], want: int) -> bool:
    """Whether uid with gids gets `want` (r=4, x=1) on st, in the kernel's order, ACLs included."""
    if uid == 0:
        return True
    mode = st.st_mode
    if st.st_uid == uid:
        return (mode >> 6) & want == want
    if acl:
        mask = next((perm for tag, perm, _ in acl if tag == ACL_MASK), 7)
        for tag, perm, ident in acl:
            if tag == ACL_USER and ident == uid:
                return perm & mask & want == want
        in_group = False
        for tag, perm, ident in acl:
            if (tag == ACL_GROUP_OBJ and st.st_gid in gids) or (tag == ACL_GROUP and ident in gids):
                in_group = True
                if perm & mask & want == want:
                    return True
        if in_group:
            return False
        other = next((perm for tag, perm, _ in acl if tag == ACL_OTHER), mode & 7)
        return other & want == want
    if st.st_gid in gids:
        return (mode >> 3) & want == want
    return mode & want == want


class _Walker:
    """Resolves paths component by component like the kernel, checking each lookup for one user."""

    def __init__(self, uid: int, gids: Iterable[int]) -> None:
        self.uid = uid
        self.gids = frozenset(gids)
        self.files = 0
        self._lstat: dict[str, os.stat_result] = {}
        self._acl: dict[str, Acl | None] = {}

    def lstat(self, path: str) -> os.stat_result:
        if path not in self._lstat:
            self._lstat[path] = os.lstat(path)
        return self._lstat[path]

    def acl(self, path: str) -> Acl | None:
        if path not in self._acl:
            self._acl[path] = read_acl(path)
        return self._acl[path]

    def denied(
        self, path: str, st: os.stat_result, want: int, kind: str, root: str, via: str
    ) -> Problem | None:
        acl = None if self.uid == 0 else self.acl(path)
        if permits(st, acl, self.uid, self.gids, want):
            return None
        return Problem(path, kind, root, via, st, acl is not None)

    def resolve(self, path: str, root: str) -> tuple[str, os.stat_result, str] | Problem:
        """The real path, stat and last symlink (link -> target) of `path` as the user would reach
        it, or why it cannot."""
        parts = [p for p in reversed(path.split("/")) if p]  # a stack: next component last
        cur, via, links = "/", "", 0
        try:
            st = self.lstat(cur)
            while parts:
                name = parts.pop()
                if name == ".":
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    return Problem(cur, "not_directory", root, via, st)
                problem = self.denied(cur, st, X, "enter", root, via)
                if problem:
                    return problem
                if name == "..":
                    cur = os.path.dirname(cur)
                    st = self.lstat(cur)
                    continue
                nxt = os.path.join(cur, name)
                try:
                    nst = self.lstat(nxt)
                except FileNotFoundError:
                    return Problem(nxt, "missing", root, via)
                if stat.S_ISLNK(nst.st_mode):
                    links += 1
                    if links > MAX_SYMLINKS:
                        return Problem(nxt, "loop", root, via)
                    target = os.readlink(nxt)
                    via = f"{nxt} -> {target}"
                    parts.extend(p for p in reversed(target.split("/")) if p)
                    if target.startswith("/"):
                        cur, st = "/", self.lstat("/")
                    continue
                cur, st = nxt, nst
        except OSError as exc:
            return Problem(exc.filename or cur, "error", root, via, detail=exc.strerror or str(exc))
        return cur, st, via

    def tree(self, root: str) -> Problem | str:
        """Checks root and, when it is a directory, everything below it (depth first, sorted);
        its fingerprint when every file is readable."""
        seen: set[tuple[int, int]] = set()
        stack = [root]
        digest = hashlib.sha256()
        while stack:
            path = stack.pop()
            found = self.resolve(path, root)
            if isinstance(found, Problem):
                return found
            real, st, via = found
            if stat.S_ISREG(st.st_mode):
                problem = self.denied(real, st, R, "read", root, via)
                if problem:
                    return problem
                self.files += 1
                name = os.path.relpath(path, root)
                digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            elif stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:  # a symlink back up the tree
                    continue
                seen.add((st.st_dev, st.st_ino))
                problem = self.denied(real, st, R | X, "list", root, via)
                if problem:
                    return problem
                try:
                    names = sorted(os.listdir(real), reverse=True)
                except OSError as exc:
                    return Problem(real, "error", root, detail=exc.strerror or str(exc))
                stack.extend(os.path.join(path, n) for n in names)
        return digest.hexdigest()


def scan(paths: Sequence[str], uid: int, gids: Iterable[int]) -> Scan:
    """The first path of `paths` (trees, in order) that uid with gids cannot read, and the count."""
    walker = _Walker(uid, gids)
    fingerprints: dict[str, str] = {}  # by the path as given
    for path in paths:
        found = walker.tree(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))
        if isinstance(found, Problem):
            return Scan(found, walker.files, fingerprints)
        fingerprints[path] = found
    return Scan(None, walker.files, fingerprints)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def gid_of(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def identity(user: str, group: str | None = None, groups: Sequence[str] = ()) -> Identity:
    """Who the server will run as: its uid and every gid it will hold once the role has run."""
    extra = {g for g in (gid_of(n) for n in groups) if g is not None}
    primary = gid_of(group) if group else None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        own = {primary} if primary is not None else set()
        return Identity(user, False, NO_UID, frozenset(extra | own))
    base = primary if primary is not None else entry.pw_gid
    return Identity(user, True, entry.pw_uid, frozenset(os.getgrouplist(user, base)) | extra)


def describe_user(who: Identity) -> str:
    names = ",".join(group_name(g) for g in sorted(who.gids)) or "none"
    if who.exists:
        return f"user {who.name} (uid {who.uid}, groups {names})"
    return f"user {who.name} (does not exist yet: checked as a new user with groups {names})"


def fixes(problem: Problem, who: Identity) -> list[str]:
    if problem.kind == "error":
        return ["run the check as root (become: true) and make sure the path is intact"]
    if problem.kind not in PERMISSION_KINDS:
        return ["restore the file or repair the symlink (root cannot read it either)"]
    later = "" if who.exists else ", once the user exists"
    if problem.kind == "enter":
        chmod = f"chmod o+x {problem.path}"
        acl = f"setfacl -m u:{who.name}:x {problem.path}"
    else:
        root_real = os.path.realpath(problem.root)
        inside = problem.path == root_real or problem.path.startswith(root_real.rstrip("/") + "/")
        scope = problem.root if inside else problem.path
        if problem.kind == "read" and not inside:
            scope = os.path.dirname(problem.path)
        chmod = f"chmod -R o+rX {scope}"
        acl = f"setfacl -R -m u:{who.name}:rX {scope}"
    out = [f"loosen the permissions: {chmod} (or, for this user only: {acl}{later})"]
    if problem.kind == "enter":
        out.append("move the weights to a directory every user can enter (e.g. under /srv/models)")
    out.append("run the server as root (sglang_server_user: root)")
    return out


def reason(problem: Problem, who: Identity) -> str:
    path = problem.path
    through = f" (reached through the symlink {problem.via})" if problem.via else ""
    if problem.kind in PERMISSION_KINDS and problem.st is not None:
        st = problem.st
        acl = " with an ACL" if problem.acl else ""
        verb = {"enter": "enter", "list": "list (needs r and x)", "read": "read"}[problem.kind]
        owner = f"{user_name(st.st_uid)}:{group_name(st.st_gid)}"
        return (
            f"{path}{through} is mode {stat.S_IMODE(st.st_mode):04o}{acl} owner {owner}:"
            f" {describe_user(who)} cannot {verb} it"
        )
    what = {
        "missing": "does not exist",
        "not_directory": "is not a directory but a path goes through it",
        "loop": f"has more than {MAX_SYMLINKS} levels of symbolic links",
    }.get(problem.kind, f"cannot be checked ({problem.detail})")
    return f"{path}{through} {what}"


def message(problem: Problem, who: Identity, files_checked: int) -> str:
    return (
        f"{who.name} cannot read the model {problem.root}: {reason(problem, who)}."
        f" Fix one of: {'; or '.join(fixes(problem, who))}."
        f" ({files_checked} file{'' if files_checked == 1 else 's'} readable before it.)"
    )


def problem_dict(problem: Problem, who: Identity) -> dict[str, Any]:
    st = problem.st
    return {
        "path": problem.path,
        "kind": problem.kind,
        "root": problem.root,
        "via": problem.via,
        "mode": f"{stat.S_IMODE(st.st_mode):04o}" if st else "",
        "owner": user_name(st.st_uid) if st else "",
        "group": group_name(st.st_gid) if st else "",
        "acl": problem.acl,
        "fixes": fixes(problem, who),
    }


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    who = identity(p["user"], p["group"], p["groups"])
    result = scan(p["paths"], who.uid, who.gids)
    out: dict[str, Any] = {
        "changed": False,
        "readable": result.problem is None,
        "files_checked": result.files_checked,
        "user": who.as_dict(),
        "problem": None,
        "problems": [],
        "fingerprints": result.fingerprints,
    }
    if result.problem is None:
        out["msg"] = (
            f"{describe_user(who)} can read all {result.files_checked} files"
            f" of {', '.join(p['paths']) or 'no paths'}."
        )
        module.exit_json(**out)
    msg = message(result.problem, who, result.files_checked)
    out.update(msg=msg, problem=problem_dict(result.problem, who), problems=[msg])
    if p["fail_on_unreadable"]:
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
