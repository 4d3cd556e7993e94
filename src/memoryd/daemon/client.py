"""The daemon's client: find it, start it on demand (exactly one per data home), talk to it. Standard library only.

A hook process imports this and nothing heavy (no pydantic, numpy or engine): a call is one HTTP/1.1
request over the daemon's Unix socket (`<home>/memoryd.sock`), with a timeout.

- Not running (no socket, or nobody listening): the caller takes `<home>/daemon.start.lock`, checks
  again, and starts `python -m memoryd.daemon serve` detached; a hundred callers at once end with one
  daemon (the lock serialises the starters; the daemon also holds `<home>/daemon.lock` for its life).
- Another memoryd version (`Memoryd-Version`, or settings: `Memoryd-Settings`, a digest of the
  `MEMORYD_*` environment) answers 409 `version_skew`: the client stops that daemon and starts its own.
- `DaemonUnavailable`: the daemon cannot run here (disabled with `MEMORYD_DAEMON=off`, a read-only home,
  a socket path too long, sockets forbidden, it died at start); the caller runs in-process instead.
- `DaemonError`: the daemon answered an error (its stable code and message), or the connection broke
  after the request was sent (`daemon_unreachable`: a write may or may not have been applied; never resent).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from pathlib import Path

TYPE_CHECKING = False  # not `typing`'s: its import costs a hook ~5 ms
if TYPE_CHECKING:
    import subprocess
    from typing import Any

__all__ = [
    "API",
    "Client",
    "DaemonError",
    "DaemonUnavailable",
    "Paths",
    "connect",
    "enabled",
    "home",
    "settings_digest",
]

API = 1
SOCKET_NAME = "memoryd.sock"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes on Linux, with its NUL
START_TIMEOUT = 20.0  # seconds a client waits for a daemon it started to listen
_OFF = ("0", "off", "false", "no")


def enabled() -> bool:
    """`MEMORYD_DAEMON=off` (or 0/false/no) keeps every surface in-process."""
    return os.environ.get("MEMORYD_DAEMON", "on").strip().lower() not in _OFF


def home() -> Path:
    """The data home (`memoryd.shared.home.data_home`, standard library only)."""
    from ..shared.home import data_home

    return data_home()


def settings_digest(environ: dict[str, str] | None = None) -> str:
    """A digest of the settings a daemon must share with its client: every `MEMORYD_*` variable but the
    daemon's own knobs (and the home, which picks the daemon). A client with other settings restarts it."""
    env = os.environ if environ is None else environ
    items = sorted((k, v) for k, v in env.items()
                   if k.startswith("MEMORYD_") and k != "MEMORYD_HOME" and not k.startswith("MEMORYD_DAEMON"))  # fmt: skip
    import zlib  # not hashlib: a hook pays for every import, and this only tells settings apart

    data = json.dumps(items).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def version() -> str:
    import memoryd

    return str(memoryd.__version__)


class Paths:
    """Where a data home keeps its daemon's files."""

    def __init__(self, root: Path) -> None:
        self.home = root
        self.socket = root / SOCKET_NAME
        if len(os.fsencode(str(self.socket))) > MAX_SOCKET_PATH:  # too long for sun_path: a short private one
            import hashlib

            digest = hashlib.sha256(os.fsencode(str(root.absolute()))).hexdigest()[:16]
            self.socket = Path(tempfile_dir()) / f"memoryd-{os.getuid()}" / f"{digest}.sock"
        self.info = root / "daemon.json"  # {"pid", "version", "api", "socket", "started_at"} while it listens
        self.lock = root / "daemon.lock"  # held by the running daemon for its whole life
        self.start_lock = root / "daemon.start.lock"  # held by a client while it starts one
        self.log = root / "daemon.log"


def tempfile_dir() -> str:
    """Where a socket goes when the home's path is too long: $XDG_RUNTIME_DIR, else /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return runtime if runtime and os.path.isdir(runtime) else "/tmp"  # noqa: S108 - a private 0700 subdirectory


def private_dir(path: Path) -> None:
    """Create `path` 0700 or check it is ours and private (a shared /tmp: another user may have planted it)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{path} is not a private directory of this user")


