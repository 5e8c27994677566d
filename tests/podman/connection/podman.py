# The test and demo hosts' connection (ansible.cfg, .config/molecule: connection plugin path):
# containers.podman.podman with pipelining. Its upstream plugin never passes `podman exec -i`, so
# a module sent on stdin would not arrive, and it turns pipelining off; with -i it works, and each
# task then costs one `podman exec` instead of three (temporary directory, module, clean-up).
# Starting podman is what a test task mostly spends its CPU on, on these 2-core machines, so even
# that one is shared: commands go through one long-lived `podman exec` per container
# (tests/podman/mux.py), and the container is mounted only for a file copied. Loading it also
# makes the modules cheaper in this ansible process, tasks on the controller included: their
# payloads carry bytecode (compile_module_payloads) and, within one scripts/molecule-all.sh run,
# are built once for every process (share_module_cache).
# Ansible reads DOCUMENTATION from the source before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = """
    name: podman
    short_description: containers.podman.podman with pipelining (molecule test hosts)
    description:
        - The upstream podman connection plugin, with stdin forwarded (C(podman exec -i)) so that
          Ansible can pipeline modules.
    options:
      remote_addr:
        description: The ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: User inside the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to pass to the podman command line.
        default: ''
        ini:
          - section: defaults
            key: podman_extra_args
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: Executable for podman command.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description: Send modules on stdin instead of copying them into the container.
        default: true
        type: boolean
        env:
          - name: ANSIBLE_PIPELINING
        vars:
          - name: ansible_pipelining
"""

import base64
import importlib.util
import io
import os
import re
import shlex
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.executor import module_common
from ansible.module_utils.common.process import get_bin_path
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import (
    Connection as PodmanConnection,
)

# tests/podman/mux.py: one `podman exec` per container, shared by every task (a plugin directory
# holds plugins only, so it is loaded from its path). ANSIBLE_PODMAN_MUX=0 turns it off.
_spec = importlib.util.spec_from_file_location(
    "podman_mux", Path(__file__).resolve().parent.parent / "mux.py"
)
assert _spec is not None and _spec.loader is not None
mux = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mux)


def share_module_cache(local_tmp: str, shared: str | None) -> bool:
    """Point this ansible process's AnsiballZ cache (`local_tmp`/ansiballz_cache) at `shared`.

    Every ansible-playbook process builds each module's zip again in a cache of its own, and the
    build's import scan is the largest CPU cost of a test task after starting podman. Ansible keys
    that cache by module name alone, not by contents, so it may be shared only where the sources
    cannot change under it: scripts/molecule-all.sh hands each run a directory of its own
    (ANSIBLE_TEST_MODULE_CACHE) and removes it at the end. Ansible's own clean-up of `local_tmp`
    removes the link, not what it points to. False where nothing is shared: no directory given, or
    this process built into a cache of its own first (a task on the controller before any here).
    """
    if not shared:
        return False
    own = os.path.join(local_tmp, "ansiballz_cache")
    try:
        os.makedirs(shared, exist_ok=True)
        os.symlink(shared, own)
    except FileExistsError:
        pass
    except OSError:
        return False
    return os.path.realpath(own) == os.path.realpath(shared)


share_module_cache(C.DEFAULT_LOCAL_TMP, os.environ.get("ANSIBLE_TEST_MODULE_CACHE"))


def with_bytecode(zip_data: bytes) -> bytes:
    """An AnsiballZ payload (base64 of a zip) with every Python source in it compiled beside it.

    A module runs from its payload through zipimport, which compiles every source it imports at
    every run: for `stat`, about 0.15 of its 0.35 CPU-s. Each .py gets a .pyc beside it in the zip,
    unchecked hash-based (PEP 552: zipimport uses it as it is), compiled by this Python; a host
    whose Python reads another bytecode format ignores it and compiles the source as before.
    """
    src = zipfile.ZipFile(io.BytesIO(base64.b64decode(zip_data)))
    names = set(src.namelist())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data)
            if info.filename.endswith(".py") and info.filename + "c" not in names:
                try:
                    code = compile(data, info.filename, "exec", dont_inherit=True)
                except SyntaxError:
                    continue
                pyc = zipfile.ZipInfo(info.filename + "c", info.date_time)
                pyc.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(pyc, _code_to_hash_pyc(code, importlib.util.source_hash(data), False))
    return base64.b64encode(out.getvalue())


def compile_module_payloads(enabled: bool) -> bool:
    """Have this ansible process build its AnsiballZ payloads with bytecode (with_bytecode): the
    cache Ansible keeps of each module's payload is made here (module_common._CachedModule), so a
    payload is compiled once per run of the cache (share_module_cache), not at every task. Test
    hosts only: this plugin is the demo's and the test hosts' connection alone."""
    cached = module_common._CachedModule
    if not enabled or getattr(cached.__init__, "compiled", False):
        return False
    init = cached.__init__

    def __init__(self: Any, *, zip_data: bytes, **rest: Any) -> None:
        init(self, zip_data=with_bytecode(zip_data), **rest)

    __init__.compiled = True  # type: ignore[attr-defined]
    # the class stays Ansible's own, so that its cache files unpickle anywhere
    cached.__init__ = __init__
    return True


compile_module_payloads(os.environ.get("ANSIBLE_TEST_MODULE_BYTECODE", "1") != "0")


class Connection(PodmanConnection):
    transport = "podman"
    has_pipelining = True

    def _connect(self) -> Connection:
        # Upstream mounts the container's filesystem at every task's connect, for put_file and
        # fetch_file alone: a second podman start per task. Pipelined modules need no mount, so it
        # waits for the first file copied (_mounted).
        super(PodmanConnection, self)._connect()
        self._connected = True
        self._mount_tried = False
        return self

    def _mounted(self) -> None:
        if not self._mount_tried:
            self._mount_tried = True
            super()._connect()

    @ensure_connect
    def put_file(self, in_path: str, out_path: str) -> None:
        self._mounted()
        super().put_file(in_path, out_path)

    @ensure_connect
    def fetch_file(self, in_path: str, out_path: str) -> None:
        self._mounted()
        super().fetch_file(in_path, out_path)

    @ensure_connect
    def exec_command(self, cmd: str, in_data: bytes | None = None, sudoable: bool = False) -> Any:
        super(PodmanConnection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        exec_args = ["exec"]
        if in_data is not None:
            exec_args.append("-i")
        if self.user:
            exec_args.extend(("--user", self.user))
        args = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        if not self.user and os.environ.get("ANSIBLE_PODMAN_MUX", "1") != "0":
            podman = [get_bin_path(self.get_option("podman_executable"))]
            podman += shlex.split(self.get_option("podman_extra_args") or "")
            try:
                done = mux.run_command(podman, self._container_id, args, in_data)
            except mux.LostCommand as exc:
                raise AnsibleConnectionFailure(str(exc)) from exc
            if done is not None:
                return done
        rc, stdout, stderr = self._podman(exec_args, args, in_data)
        # A container that is gone is an unreachable host, as a dead host is over SSH (rc 255);
        # without pipelining the temporary directory's failure said so, with it nothing would.
        if rc in (125, 255) and re.search(rb"no such container|container state improper", stderr):
            raise AnsibleConnectionFailure(to_native(stderr.strip()))
        return rc, stdout, stderr
