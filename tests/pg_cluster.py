"""A private PostgreSQL cluster for the history tests and benchmark: initdb into a temporary
directory, pg_ctl start on a Unix socket in that directory (no TCP port: nothing listens beyond this
machine, and no other test's port can clash), one database, stopped and removed at the end.

Debian's `postgresql` package (`.ci/run` installs it) has the binaries under
/usr/lib/postgresql/<version>/bin. initdb refuses to run as root, so as root the cluster runs as the
package's `postgres` user (runuser), and its directory is handed to that user.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "postgres"


def bin_dir() -> Path | None:
    """The directory of initdb, pg_ctl and createdb, or None where PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl") and Path(found).resolve().parent.joinpath("createdb").exists():
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def missing() -> str | None:
    """Why a private cluster cannot be started here, or None."""
    if bin_dir() is None:
        return "PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run installs it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return f"running as root, and there is no {USER!r} user to run the cluster as (initdb refuses root)"
        if shutil.which("runuser") is None:
            return "running as root without runuser to start the cluster as another user"
    return None


class Cluster:
    def __init__(self, database: str = "history", settings: tuple[str, ...] = ()):
        self.bin = bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="aclnn-pg-"))
        self.data, self.socket = self.root / "data", self.root / "run"
        self.socket.mkdir()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            user = pwd.getpwnam(USER)
            for path in (self.root, self.socket):
                os.chown(path, user.pw_uid, user.pw_gid)
        self.database = database
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-instructions")
        options = f"-k {self.socket} -c listen_addresses='' -c max_connections=40 " + " ".join(f"-c {s}" for s in settings)
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "-t", "60", "start")
        self.started = True
        self._run("createdb", "-h", str(self.socket), "-U", USER, database)

    def _run(self, tool: str, *args: str) -> str:
        cmd = [str(self.bin / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.root)
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
        return proc.stdout

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@/{self.database}?host={self.socket}"

    def stop(self) -> None:
        if getattr(self, "started", False):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)
