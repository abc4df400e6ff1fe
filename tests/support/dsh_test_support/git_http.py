"""A real smart-HTTP git server on 127.0.0.1: ``git http-backend`` behind a tiny HTTP server.

Tests that exchange history through an ``https``/``http`` remote need a server that speaks
git's smart protocol, as a hosting service does. ``git http-backend`` is git's own CGI
program for exactly that; this module runs it per request from a threaded
``http.server``. Repositories are the bare repositories under ``project_root``; pushes are
allowed (``http.receivepack``), and the server can require HTTP basic credentials so a
test can prove a URL's password reaches git and nothing else.

Every request is logged (method, path, user, status, headers) so a test can assert what the client
asked for — a pull that should have talked to the server once, a push that must not
happen. Nothing here is ours under test: it only stands in for a hosting service.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


@dataclass
class Request:
    method: str
    path: str
    user: str | None
    status: int
    #: The request's headers (lower-case names), to tell what the client sent.
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class GitHttpServer:
    """A running server; ``url(name)`` is the clone URL of ``project_root/name``."""

    project_root: Path
    port: int
    credentials: tuple[str, str] | None
    requests: list[Request] = field(default_factory=list)

    def url(self, name: str, *, with_credentials: bool = False) -> str:
        userinfo = ""
        if with_credentials and self.credentials is not None:
            userinfo = f"{self.credentials[0]}:{self.credentials[1]}@"
        return f"http://{userinfo}127.0.0.1:{self.port}/{name}"


def _git_program() -> str:
    found = shutil.which("git")
    if found is None:
        raise RuntimeError("git is required")
    return found


def _handler(server_state: GitHttpServer, git: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: simplest for CGI

        def log_message(self, format: str, *args: object) -> None:
            return  # requests are recorded in server_state.requests instead

        def _user(self) -> str | bool | None:
            """The authenticated user; False when credentials are required and wrong."""
            header = self.headers.get("Authorization")
            expected = server_state.credentials
            if header is None or not header.startswith("Basic "):
                return False if expected is not None else None
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return False
            if expected is not None and (user, password) != expected:
                return False
            return user

        def _headers(self) -> dict[str, str]:
            return {name.lower(): value for name, value in self.headers.items()}

        def _serve(self) -> None:
            user = self._user()
            parts = urlsplit(self.path)
            if user is False:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                server_state.requests.append(
                    Request(self.command, parts.path, None, 401, self._headers())
                )
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(server_state.project_root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "REQUEST_METHOD": self.command,
                "PATH_INFO": parts.path,
                "QUERY_STRING": parts.query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            if isinstance(user, str):
                env["REMOTE_USER"] = user
            done = subprocess.run(
                [git, "-c", "http.receivepack=true", "http-backend"],
                input=body,
                capture_output=True,
                env=env,
                timeout=120,
                check=False,
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = done.stdout.partition(b"\n\n")
            status = 200
            headers: list[tuple[str, str]] = []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name.strip(), value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            shown = user if isinstance(user, str) else None
            server_state.requests.append(
                Request(self.command, parts.path, shown, status, self._headers())
            )

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

    return Handler


@contextmanager
def git_http_server(
    project_root: Path, *, credentials: tuple[str, str] | None = None
) -> Iterator[GitHttpServer]:
    """Serve the bare repositories under ``project_root`` until the block ends."""
    state = GitHttpServer(project_root=project_root, port=0, credentials=credentials)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, _git_program()))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, name="git-http", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
