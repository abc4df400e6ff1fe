"""``dsh-memory-sync --remote``: pull before the local run, push after it.

The local run is the sync's job; the remote is what lets other machines see its result.
So the steps are ``pull`` (the other machines' memory merged in first, so the agent
consolidates on top of it), the local sync, then ``push``:

- a pull that merged with conflicts is a success (``merged-with-conflicts``, the conflicts
  listed): the sync goes on and the exit status is 0;
- a pull that failed (offline, a refused URL - one written into the config by hand -,
  HEAD on no branch) changes nothing; the local run still happens - sessions are never
  held back by a network - but nothing is pushed, the failure is reported in
  ``remote.pull`` (and in ``status``/``health``), and the exit status is 0 (the
  background auto-sync adds ``--remote`` whenever a URL is set: a bad URL must not stop
  every sync);
- no remote set at all is the command's error (``remote-not-configured``), before anything
  runs: ``--remote`` asked for something that cannot be;
- a push the remote refused because another machine pushed first is retried once, after
  one more pull;
- a failure of the local run itself (``interrupted-run``, the agent) is the command's
  error, as without ``--remote``.

The result is the local run's document plus ``remote: {pull, push}``, each the method's
envelope (``{"ok": true, "value": ...}`` or ``{"ok": false, "error": {"code", "message"}}``;
``push`` is null when it was not attempted).
"""

from __future__ import annotations

from typing import Any

from dsh_memory.errors import failed_envelope
from dsh_memory.remote.remote_config import required_url
from dsh_memory.service import Envelope, MemoryService
from dsh_memory.store.root import inspect_layout
from dsh_memory.store.settings import read_enabled, settings_path
from dsh_memory.sync.syncrun import DISABLED_MESSAGE, SyncOptions, run_sync
from dsh_memory.write.transactions import GitTransactions


def _reported(service: MemoryService, envelope: Envelope) -> dict[str, Any]:
    """The envelope with the failure's human message (what the CLI would print)."""
    if envelope.get("ok"):
        return envelope
    return failed_envelope(envelope, service.last_error_message)


def _describe_pull(value: dict[str, Any]) -> str:
    conflicts = len(value.get("conflicts") or [])
    extra = f" ({conflicts} conflicting record(s) kept beside their originals)" if conflicts else ""
    return f"pull: {value['status']}{extra}"


def sync_with_remote(options: SyncOptions) -> dict[str, Any]:
    """Pull, run the sync of ``options``, push (see the module docstring)."""
    if not read_enabled(options.settings_file or settings_path(options.env)):
        return {"status": "disabled", "message": DISABLED_MESSAGE}
    from dsh_memory.store.initialize import initialize_repository  # noqa: PLC0415

    initialize_repository(options.root)
    # Only "no URL at all" stops the command; a refused URL or a detached HEAD is the
    # pull's failure, reported while the local run still happens.
    required_url(GitTransactions(inspect_layout(options.root)))
    service = MemoryService(options.root)
    pulled = _reported(service, service.pull())
    if pulled["ok"]:
        options.progress(_describe_pull(pulled["value"]))
    else:
        options.progress(f"pull failed ({pulled['error']['code']}): {pulled['error']['message']}")
    result = run_sync(options)
    pushed: dict[str, Any] | None = None
    if pulled["ok"]:
        pushed = _reported(service, service.push())
        if not pushed["ok"] and pushed["error"]["code"] == "push-rejected":
            options.progress("the remote moved meanwhile: pulling once more, then pushing")
            again = _reported(service, service.pull())
            pulled = again if again["ok"] else pulled
            if again["ok"]:
                options.progress(_describe_pull(again["value"]))
                pushed = _reported(service, service.push())
        if pushed["ok"]:
            options.progress(f"push: {pushed['value']['status']}")
        else:
            options.progress(
                f"push failed ({pushed['error']['code']}): {pushed['error']['message']}"
            )
    return {**result, "remote": {"pull": pulled, "push": pushed}}