class DaemonUnavailable(Exception):
    """The daemon cannot run or be reached here; the message says why (the caller goes in-process)."""


class DaemonError(Exception):
    """The daemon answered an error, or the connection broke after the request was sent. `extra`: what the
    error carries besides its code and message (a rejection's `dura`)."""

    def __init__(self, status: int, code: str, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}


class _NotListening(Exception):
    """Nothing answered on the socket (no file, refused): the request was never sent."""


def _reap(proc: subprocess.Popen[bytes]) -> None:
    import threading

    threading.Thread(target=proc.wait, name="memoryd-daemon-reap", daemon=True).start()


def _exchange(path: str, request: bytes, timeout: float) -> tuple[int, bytes, dict[str, str]]:
    """One HTTP/1.1 request (`Connection: close`) on the Unix socket `path`: (status, body, headers).

    Hand-rolled rather than `http.client`, whose imports (email, ssl) cost a hook ~20 ms. Raises
    _NotListening (never sent), DaemonUnavailable (refused by permissions), TimeoutError, OSError, ValueError.
    """
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise _NotListening(str(exc)) from None
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
                raise _NotListening(str(exc)) from None
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise DaemonUnavailable(f"the daemon's socket {path} refused this user ({exc})") from None
            raise DaemonUnavailable(f"cannot connect to {path}: {exc}") from None
        sock.sendall(request)
        chunks: list[bytes] = []
        while True:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = sock.recv(262144)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    data = b"".join(chunks)
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("the answer ended before its headers did")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers and len(body) < int(headers["content-length"]):
        raise ValueError(f"the answer was cut short ({len(body)} of {headers['content-length']} bytes)")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    return status, body, headers


def _unchunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


