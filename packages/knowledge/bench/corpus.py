"""A realistic knowledge corpus generator: engineering facts, decisions and lessons.

Items read like what a team records about its codebase - components, technologies,
symptoms, fixes - about 70% English and 30% Chinese (some mixed), with a long tail of
identifiers so that token frequencies are skewed the way real notes are. Deterministic for a
given seed.
"""

from __future__ import annotations

import random
from typing import Any

COMPONENTS = [
    "payment service",
    "auth gateway",
    "billing worker",
    "search indexer",
    "api router",
    "session cache",
    "webhook dispatcher",
    "notification queue",
    "report exporter",
    "upload handler",
    "rate limiter",
    "feature flag service",
    "audit logger",
    "migration runner",
    "checkout flow",
    "inventory sync",
    "email sender",
    "graphql layer",
    "admin dashboard",
    "mobile backend",
    "scheduler",
    "metrics pipeline",
    "sso bridge",
]
TECH = [
    "postgres",
    "redis",
    "kafka",
    "sqlite",
    "docker",
    "kubernetes",
    "nginx",
    "grpc",
    "typescript",
    "python",
    "rust",
    "react",
    "terraform",
    "s3",
    "elasticsearch",
    "celery",
    "rabbitmq",
    "github actions",
    "sentry",
    "prometheus",
    "grafana",
    "node",
    "webpack",
]
SYMPTOMS = [
    "timed out under load",
    "leaked connections",
    "returned stale data",
    "dropped messages",
    "deadlocked during deploys",
    "exhausted the connection pool",
    "hit the memory limit",
    "retried forever",
    "lost idempotency keys",
    "double charged customers",
    "failed health checks",
    "blocked the event loop",
    "flooded the logs",
    "broke pagination",
]
FIXES = [
    "adding a circuit breaker",
    "bounding the retry budget",
    "setting statement timeouts",
    "pinning the client version",
    "batching the writes",
    "adding an index on created_at",
    "moving the job to a queue",
    "enabling keepalive",
    "caching the token for five minutes",
    "using exponential backoff with jitter",
    "closing cursors explicitly",
    "splitting the migration into two steps",
    "switching to streaming uploads",
]
RULES = [
    "must go through",
    "should never call",
    "always validates input before",
    "owns writes to",
    "is the only caller of",
    "must not block",
    "reads configuration from",
    "emits events to",
]
ZH_COMPONENTS = [
    "支付服务",
    "认证网关",
    "计费任务",
    "搜索索引",
    "接口路由",
    "会话缓存",
    "消息队列",
    "报表导出",
    "上传处理",
    "限流器",
    "定时任务",
    "监控管道",
    "数据库连接池",
    "配置中心",
]
ZH_SYMPTOMS = [
    "连接池耗尽导致超时",
    "缓存返回过期数据",
    "消息重复消费",
    "部署时出现死锁",
    "内存占用过高",
    "重试没有上限",
    "日志量暴增",
    "分页结果错误",
    "健康检查失败",
    "请求延迟升高",
]
ZH_FIXES = [
    "增加熔断器",
    "限制重试次数",
    "设置语句超时",
    "批量写入",
    "为创建时间加索引",
    "改为异步队列处理",
    "开启长连接",
    "缓存令牌五分钟",
    "使用指数退避",
    "拆分迁移步骤",
]


def _identifier(rng: random.Random) -> str:
    stem = rng.choice(["handle", "process", "sync", "fetch", "build", "resolve", "flush"])
    noun = rng.choice(["Order", "Invoice", "Session", "Token", "Batch", "Report", "Webhook"])
    return f"{stem}{noun}{rng.randint(1, 400)}"


def _english(rng: random.Random) -> tuple[str, str]:
    component, tech = rng.choice(COMPONENTS), rng.choice(TECH)
    kind = rng.choice(["fact", "decision", "lesson"])
    if kind == "lesson":
        text = (
            f"The {component} {rng.choice(SYMPTOMS)} because {_identifier(rng)} "
            f"used {tech} without limits; fixed by {rng.choice(FIXES)}."
        )
    elif kind == "decision":
        text = (
            f"Decision: the {component} {rng.choice(RULES)} {rng.choice(COMPONENTS)} "
            f"and stores state in {tech}; see {_identifier(rng)}."
        )
    else:
        text = (
            f"The {component} runs on {tech} {rng.randint(2, 16)} and {rng.choice(RULES)} "
            f"the {rng.choice(COMPONENTS)} via {_identifier(rng)}."
        )
    return kind, text


def _chinese(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["fact", "decision", "lesson"])
    component, tech = rng.choice(ZH_COMPONENTS), rng.choice(TECH)
    if kind == "lesson":
        symptom, fix = rng.choice(ZH_SYMPTOMS), rng.choice(ZH_FIXES)
        text = f"{component}{symptom}，原因是{tech}配置不当，通过{fix}解决。"
    elif kind == "decision":
        text = (
            f"决定：{component}统一使用{tech}，并且{rng.choice(ZH_FIXES)}（{_identifier(rng)}）。"
        )
    else:
        other = rng.choice(ZH_COMPONENTS)
        text = f"{component}依赖{other}，部署在{tech}上，负责人维护{_identifier(rng)}。"
    return kind, text


def generate(count: int, *, workspace: str = "/work/shop", seed: int = 7) -> list[dict[str, Any]]:
    """``count`` item specs for ``KnowledgeRepository.create_many`` in one scope."""
    rng = random.Random(seed)
    specs: list[dict[str, Any]] = []
    for n in range(count):
        kind, text = _chinese(rng) if rng.random() < 0.3 else _english(rng)
        evidence = [
            {
                "type": "file",
                "source": f"src/module_{rng.randint(1, 900)}.py",
                "timestamp": "2025-01-01T00:00:00.000Z",
            }
            for _ in range(rng.randint(0, 3))
        ]
        specs.append(
            {
                "type": kind,
                "content": text,
                "scope": {"workspace": workspace, "project": "shop" if n % 3 else None},
                "evidence": evidence,
            }
        )
    return specs


QUERIES = [
    "payment service timeout",
    "why does the auth gateway leak connections",
    "redis session cache stale data",
    "kafka dropped messages",
    "connection pool exhausted",
    "retry budget exponential backoff",
    "postgres statement timeout",
    "webhook dispatcher",
    "rate limiter redis",
    "billing worker double charged customers",
    "deploy deadlock migration",
    "search indexer elasticsearch",
    "graphql layer pagination",
    "circuit breaker payment",
    "handleOrder12",
    "syncInvoice",
    "processWebhook77",
    "idempotency keys",
    "memory limit celery",
    "event loop blocked node",
    "upload handler streaming uploads",
    "feature flag service configuration",
    "audit logger sentry",
    "scheduler queue job",
    "prometheus metrics pipeline",
    "terraform s3",
    "sso bridge grpc",
    "inventory sync batch writes",
    "email sender keepalive",
    "checkout flow must not block",
    "who owns writes to billing",
    "index on created_at",
    "docker kubernetes deploy",
    "typescript react admin dashboard",
    "mobile backend rate limit",
    "数据库连接池",
    "连接池耗尽",
    "缓存过期数据",
    "消息重复消费",
    "部署死锁",
    "限流器",
    "支付服务超时",
    "认证网关",
    "指数退避",
    "熔断器",
    "拆分迁移",
    "配置中心 redis",
    "搜索索引 elasticsearch",
    "定时任务 celery",
    "监控管道 prometheus",
    "会话缓存 token",
    "报表导出 s3",
    "timeouts under load",
    "flooded logs",
]
