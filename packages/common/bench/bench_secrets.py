"""The secret detector on realistic text and on adversarial megabytes.

    uv run --frozen python packages/common/bench/bench_secrets.py [--runs 7]

Realistic: session-transcript-like text (English and Chinese prose, code, JSON, shell, a
secret every ~2 KiB) at 64 KiB, 256 KiB and 1 MiB, scanned by ``find_secrets`` in both
sensitivities and redacted as dsh-memory redacts; the baseline, measured in the same run,
is the earlier session filter's six regular-expression substitutions over the same text.

Adversarial: inputs built to make a backtracking matcher go quadratic (runs that almost
form a token, separators without values, unclosed quotes and blocks, percent runs ...) at
256 KiB and 1 MiB. Each row gives the median times and the growth from 256 KiB to 1 MiB (of
the fastest runs, the least disturbed by other work), which is 4 for linear work; the
script exits 1 when any growth is above 10 (room for a busy machine), so a quadratic pattern
fails it (16) whatever the machine's speed.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable

from dsh_common.secrets import find_secrets, redact

KIB = 1024
MAX_GROWTH = 10.0

# The earlier session filter (its six substitutions, as they were): the baseline.
_OLD = [
    (re.compile(r"(?<![A-Za-z0-9_])(?:/Users/[^/\s]+|/home/[^/\s]+|/root)(?=/|\b)"), "$HOME"),
    (
        re.compile(
            r"(?i)([?&](?:access_token|api[_-]?key|auth|password|passwd|pwd|token)=)"
            r"([^&#\s\"']+)"
        ),
        r"\1[REDACTED]",
    ),
    (re.compile(r"(?i)\bbearer[ \t]+[A-Za-z0-9._~+/=-]{3,}"), "Bearer [REDACTED]"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{3,}", re.IGNORECASE), "[REDACTED]"),
    (
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{4,}|github_pat_[A-Za-z0-9_]{20,})\b", re.I),
        "[REDACTED]",
    ),
    (
        re.compile(r"\b(?:A3T|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA)[A-Z0-9]{16}\b"),
        "[REDACTED]",
    ),
]


def old_filter(text: str) -> str:
    for pattern, replacement in _OLD:
        text = pattern.sub(replacement, text)
    return text


def new_filter(text: str) -> str:
    return redact(text, lambda span: "[REDACTED]", eager=True)


_LINES = [
    "We decided to route provider calls through ResponseRouter with retries: 3.",
    "数据库连接池耗尽导致超时，我们把 max_connections 调到 200。",
    'tool: shell({"cmd": "pytest -q -n 2 packages/knowledge", "timeout": 600})',
    "result: 412 passed, 3 skipped in 41.2s; see /home/alice/project/logs/run.txt",
    "def connect(url: str) -> Connection:\n    return Engine(url, pool_size=10).connect()",
    "The API key lives in the vault; access tokens expire after one hour.",
    "export PATH=$HOME/.local/bin:$PATH && make setup && make test",
    "密码长度至少12位，令牌是JWT格式，部署前请确认 client_secret 已配置。",
    '{"name": "dsh", "version": "0.1.0", "max_tokens": 4096, "stream": true}',
]
_SECRETS = [
    "token " + "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "DB_PASSWORD=" + "Hunter2-x9Q",
    "postgresql+psycopg2" + "://app:" + "s3cret@db/app",
    "密钥是sk" + "-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4",
]


def realistic(size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(_SECRETS) if rng.random() < 0.03 else rng.choice(_LINES)
        parts.append(line)
        total += len(line) + 1
    return "\n".join(parts)[:size]


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "sk- runs": lambda n: _repeat("sk-", n),
    "short sk- tokens": lambda n: _repeat("sk-ab ", n),
    "jwt without dots": lambda n: "eyJ" + _repeat("eyJaaaaaaaaaaa-", n),
    "jwt two segments": lambda n: _repeat("eyJaaaaaaaaaaaa.bbbbbbbbbbbb ", n),
    "one identifier run": lambda n: _repeat("a", n),
    "dashed identifier": lambda n: _repeat("a-", n),
    "names without values": lambda n: _repeat("password=", n),
    "bare separators": lambda n: _repeat("a=", n),
    "name then spaces": lambda n: "password" + " " * n,
    "unclosed quotes": lambda n: _repeat('password="', n),
    "escaped quotes": lambda n: 'password="' + _repeat('\\"', n),
    "schemes without @": lambda n: _repeat("x://u:p", n),
    "userinfo without @": lambda n: "postgres://u:" + _repeat("p", n),
    "pem headers, no END": lambda n: _repeat("-----BEGIN RSA PRIVATE KEY-----\n", n),
    "pem body, no END": lambda n: "-----BEGIN PRIVATE KEY-----\n" + _repeat("QUJD\n", n),
    "percent runs": lambda n: _repeat("%41", n),
    "bearer words": lambda n: _repeat("Bearer x ", n),
    "chinese labels": lambda n: _repeat("密码：", n),
    "full-width unclosed": lambda n: _repeat("password：“", n),
    "labels, quote, letter": lambda n: _repeat("密码：“a", n),
    "aws prefixes": lambda n: _repeat("AKIA", n),
    "random ascii": lambda n: "".join(random.Random(3).choice("aA0_-=:/@.%\"' ") for _ in range(n)),
}


def timings_ms(function: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return times


def median_ms(function: Callable[[], object], runs: int) -> float:
    return statistics.median(timings_ms(function, runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs

    print("Realistic transcript text (median ms)")
    print(
        f"{'size':>8} | {'earlier filter':>14} | {'redact (eager)':>14} | {'ratio':>5} | "
        f"{'find (refusing)':>15} | {'secrets':>7}"
    )
    for size in (64 * KIB, 256 * KIB, 1024 * KIB):
        text = realistic(size)
        base = median_ms(lambda text=text: old_filter(text), runs)
        new = median_ms(lambda text=text: new_filter(text), runs)
        strict = median_ms(lambda text=text: find_secrets(text), runs)
        found = len(find_secrets(text))
        print(
            f"{size // KIB:>5} KiB | {base:>14.1f} | {new:>14.1f} | {new / base:>5.1f} | "
            f"{strict:>15.1f} | {found:>7}"
        )

    print("\nAdversarial input (median ms; growth = time at 1 MiB / time at 256 KiB, linear = 4)")
    print(f"{'input':<22} | {'256 KiB':>8} | {'1 MiB':>8} | {'growth':>6} | {'eager 1 MiB':>11}")
    worst = 0.0
    for name, build in ADVERSARIAL.items():
        small, large = build(256 * KIB), build(1024 * KIB)
        small_times = timings_ms(lambda small=small: find_secrets(small), runs)
        large_times = timings_ms(lambda large=large: find_secrets(large), runs)
        eager = median_ms(lambda large=large: find_secrets(large, eager=True), runs)
        # Growth from the fastest runs (the least disturbed by other work on the machine),
        # floored at 1 ms where timer noise would dominate.
        growth = max(min(large_times), 1.0) / max(min(small_times), 1.0)
        worst = max(worst, growth)
        low, high = statistics.median(small_times), statistics.median(large_times)
        print(f"{name:<22} | {low:>8.1f} | {high:>8.1f} | {growth:>6.1f} | {eager:>11.1f}")
    print(f"\nworst growth {worst:.1f} (limit {MAX_GROWTH})")
    return 0 if worst <= MAX_GROWTH else 1


if __name__ == "__main__":
    sys.exit(main())
