"""Deterministic mixed Chinese/English memory corpora for benchmarks and tests."""

from __future__ import annotations

import random
from pathlib import Path

ENGLISH = [
    "cache",
    "eviction",
    "policy",
    "database",
    "index",
    "migration",
    "rollback",
    "journal",
    "preview",
    "sync",
    "watermark",
    "session",
    "redaction",
    "token",
    "lock",
    "directory",
    "atomic",
    "rename",
    "replace",
    "budget",
    "latency",
    "search",
    "ranking",
    "generation",
    "usage",
    "decay",
    "sqlite",
    "trigram",
    "bigram",
    "segment",
    "release",
    "checklist",
    "deploy",
    "backup",
    "restore",
    "schema",
    "version",
    "metadata",
    "provenance",
    "digest",
    "commit",
    "branch",
    "rebase",
    "squash",
    "worktree",
    "staging",
    "candidate",
    "chunk",
    "delivery",
    "stream",
    "zstd",
    "compression",
    "timeout",
    "retry",
    "scheduler",
    "launchd",
    "plist",
    "interval",
    "throttle",
    "keepalive",
    "agent",
    "prompt",
    "summary",
    "handbook",
]
CHINESE = [
    "缓存雪崩",
    "缓存穿透",
    "旁路缓存",
    "延迟双删",
    "数据库索引",
    "写放大",
    "读放大",
    "并发控制",
    "目录锁",
    "原子替换",
    "临时文件",
    "会话日志",
    "摘要压缩",
    "分块交付",
    "断点续传",
    "候选窗口",
    "回滚提交",
    "迁移脚本",
    "预览应用",
    "水位线",
    "凭据脱敏",
    "搜索延迟",
    "排序融合",
    "使用反馈",
    "代际衰减",
    "发布清单",
    "版本升级",
    "备份恢复",
    "定时任务",
    "压缩解码",
    "超时重试",
    "工作树",
    "暂存区",
    "提交历史",
]
CONNECTIVES = ("的", "与", "和", "在", "时", "后", "：", "，", "。")
TYPES = ("preference", "fact", "decision", "procedure", "constraint", "observation")
NAMESPACES = ("infra", "ops", "sec", "perf", "sync", "conv", "mig", "user", "project")
FOLDERS = ("handbook", "handbook", "rollouts", "rollouts", "archive")


HAN_POOL = (
    "数据库索引缓存雪崩穿透旁路延迟双删写放大读并发控制目录锁原子替换临时文件会话日志摘要压缩分块交付断点续传"
    "候选窗口回滚提交迁移脚本预览应用水位线凭据脱敏搜索排序融合使用反馈代际衰减发布清单版本升级备份恢复定时"
    "任务解码超时重试工作树暂存区历史配置策略规则模型调度队列内存磁盘网络服务接口测试部署监控告警日志权限"
)


def _vocabulary(seed: int) -> tuple[list[str], list[str]]:
    """A Zipf-ish vocabulary: the named words plus thousands of synthetic ones."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "tor", "vex", "qu", "zen", "dra", "pol", "sur", "fin"]
    english: list[str] = []
    while len(english) < 4000:
        english.append("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    chinese: list[str] = []
    while len(chinese) < 3000:
        chinese.append("".join(rng.choice(HAN_POOL) for _ in range(rng.randint(2, 4))))
    # The named (queried) words sit at middle ranks: a specific technical term appears in a
    # few percent of notes, not in all of them; the most frequent words are filler.
    english[200:200] = ENGLISH
    chinese[100:100] = CHINESE
    return english, chinese


_ENGLISH_WORDS, _CHINESE_WORDS = _vocabulary(11)
# Zipf weights: a few words are everywhere, most are rare, as in real notes.
_ENGLISH_WEIGHTS = [1 / (rank + 1) for rank in range(len(_ENGLISH_WORDS))]
_CHINESE_WEIGHTS = [1 / (rank + 1) for rank in range(len(_CHINESE_WORDS))]


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        words = rng.choices(_ENGLISH_WORDS, _ENGLISH_WEIGHTS, k=rng.randint(6, 14))
        return " ".join(words).capitalize() + ". "
    parts = []
    for phrase in rng.choices(_CHINESE_WORDS, _CHINESE_WEIGHTS, k=rng.randint(3, 6)):
        parts.append(phrase)
        parts.append(rng.choice(CONNECTIVES))
    if rng.random() < 0.5:
        parts.insert(rng.randrange(len(parts)), f" {rng.choice(_ENGLISH_WORDS[:500])} ")
    return "".join(parts) + "。"


def record_text(rng: random.Random, index: int) -> tuple[str, str]:
    """``(path, text)`` of record number ``index``."""
    folder = FOLDERS[index % len(FOLDERS)]
    namespace = rng.choice(NAMESPACES)
    slug = f"{rng.choice(ENGLISH)}-{index}"
    lines = [
        "---",
        "schema_version: 1",
        f"id: {namespace}/{slug}",
        f"type: {rng.choice(TYPES)}",
        "status: active",
        "confidence: medium",
        f"created_at: 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        f"updated_at: 2026-0{rng.randint(1, 9)}-2{rng.randint(0, 8)}",
    ]
    if rng.random() < 0.05:
        lines.append("expires_at: 2020-01-01")
    lines.append("tags:")
    lines.extend(f"  - {tag}" for tag in rng.sample(ENGLISH + CHINESE, 2))
    lines.append("---")
    body = "".join(_sentence(rng) for _ in range(rng.randint(3, 8)))
    return f"{folder}/{namespace}/{slug}.md", "\n".join(lines) + "\n" + body + "\n"


def write_corpus(root: Path, count: int, seed: int = 7) -> None:
    """A memory root layout (no git needed for search) with ``count`` records."""
    rng = random.Random(seed)
    (root / ".sync").mkdir(parents=True, exist_ok=True)
    (root / "summary.md").write_text("navigation\n", encoding="utf-8")
    for index in range(count):
        path, text = record_text(rng, index)
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


QUERIES = (
    "cache eviction",
    "缓存雪崩",
    "rename 原子替换",
    "数据库索引优化",
    "rollback journal commit",
    "会话日志 summary",
    "zstd",
    "目录锁",
    "keepalive throttle",
    "断点续传 chunk",
)
