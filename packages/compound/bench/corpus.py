"""Generate realistic dsh-compound corpora for benchmarks and demos.

A generated workspace holds evidence files under ``src/`` and ``tests/`` and a corpus of
records, half in Chinese and half in English (with mixed titles), each fingerprinting 1-4
real files. Records are rendered with the package's own renderer, so they are byte-for-byte
what capture writes; the total size can be steered up to the scan's 4 MiB bound.

    python bench/corpus.py <workspace> --records 500 --target-bytes 4100000
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS
from dsh_compound.record import build_metadata, render_record, sha256

_ENGLISH_WORDS = (
    "database connection pool timeout login session cache redis retry backoff deadlock "
    "transaction index migration schema query latency throughput memory leak garbage "
    "collector thread race condition mutex lock queue worker scheduler cron job deploy "
    "container kubernetes pod restart probe health check config environment variable "
    "secret token expiry oauth refresh header cookie cors proxy nginx tls certificate "
    "dns resolver socket keepalive buffer overflow encoding utf8 unicode locale timezone "
    "daylight clock skew flaky test fixture mock snapshot regression coverage build cache "
    "dependency lockfile version pin upgrade breaking change api endpoint pagination "
    "rate limit quota webhook payload signature json parse error stack trace panic "
    "exception handler logging metrics tracing alert dashboard incident rollback"
)

_CHINESE_WORDS = (
    "数据库 连接池 超时 登录 会话 缓存 重试 退避 死锁 事务 索引 迁移 查询 延迟 吞吐量 内存 "
    "泄漏 垃圾回收 线程 竞态条件 互斥锁 队列 调度器 定时任务 部署 容器 重启 健康检查 配置 "
    "环境变量 密钥 令牌 过期 刷新 请求头 代理 证书 域名解析 套接字 缓冲区 溢出 编码 时区 "
    "时钟 偏差 不稳定 测试 回归 覆盖率 构建 依赖 版本 升级 接口 分页 限流 配额 签名 解析 "
    "错误 堆栈 异常 日志 指标 告警 故障 回滚 性能 优化 并发 网络 磁盘 文件 权限 用户 服务"
)
ENGLISH = _ENGLISH_WORDS.split()
CHINESE = _CHINESE_WORDS.split()

SOURCE_FILES = 60


def _sentence(rng: random.Random, chinese: bool) -> str:
    words = rng.choices(CHINESE if chinese else ENGLISH, k=rng.randint(6, 14))
    if chinese:
        return "".join(words) + "。"
    return " ".join(words).capitalize() + "."


def _text(rng: random.Random, chinese: bool, limit: int, sentences: int) -> str:
    text = ""
    for _ in range(sentences):
        candidate = (text + ("" if chinese else " ") + _sentence(rng, chinese)).strip()
        if len(candidate) > limit:
            break
        text = candidate
    return text or _sentence(rng, chinese)


def write_sources(root: Path, rng: random.Random) -> list[str]:
    """Evidence files: small modules and tests with varied content."""
    paths: list[str] = []
    for index in range(SOURCE_FILES):
        folder = "tests" if index % 4 == 3 else "src"
        relative = f"{folder}/module_{index:02d}.py"
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(f"# {_sentence(rng, False)}" for _ in range(rng.randint(5, 60)))
        target.write_text(f"{body}\nVALUE = {index}\n", encoding="utf-8")
        paths.append(relative)
    return paths


def make_draft(
    rng: random.Random, index: int, sources: list[str], sentences: int
) -> dict[str, Any]:
    """One realistic draft; ``sentences`` steers the size of the long fields."""
    chinese = index % 2 == 0
    topic = rng.sample(CHINESE if chinese else ENGLISH, 3)
    english_topic = rng.sample(ENGLISH, 2)
    title = (
        ("".join(topic) if chinese else " ".join(topic).capitalize())
        + " "
        + " ".join(english_topic)
    )
    return {
        "id": f"lesson-{index:04d}-{'zh' if chinese else 'en'}",
        "title": title[: LIMITS.title_length],
        "tags": rng.sample(CHINESE, 2) + rng.sample(ENGLISH, 2),
        "problem": _text(rng, chinese, LIMITS.problem_length, sentences),
        "rootCause": _text(rng, chinese, LIMITS.root_cause_length, sentences),
        "resolution": _text(rng, chinese, LIMITS.resolution_length, sentences),
        "whenToUse": _text(rng, chinese, LIMITS.when_to_use_length, max(1, sentences // 3)),
        "verification": {
            "command": f"uv run pytest tests/module_{index % SOURCE_FILES:02d}.py -q",
            "result": _text(rng, chinese, 300, 2),
        },
        "files": sorted(set(rng.sample(sources, rng.randint(1, 4)))),
    }


def generate(root: Path, records: int, target_bytes: int, seed: int = 7) -> int:
    """Create ``root`` with sources and ``records`` records totalling about ``target_bytes``.

    Returns the total record bytes written (kept at or under ``target_bytes``).
    """
    rng = random.Random(seed)
    sources = write_sources(root, rng)
    corpus = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    corpus.mkdir(parents=True, exist_ok=True)
    per_record = target_bytes // records
    total = 0
    stamp = "2026-11-30T12:00:00.000Z"
    for index in range(records):
        sentences = 1
        best: bytes | None = None
        # Grow the long fields until the record reaches its share of the byte budget.
        while True:
            draft = make_draft(random.Random(seed * 100_003 + index), index, sources, sentences)
            digests = [sha256((root / path).read_bytes()) for path in draft["files"]]
            data = render_record(build_metadata(draft, digests, created_at=stamp, updated_at=stamp))
            if len(data) > per_record and best is not None:
                break
            best = data
            if len(data) > per_record or sentences > 60:
                break
            sentences += 1
        assert best is not None
        (corpus / f"{draft['id']}.md").write_bytes(best)
        total += len(best)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--target-bytes", type=int, default=4_100_000)
    args = parser.parse_args()
    args.workspace.mkdir(parents=True, exist_ok=True)
    total = generate(args.workspace, args.records, args.target_bytes)
    print(f"wrote {args.records} records, {total} bytes, to {args.workspace}")


if __name__ == "__main__":
    main()