class Client:
    """One data home's daemon. `client`: the `Memoryd-Client` provenance sent with every request."""

    def __init__(self, root: Path | None = None, *, client: dict[str, str] | None = None, autostart: bool = True,
                 start_timeout: float = START_TIMEOUT) -> None:  # fmt: skip
        self.paths = Paths(root if root is not None else home())
        self.client = client
        self.autostart = autostart
        self.start_timeout = start_timeout
        self.started = False  # this client started the daemon (a cold start)

    # -- requests ----------------------------------------------------------------------------------

    def headers(self, scope: dict[str, Any] | str | None) -> dict[str, str]:
        h = {"Host": "localhost", "Content-Type": "application/json", "Memoryd-Version": version(),
             "Memoryd-Settings": settings_digest()}  # fmt: skip
        if scope is not None:
            h["Memoryd-Scope"] = scope if isinstance(scope, str) else json.dumps(scope, ensure_ascii=True)
        if self.client:
            h["Memoryd-Client"] = json.dumps(self.client, ensure_ascii=True)
        return h

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
              timeout: float) -> tuple[int, bytes, dict[str, str]]:  # fmt: skip
        head = [f"{method} {path} HTTP/1.1", "Connection: close", f"Content-Length: {len(body or b'')}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        try:
            return _exchange(str(self.paths.socket), request, timeout)
        except TimeoutError:
            raise DaemonError(504, "timeout", f"the daemon did not answer {path} within {timeout:g} s") from None
        except (OSError, ValueError) as exc:
            raise DaemonError(
                502,
                "daemon_unreachable",
                f"the connection to the daemon broke before its answer to "
                f"{path} ({type(exc).__name__}: {exc}); the request may or may not have been applied",
            ) from None

    def raw(self, method: str, path: str, body: bytes | None = None, *, scope: dict[str, Any] | str | None = None,
            timeout: float = 30.0, extra: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:  # fmt: skip
        """One request, starting (or restarting, on version skew) the daemon when needed; the raw answer."""
        deadline = time.monotonic() + timeout
        headers = {**self.headers(scope), **(extra or {})}
        for attempt in range(3):
            left = max(0.05, deadline - time.monotonic())
            try:
                status, data, rh = self._send(method, path, body, headers, left)
            except _NotListening:
                if not self.autostart or attempt == 2:
                    raise DaemonUnavailable(f"no daemon is listening on {self.paths.socket}") from None
                self.start(deadline)
                continue
            if status == 409 and _code(data) == "version_skew" and attempt < 2 and self.autostart:
                self.restart(deadline)
                continue
            return status, data, rh
        raise DaemonUnavailable("the daemon could not be reached after starting it")  # pragma: no cover

    def call(self, path: str, body: dict[str, Any] | None = None, *, scope: dict[str, Any] | str | None = None,
             timeout: float = 30.0, method: str = "POST") -> Any:  # fmt: skip
        """A JSON request; the JSON answer, or DaemonError with the daemon's code and message."""
        payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        status, data, _ = self.raw(method, path, payload, scope=scope, timeout=timeout)
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            raise DaemonError(
                status, "internal", f"the daemon answered {path} with something that is not JSON"
            ) from None
        if status >= 400:
            err = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(err, dict):
                extra = {k: v for k, v in err.items() if k not in ("code", "message")}
                raise DaemonError(status, str(err.get("code", "internal")), str(err.get("message", "")), extra)
            raise DaemonError(status, "internal", f"HTTP {status}")
        return answer

    def health(self, timeout: float = 2.0, *, strict: bool = False) -> dict[str, Any] | None:
        """The running daemon's health, or None when none listens (never starts one). `strict`: one that listens
        but does not answer in time raises DaemonError (else None)."""
        try:
            status, data, _ = self._send("GET", "/v1/health", None, {"Host": "localhost"}, timeout)
        except (_NotListening, DaemonUnavailable):
            return None
        except DaemonError:
            if strict:
                raise
            return None
        if status != 200:
            return None
        try:
            answer = json.loads(data)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    # -- starting and stopping ------------------------------------------------------------------------

    def _check_home(self) -> None:
        if not enabled():
            raise DaemonUnavailable("MEMORYD_DAEMON is off")
        if len(os.fsencode(str(self.paths.socket))) > MAX_SOCKET_PATH:
            raise DaemonUnavailable(f"the socket path {self.paths.socket} is longer than a Unix socket allows "
                                    f"({MAX_SOCKET_PATH} bytes); set XDG_RUNTIME_DIR to a short directory")  # fmt: skip
        try:
            self.paths.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot create the data home {self.paths.home}: {exc}") from None
        if not os.access(self.paths.home, os.W_OK | os.X_OK):
            raise DaemonUnavailable(f"the data home {self.paths.home} is not writable")
        if os.path.isdir(self.paths.socket):  # a daemon would only find it out after its start: say so now
            raise DaemonUnavailable(f"cannot create the socket {self.paths.socket}: a directory is in its place")

    def _start_lock(self, deadline: float, busy: str) -> int:
        """The start lock, held (the open descriptor: closing it releases the lock) once no other client
        holds it; DaemonUnavailable(`busy`) at `deadline`. Every start and restart happens under it."""
        import fcntl

        self._check_home()
        try:
            fd = os.open(self.paths.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot create {self.paths.start_lock}: {exc}") from None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise DaemonUnavailable(busy) from None
                time.sleep(0.02)

    def start(self, deadline: float | None = None) -> None:
        """Start the daemon unless one answers; returns once it listens. Raises DaemonUnavailable."""
        deadline = deadline if deadline is not None else time.monotonic() + self.start_timeout
        fd = self._start_lock(deadline, "another client is starting the daemon and it did not listen in time")
        try:
            if self.health(timeout=max(0.1, min(2.0, deadline - time.monotonic()))) is not None:
                return  # another client started it while this one waited
            self._spawn(deadline)
        finally:
            os.close(fd)  # releases the lock

    def _spawn(self, deadline: float) -> None:
        log = self.paths.log
        try:
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot write the daemon log {log}: {exc}") from None
        size = os.fstat(out).st_size
        import subprocess

        try:
            proc = subprocess.Popen([sys.executable, "-m", "memoryd.daemon", "serve"], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=out, cwd=str(self.paths.home), close_fds=True,
                                    start_new_session=True, env={**os.environ, "MEMORYD_HOME": str(self.paths.home)})  # fmt: skip
        except OSError as exc:
            raise DaemonUnavailable(f"cannot start the daemon: {exc}") from None
        finally:
            os.close(out)
        _reap(proc)
        self.started = True
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise DaemonUnavailable(
                    f"the daemon exited at start ({_last_line(log, size) or f'code {proc.returncode}'})"
                )
            if self.health(timeout=1.0) is not None:
                return
            time.sleep(0.01)
        raise DaemonUnavailable(f"the daemon did not listen within the time left ({_last_line(log, size) or 'no log'})")

    def stop(self, timeout: float = 10.0) -> int | None:
        """Ask the running daemon to exit and wait until it has; its pid, or None when none was running."""
        info = self.health(timeout=2.0)
        if info is None:
            return None
        pid = int(info.get("pid", 0))
        try:
            self._send("POST", "/v1/shutdown", b"{}", {"Host": "localhost", "Content-Type": "application/json"}, 5.0)
        except (_NotListening, DaemonError):
            pass
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not _alive(pid) and self.health(timeout=0.5) is None:
                return pid
            time.sleep(0.02)
        return pid

    def restart(self, deadline: float) -> None:
        """Stop the daemon of another version (under the start lock) and start this one's."""
        fd = self._start_lock(deadline, "another client is restarting the daemon")
        try:
            info = self.health(timeout=2.0)
            if info is not None and info.get("version") == version() and info.get("settings") == settings_digest():
                return  # another client restarted it already
            if info is not None:
                self.stop(timeout=max(1.0, deadline - time.monotonic()))
            self._spawn(deadline)
        finally:
            os.close(fd)


def connect(*, start: bool, client: dict[str, str] | None = None, deadline: float | None = None,
            lazy: bool = False) -> Client:  # fmt: skip
    """THE choice every local surface makes between the resident daemon and its own process: a client of this data
    home's daemon, or DaemonUnavailable (saying why) to run in-process.

    `start` (hooks, `memoryd-mcp`): a daemon that does not run is started, one of another version or settings
    restarted, by `deadline` (time.monotonic(); default START_TIMEOUT from now). Without (the CLI, `memoryd
    ui`): only a daemon that runs already with this version and settings, left as it is otherwise. Raises
    DaemonUnavailable when MEMORYD_DAEMON is off, none runs (without `start`), or it cannot run here.
    `lazy` (with `start`; a hook, whose every millisecond counts): no health check first, the first request
    starts or restarts it (`Client.raw`), raising DaemonUnavailable there.
    """
    if not enabled():
        raise DaemonUnavailable("MEMORYD_DAEMON is off")
    c = Client(client=client, autostart=start)
    if start and lazy:
        return c
    end = deadline if deadline is not None else time.monotonic() + c.start_timeout
    try:
        info = c.health(timeout=max(0.05, min(2.0, end - time.monotonic())), strict=True)
    except DaemonError as exc:  # it listens but does not answer: a caller that may wait finds out within its time
        if start:
            return c
        raise DaemonUnavailable(f"the daemon does not answer ({exc.message})") from None
    current = info is not None and info.get("version") == version() and info.get("settings") == settings_digest()
    if current:
        return c
    if not start:
        raise DaemonUnavailable("no daemon of this version and settings runs for this data home" if info is not None
                                else f"no daemon is listening on {c.paths.socket}")  # fmt: skip
    if info is None:
        c.start(end)
    else:
        c.restart(end)
    return c


def _code(data: bytes) -> str | None:
    try:
        err = json.loads(data).get("error")
    except (ValueError, AttributeError):
        return None
    return err.get("code") if isinstance(err, dict) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child, not reaped yet) is gone for this purpose
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _last_line(log: Path, since: int) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(since)
            lines = [x for x in fh.read().decode("utf-8", "replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:500] if lines else ""
