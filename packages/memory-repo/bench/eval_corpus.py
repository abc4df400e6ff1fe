"""A memory at scale for the retrieval evaluation: distractors around the public 52 queries.

The public evaluation (``memory-retrieval-eval.json``) has 26 records; a team's memory after
a year holds thousands that share the same vocabulary. :func:`distractor_records` generates
realistic ones - commit messages, design notes, incident notes, runbook steps - about many
subsystems, half of them in Chinese, deliberately reusing the words the queries use (cache,
lock, index, sync, token, 缓存, 索引, 目录锁 ...) so that a query's words alone do not single
out its record. :data:`PARAPHRASES` are our own queries worded differently from their target
record (a user remembers the idea, not the sentence). Nothing here was tuned on results: the
templates were written before the ranking was measured, and the seed is fixed.

Two variants (``variant``):

- ``"hard"`` (the first generator): distractors are about *any* subsystem of
  :data:`SUBSYSTEMS_EN`, including the labelled records' own topics (cache, search index,
  session log, lock, watermark ...), and a note's topic word - its id and a tag - may be a
  query word. So a one-word query like ``backup``, ``索引`` or ``会话日志`` meets dozens of
  notes named and tagged exactly that, each as good an answer as the labelled record;
- ``"realistic"``: the labelled records *are* the memory's notes on their topics, as in a
  real memory where one note holds a decision. Distractors are about the team's other
  subsystems (:data:`OTHER_TOPICS`) and name themselves (id, tags) by those and by everyday
  words; they still share the queries' words in their text, at the same rate. This is what
  the issue describes ("many sharing the queries' words"), without making the labels wrong.
"""

from __future__ import annotations

import random
from typing import Any

