"""The settings page's server: static page files plus ``POST /api/memory/<method>``.

Starlette (routing, requests, responses) under uvicorn (the HTTP server), both from the
``[ui]`` extra. The API is exactly the ``memory`` namespace (docs/compatibility/memory.md): each
call becomes
:meth:`MemoryService.call` on the root fixed when the server started; no endpoint takes a
path, a Git argument or a file name, and the page files are held in memory from start-up
(no request ever reaches the file system by name).

Every request passes :class:`_Guard` first (Host header), then the API checks the token and
the Origin before it looks at the method or the body, so a refused request changes nothing.
"""

from __future__ import annotations

import html
import os
import socket
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dsh_common.errors import shown
from dsh_common.jsonio import dumps, loads
from dsh_memory.errors import failed_envelope, render_error
from dsh_memory.service import MemoryService
from dsh_memory.ui.errors import UiInvalidRequestError, UiPortUnavailableError
from dsh_memory.ui.security import SECURITY_HEADERS, RequestGuard, new_token

#: The contract's ``memory`` namespace, and nothing else.
METHODS = frozenset(
    {
        "getSettings",
        "setEnabled",
        "status",
        "health",
        "clear",
        "legacyRecords",
        "migrateLegacy",
        "runs",
        "rollback",
        "previews",
        "applyPreview",
        "discardPreview",
        "search",
        "context",
    }
)
#: Methods that change memory or settings. Two tabs calling them at once must end in one
#: operation: the repository's operation lock already serialises processes, and this gate
#: answers a second concurrent request from the page at once instead of racing it.
WRITE_METHODS = frozenset(
    {"setEnabled", "clear", "migrateLegacy", "rollback", "applyPreview", "discardPreview"}
)
MAX_BODY_BYTES = 64 * 1024

_STATIC_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _json(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json")


def _refusal(status: int, code: str, message: str) -> Response:
    return _json(render_error(code, message), status)


def load_page_files() -> dict[str, tuple[bytes, str]]:
    """The page, read once from the package data (it ships inside the wheel)."""
    folder = resources.files("dsh_memory.ui").joinpath("static")
    return {
        route: (folder.joinpath(name).read_bytes(), media_type)
        for route, (name, media_type) in _STATIC_FILES.items()
    }


class _Guard:
    """ASGI wrapper: refuses a foreign Host on every request; adds the security headers."""

    def __init__(self, app: ASGIApp, guard: RequestGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets are not served at all

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode("latin-1") not in names
                ]
                headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS]
                message["headers"] = headers
            await send(message)

        headers = _header_map(scope)
        if not self.guard.host_allowed(headers):
            response = _refusal(
                403, "ui-forbidden-host", "the Host header does not name this server"
            )
            await response(scope, receive, send_secured)
            return
        await self.app(scope, receive, send_secured)