SUBSYSTEMS_EN = [
    "cache layer",
    "search index",
    "sync daemon",
    "release pipeline",
    "launchd agent",
    "redaction filter",
    "session log",
    "preview store",
    "run journal",
    "lock manager",
    "zstd decoder",
    "migration tool",
    "usage tracker",
    "watermark",
    "chunk delivery",
    "git workflow",
    "database",
    "scheduler",
    "api gateway",
    "auth service",
    "metrics exporter",
    "config loader",
    "plugin host",
    "websocket relay",
    "billing worker",
    "backup job",
]
SUBSYSTEMS_ZH = [
    "缓存层",
    "搜索索引",
    "同步守护进程",
    "发布流水线",
    "定时任务",
    "脱敏过滤器",
    "会话日志",
    "预览存储",
    "运行日志",
    "锁管理器",
    "解压模块",
    "迁移工具",
    "使用统计",
    "水位线",
    "分块交付",
    "代码评审",
    "数据库",
    "调度器",
    "网关",
    "认证服务",
    "监控告警",
    "配置加载",
    "插件宿主",
    "消息队列",
    "计费服务",
    "备份任务",
]
#: Indices of the subsystems (both lists) that are the labelled records' own topics.
LABELLED_TOPICS = frozenset({0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16})
#: The other subsystems: what the realistic variant's distractors are about.
OTHER_TOPICS = tuple(i for i in range(len(SUBSYSTEMS_EN)) if i not in LABELLED_TOPICS)
VARIANTS = ("hard", "realistic")
# Words the public queries use, spread through the distractors on purpose.
SHARED_EN = [
    "cache",
    "eviction",
    "policy",
    "database",
    "index",
    "optimization",
    "lock",
    "directory",
    "token",
    "tokens",
    "redaction",
    "release",
    "checklist",
    "version",
    "launchd",
    "agent",
    "scheduling",
    "interval",
    "sync",
    "memory",
    "preview",
    "staging",
    "watermark",
    "candidate",
    "chunk",
    "chunks",
    "zstd",
    "streaming",
    "decompression",
    "budget",
    "latency",
    "search",
    "sqlite",
    "trigram",
    "fusion",
    "rank",
    "usage",
    "decay",
    "generation",
    "migration",
    "legacy",
    "untracked",
    "markdown",
    "rebase",
    "branch",
    "squash",
    "backup",
    "deployment",
    "restart",
    "window",
    "payload",
    "temp",
    "files",
    "rename",
    "atomic",
    "journal",
    "rollback",
    "commit",
    "session",
    "summary",
    "bearer",
    "keys",
    "api",
    "model",
    "records",
    "query",
    "bounded",
    "fails",
    "closed",
    "weights",
    "schema",
]
SHARED_ZH = [
    "缓存",
    "雪崩",
    "穿透",
    "失效",
    "策略",
    "数据库",
    "索引",
    "优化",
    "写放大",
    "读放大",
    "并发",
    "控制",
    "目录锁",
    "回收",
    "会话",
    "日志",
    "摘要",
    "压缩",
    "候选",
    "窗口",
    "分块",
    "交付",
    "断点续传",
    "临时文件",
    "原子替换",
    "迁移",
    "文件",
    "废弃",
    "旧版",
    "方案",
    "规则",
    "延迟",
    "双删",
    "旁路",
    "模型",
    "超时",
    "重试",
    "备份",
    "发布",
    "版本",
    "提交",
    "回滚",
    "预览",
    "配置",
    "权限",
    "队列",
]
# Everyday engineering words that no public query uses: most of a note is made of these.
GENERIC_EN = [
    "request",
    "response",
    "handler",
    "worker",
    "queue",
    "retry",
    "timeout",
    "config",
    "settings",
    "flag",
    "feature",
    "rollout",
    "client",
    "server",
    "endpoint",
    "payload",
    "header",
    "cookie",
    "session",
    "tenant",
    "account",
    "user",
    "quota",
    "limit",
    "threshold",
    "alert",
    "dashboard",
    "metric",
    "counter",
    "gauge",
    "histogram",
    "trace",
    "span",
    "logger",
    "warning",
    "error",
    "panic",
    "crash",
    "restart",
    "deploy",
    "build",
    "artifact",
    "container",
    "image",
    "volume",
    "mount",
    "network",
    "socket",
    "port",
    "proxy",
    "tls",
    "certificate",
    "secret",
    "vault",
    "role",
    "permission",
    "audit",
    "report",
    "export",
    "import",
    "parser",
    "serializer",
    "encoder",
    "buffer",
    "stream",
    "pipeline",
    "stage",
    "step",
    "job",
    "cron",
    "trigger",
    "webhook",
    "event",
    "topic",
    "partition",
    "offset",
    "replica",
    "shard",
    "leader",
    "follower",
    "election",
    "heartbeat",
    "lease",
    "ttl",
    "snapshot",
    "compaction",
    "vacuum",
    "table",
    "column",
    "row",
    "transaction",
    "isolation",
    "deadlock",
    "mutex",
    "semaphore",
    "thread",
    "pool",
    "goroutine",
    "async",
    "await",
    "promise",
    "callback",
    "future",
    "channel",
    "socket",
    "frontend",
    "backend",
    "layout",
    "render",
    "template",
    "style",
    "theme",
    "locale",
    "translation",
    "upload",
    "download",
    "storage",
    "bucket",
    "object",
    "blob",
    "checksum",
    "signature",
    "digest",
    "nonce",
    "salt",
    "hash",
    "invoice",
    "payment",
    "refund",
    "ledger",
    "balance",
    "cursor",
    "pagination",
    "filter",
    "sort",
    "ranking",
    "score",
    "model",
    "prompt",
    "embedding",
    "vector",
    "latency",
    "throughput",
]
GENERIC_ZH = [
    "请求",
    "响应",
    "处理器",
    "工作线程",
    "队列",
    "配置",
    "开关",
    "特性",
    "灰度",
    "客户端",
    "服务端",
    "接口",
    "载荷",
    "租户",
    "账号",
    "用户",
    "配额",
    "阈值",
    "仪表盘",
    "指标",
    "计数器",
    "链路",
    "告警级别",
    "错误",
    "崩溃",
    "重启",
    "部署",
    "构建",
    "镜像",
    "容器",
    "存储卷",
    "网络",
    "端口",
    "代理",
    "证书",
    "密钥",
    "角色",
    "审计",
    "报表",
    "导出",
    "导入",
    "解析器",
    "编码",
    "缓冲区",
    "流水线",
    "阶段",
    "作业",
    "触发器",
    "事件",
    "主题",
    "分区",
    "偏移量",
    "副本",
    "分片",
    "主节点",
    "心跳",
    "租约",
    "快照",
    "压实",
    "事务",
    "隔离级别",
    "死锁",
    "互斥锁",
    "线程池",
    "回调",
    "前端",
    "后端",
    "布局",
    "渲染",
    "模板",
    "主题",
    "翻译",
    "上传",
    "下载",
    "对象存储",
    "校验和",
    "签名",
    "摘要值",
    "支付",
    "退款",
    "账本",
    "余额",
    "游标",
    "分页",
    "过滤",
    "排序",
    "评分",
    "向量",
    "吞吐量",
]


#: The share of a note's topic words taken from the queries' vocabulary (the default, hard
#: setting: every query word is the topic of several distractors).
SHARED_RATE = 0.1
_rate = [SHARED_RATE]
_variant = ["hard"]


def _words(rng: random.Random, shared: list[str], generic: list[str], count: int) -> list[str]:
    """``count`` distinct words, a share of them from the queries' vocabulary.

    In the realistic variant the first word, the note's topic (its id and a tag), is an
    everyday word: the note mentions the queries' words, it is not about them.
    """
    words: list[str] = []
    while len(words) < count:
        topic = not words and _variant[0] == "realistic"
        shared_word = not topic and rng.random() < _rate[0]
        word = rng.choice(shared) if shared_word else rng.choice(generic)
        if word not in words:
            words.append(word)
    return words


def _subsystem(rng: random.Random) -> int:
    if _variant[0] == "realistic":
        return rng.choice(OTHER_TOPICS)
    return rng.randrange(len(SUBSYSTEMS_EN))


VERBS_EN = [
    "fix",
    "add",
    "remove",
    "refactor",
    "bump",
    "document",
    "speed up",
    "harden",
    "revert",
    "split",
    "rename",
    "cache",
    "retry",
    "log",
    "validate",
]
VERBS_ZH = [
    "修复",
    "新增",
    "移除",
    "重构",
    "升级",
    "补充文档",
    "加速",
    "加固",
    "回退",
    "拆分",
    "校验",
]
CAUSES_EN = [
    "a stale {w} after restart",
    "the {w} was read twice under load",
    "an unbounded {w} list",
    "a race between the {s} and the {w}",
    "a missing timeout on the {w} call",
    "the {w} key was not normalised",
    "a {w} left behind by a crashed worker",
]
CAUSES_ZH = [
    "重启后{w}过期",
    "高负载下{w}被重复读取",
    "{w}没有上限",
    "{s}与{w}之间的竞争",
    "{w}调用缺少超时",
    "崩溃的进程留下了{w}",
]
TYPES = ["decision", "procedure", "observation", "fact", "constraint", "preference"]
NAMESPACES = ["infra", "ops", "sec", "perf", "sync", "conv", "mig", "app", "team", "db", "old"]