def _header_map(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it passes MAX_BODY_BYTES (read no further than that)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class MemoryApi:
    """The ``memory`` methods for the page, over one fixed root."""

    def __init__(self, service_factory: Callable[[], MemoryService], guard: RequestGuard) -> None:
        self.service_factory = service_factory
        self.guard = guard
        self._writer = threading.Lock()

    def dispatch(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One method call; a concurrent write answers ``operation-in-progress`` at once."""
        writes = method in WRITE_METHODS and not (
            method == "migrateLegacy" and params.get("dryRun") is True
        )
        if writes and not self._writer.acquire(blocking=False):
            return render_error(
                "operation-in-progress", "another change from this page is still running"
            )
        try:
            # A fresh service per call: last_error_message must not leak between requests.
            service = self.service_factory()
            envelope = service.call(method, params)
            if envelope.get("ok"):
                return envelope
            return failed_envelope(envelope, service.last_error_message)
        finally:
            if writes:
                self._writer.release()

    async def endpoint(self, request: Request) -> Response:
        headers = request.headers
        if not self.guard.token_valid(headers):
            return _refusal(403, "ui-forbidden-token", "a valid X-DSH-Token header is required")
        if not self.guard.origin_allowed(headers):
            return _refusal(403, "ui-forbidden-origin", "the request comes from another origin")
        method = request.path_params["method"]
        if method not in METHODS:
            return _refusal(404, "unknown-method", f"no memory method {shown(method)}")
        media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            return _refusal(415, "ui-invalid-request", "the body must be application/json")
        body = await _read_body(request)
        if body is None:
            return _refusal(413, "ui-invalid-request", f"the body passes {MAX_BODY_BYTES} bytes")
        try:
            params = loads(body, what="request body") if body.strip() else {}
        except (ValueError, UnicodeError):
            return _refusal(400, "ui-invalid-request", "the body is not valid JSON")
        if not isinstance(params, dict):
            return _refusal(400, "ui-invalid-request", "the body must be a JSON object")
        envelope = await run_in_threadpool(self.dispatch, method, params)
        return _json(envelope)


def create_app(service_factory: Callable[[], MemoryService], guard: RequestGuard) -> ASGIApp:
    """The whole ASGI application for one launch."""
    files = load_page_files()
    api = MemoryApi(service_factory, guard)

    async def page_file(request: Request) -> Response:
        body, media_type = files[request.url.path]
        return Response(body, media_type=media_type)

    async def not_allowed(request: Request) -> Response:
        return _refusal(405, "ui-invalid-request", "the memory API takes POST only")

    routes = [Route(path, page_file, methods=["GET", "HEAD"]) for path in files]
    routes.append(Route("/api/memory/{method}", api.endpoint, methods=["POST"]))
    routes.append(Route("/api/memory/{method}", not_allowed, methods=["GET", "HEAD", "PUT"]))
    app = Starlette(routes=routes)
    return _Guard(app, guard)


def bind_loopback(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0 picks a free one)."""
    if isinstance(port, bool) or not 0 <= port <= 65535:
        raise UiInvalidRequestError("--port must be from 0 to 65535")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise UiPortUnavailableError(f"127.0.0.1:{port} cannot be used: {exc}") from exc
    return sock


class UiServer:
    """One launch: socket, token, app and uvicorn server (``run`` blocks until stopped)."""

    def __init__(
        self, root: Path, settings_file: Path, *, port: int = 0, token: str | None = None
    ) -> None:
        self.root = root
        self.settings_file = settings_file
        self.socket = bind_loopback(port)
        self.port: int = self.socket.getsockname()[1]
        self.guard = RequestGuard(self.port, token or new_token())
        app = create_app(
            lambda: MemoryService(self.root, settings_file=self.settings_file), self.guard
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            proxy_headers=False,  # nobody stands between us and the browser
            server_header=False,
        )
        self.server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        return self.guard.page_url()

    def run(self) -> None:
        """Serve until Ctrl-C / SIGTERM (uvicorn stops gracefully) or :meth:`stop`."""
        try:
            self.server.run(sockets=[self.socket])
        except KeyboardInterrupt:
            pass  # uvicorn re-raises the captured SIGINT after a clean shutdown
        finally:
            self.socket.close()

    def stop(self) -> None:
        self.server.should_exit = True


def open_in_browser(url: str, folder: Path) -> Path:
    """Open ``url`` through an owner-only redirect file, as Jupyter does.

    ``webbrowser.open(url)`` would put the token on the browser's command line, where any
    local user can read it in the process list - and any local user can reach 127.0.0.1.
    The command line gets the path of a 0600 file in a 0700 folder instead.
    """
    escaped = html.escape(url, quote=True)
    page = (
        '<!doctype html><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={escaped}">'
        f'<title>dsh memory</title><a href="{escaped}">Open the dsh memory settings page</a>\n'
    )
    redirect = folder / "open.html"
    descriptor = os.open(redirect, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(page)
    # webbrowser starts xdg-open, a browser... by bare name: this process's PATH must not
    # find one in the directory the command was started from (a relative or empty entry).
    from dsh_common.programs import safe_search_path  # noqa: PLC0415

    os.environ["PATH"] = safe_search_path()
    webbrowser.open(redirect.as_uri())
    return redirect


def serve(
    root: Path,
    settings_file: Path,
    *,
    port: int = 0,
    open_browser: bool = True,
    out: TextIO | None = None,
) -> None:
    """What ``dsh-memory ui`` does: announce the URL, open it, serve until stopped."""
    server = UiServer(root, settings_file, port=port)
    stream = out or sys.stdout
    stream.write(dumps({"ok": True, "value": {"url": server.url, "root": str(root)}}) + "\n")
    stream.flush()
    sys.stderr.write(f"dsh-memory settings page: {server.url}\n(press Ctrl-C to stop)\n")
    sys.stderr.flush()
    with tempfile.TemporaryDirectory(prefix="dsh-memory-ui-") as folder:
        if open_browser:
            # The socket already listens: the browser's first request waits in its backlog.
            open_in_browser(server.url, Path(folder))
        server.run()