def _english(rng: random.Random) -> tuple[str, list[str], str]:
    subsystem = SUBSYSTEMS_EN[_subsystem(rng)]
    words = _words(rng, SHARED_EN, GENERIC_EN, 4)
    kind = rng.randrange(4)
    cause = rng.choice(CAUSES_EN).format(w=words[1], s=subsystem)
    if kind == 0:  # commit message
        text = (
            f"{rng.choice(VERBS_EN)} {words[0]} handling in the {subsystem}: {cause}."
            f" Also touches the {words[2]} and {words[3]} code paths."
        )
    elif kind == 1:  # design note
        text = (
            f"Design note for the {subsystem}: we keep the {words[0]} {words[1]} separate from"
            f" the {words[2]} so that a {words[3]} change never blocks a release. Revisit"
            f" when the {subsystem} grows past ten thousand records."
        )
    elif kind == 2:  # incident note
        text = (
            f"Incident: the {subsystem} stalled for {rng.randint(2, 90)} minutes. Root cause:"
            f" {cause}. Mitigation: {rng.choice(VERBS_EN)} the {words[2]}, add an alert on"
            f" {words[3]} {rng.choice(['latency', 'errors', 'size'])}."
        )
    else:  # runbook step
        text = (
            f"Runbook: to recover the {subsystem}, stop the {words[0]} worker, check the"
            f" {words[1]} and the {words[2]}, then {rng.choice(VERBS_EN)} the {words[3]}"
            " and restart."
        )
    # The id names the note's topic, as a person or agent would name it.
    return text, [subsystem.split()[0], words[0]], words[0]


def _chinese(rng: random.Random) -> tuple[str, list[str], str]:
    which = _subsystem(rng)
    subsystem = SUBSYSTEMS_ZH[which]
    words = _words(rng, SHARED_ZH, GENERIC_ZH, 4)
    kind = rng.randrange(4)
    cause = rng.choice(CAUSES_ZH).format(w=words[1], s=subsystem)
    if kind == 0:
        text = (
            f"{rng.choice(VERBS_ZH)}{subsystem}的{words[0]}处理：{cause}。"
            f"顺带调整{words[2]}和{words[3]}。"
        )
    elif kind == 1:
        text = (
            f"{subsystem}设计说明：{words[0]}与{words[1]}分开维护，{words[2]}的变更不阻塞发布；"
            f"记录超过一万条时再评估{words[3]}。"
        )
    elif kind == 2:
        text = (
            f"事故记录：{subsystem}停顿了{rng.randint(2, 90)}分钟。根因：{cause}。"
            f"处置：{rng.choice(VERBS_ZH)}{words[2]}，并为{words[3]}增加告警。"
        )
    else:
        text = (
            f"操作手册：恢复{subsystem}时先停掉{words[0]}任务，检查{words[1]}和{words[2]}，"
            f"然后{rng.choice(VERBS_ZH)}{words[3]}并重启。"
        )
    if rng.random() < 0.3:  # mixed-language notes, as engineers write them
        text += " ({} {})".format(*_words(rng, SHARED_EN, GENERIC_EN, 2))
    # Tags and id name what the note is about: its subsystem and its first topic word (the
    # id in ASCII, from the subsystem's English name, as ids must be).
    return text, [subsystem, words[0]], SUBSYSTEMS_EN[which].split()[0]


def distractor_records(
    count: int, seed: int = 2026, shared_rate: float = SHARED_RATE, variant: str = "hard"
) -> list[dict[str, Any]]:
    """``count`` records in the eval file's shape (path, id, type, tags, body)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    rng = random.Random(seed)
    _rate[0] = shared_rate
    _variant[0] = variant
    records = []
    for index in range(count):
        text, tags, topic = _chinese(rng) if index % 2 else _english(rng)
        folder = rng.choices(["handbook", "rollouts", "archive"], [5, 3, 2])[0]
        namespace = rng.choice(NAMESPACES)
        slug_word = topic.replace(" ", "-")
        records.append(
            {
                "path": f"{folder}/{namespace}-{slug_word}-{index}.md",
                "id": f"{namespace}/{slug_word}-{index}",
                "type": rng.choice(TYPES),
                "tags": list(dict.fromkeys(tags)),
                "body": text + "\n",
            }
        )
    return records


def _case(n: str, query: str, scope: str, path: str) -> dict[str, Any]:
    return {"n": n, "query": query, "scope": scope, "top1": path, "expect_in_top3": [path]}


#: Our queries for the public records, worded the way a user recalls them (not the
#: record's sentence). English and Chinese, active and archive scope.
PARAPHRASES = [
    _case(
        "P1",
        "how are API keys scrubbed before calling the model",
        "active",
        "handbook/redaction-policy.md",
    ),
    _case("P2", "decompress zstd without unbounded memory", "active", "handbook/zstd-streaming.md"),
    _case("P3", "hybrid lexical retrieval with rank fusion", "active", "handbook/fts-rrf.md"),
    _case(
        "P4", "steps to cut a release and bump versions", "active", "handbook/release-checklist.md"
    ),
    _case("P5", "p95 latency target for searching records", "active", "handbook/perf-budget.md"),
    _case("P6", "older generations lose usage weight", "active", "handbook/usage-decay.md"),
    _case(
        "P7",
        "minting ids for markdown files without front matter",
        "active",
        "rollouts/migrate-legacy.md",
    ),
    _case("P8", "operator applies a staged preview later", "active", "rollouts/preview-apply.md"),
    _case(
        "P9",
        "watermark waits until every candidate is resolved",
        "active",
        "rollouts/watermark-hold.md",
    ),
    _case(
        "P10",
        "strip secrets from query strings in transcripts",
        "active",
        "rollouts/token-redaction.md",
    ),
    _case(
        "P11",
        "restart the agent safely after taking a backup",
        "active",
        "rollouts/launchd-restart.md",
    ),
    _case(
        "P12", "plist calendar interval for the sync agent", "active", "handbook/launchd-setup.md"
    ),
    _case("P13", "squash merges and rebasing branches", "active", "handbook/git-workflow.md"),
    _case("P14", "B-tree versus LSM tradeoff", "active", "handbook/cjk-db-index.md"),
    _case("P15", "缓存击穿怎么防", "active", "handbook/cjk-cache.md"),
    _case("P16", "临时文件写完再替换", "active", "rollouts/cjk-atomic-replace.md"),
    _case("P17", "长会话怎么压缩摘要", "active", "handbook/cjk-session-rules.md"),
    _case("P18", "目录锁多久回收", "active", "handbook/cjk-concurrency.md"),
    _case("P19", "候选会话按块送给模型", "active", "rollouts/chunked-delivery.md"),
    _case("P20", "读写放大怎么平衡", "active", "handbook/cjk-db-index.md"),
    _case("P21", "空闲一小时后的会话日志", "active", "handbook/cjk-session-rules.md"),
    _case("P22", "整批截断改成逐个交付", "archive", "archive/cjk-old-chunks.md"),
    _case("P23", "mkdir lock instead of flock", "archive", "archive/deprecated-lock.md"),
    _case("P24", "scanning the filesystem with no index", "archive", "archive/legacy-fs.md"),
    _case("P25", "zstd temporary files in /tmp", "archive", "archive/old-zstd-tmp.md"),
    # Harder: little or no word in common with the record (a user's own words).
    _case("H1", "secrets masked in session transcripts", "active", "rollouts/token-redaction.md"),
    _case("H2", "ownership of the operation lock lapses", "active", "handbook/cjk-concurrency.md"),
    _case("H3", "cap on inflated payload size", "active", "handbook/zstd-streaming.md"),
    _case("H4", "merging lexical result lists", "active", "handbook/fts-rrf.md"),
    _case("H5", "throttle the scheduled memory job", "active", "handbook/launchd-setup.md"),
    _case(
        "H6", "assigning identifiers to unmigrated notes", "active", "rollouts/migrate-legacy.md"
    ),
    _case("H7", "发布前要做哪些事", "active", "handbook/release-checklist.md"),
    _case("H8", "旧的锁实现", "archive", "archive/deprecated-lock.md"),
]
