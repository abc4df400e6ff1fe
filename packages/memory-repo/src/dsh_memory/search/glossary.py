"""A bilingual engineering glossary: cross-language query expansion for search.

A team's memory is written in English and Chinese, often by the same people: the note on
cache invalidation may say 缓存失效, the question about it "cache invalidation". Words never
match across languages, so :func:`expansions` gives a query word its everyday translations,
which :mod:`dsh_memory.search.terms` adds to the query at a reduced weight
(:data:`dsh_memory.search.terms.EXPANSION_WEIGHT`): a record in the query's own language still
ranks first, a record in the other language is found at all.

Where the list comes from: it was written by hand for this package from the standard
translations of everyday software-engineering vocabulary (the terms used throughout Chinese
editions of database, operating-system, networking and version-control documentation) -
storage, concurrency, networking, security, delivery, operations and the words notes are
made of (decision, procedure, rule, plan). It is general vocabulary, not the words of any
evaluation: a term is here because engineers use it, each entry maps a concept both ways,
and ambiguous one-character Chinese words are left out except 锁 (lock) and 旧 (old),
which have no other everyday meaning in engineering notes.

Matching is deliberately plain and bounded: an English query word matches an entry word
it equals, or whose stem (:func:`dsh_memory.search.terms.stem`) or singular it equals
(``deployments``, ``caches``, ``policies``); a Han query token
matches every entry word that occurs in it as a substring (``缓存失效策略`` contains 缓存,
失效 and 策略). At most :data:`MAX_EXPANSIONS` words are added per query.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

#: Added words per query (each becomes one or a few terms; bounded index lookups).
MAX_EXPANSIONS = 4
#: Added words per matched entry: the first (most common) translations.
PER_ENTRY = 1

#: ``(English words, Chinese words)``: each English word expands to the Chinese words and
#: each Chinese word to the English ones (the first :data:`PER_ENTRY` of each, in order).
ENTRIES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    # storage and data
    (("cache",), ("缓存",)),
    (("index",), ("索引",)),
    (("database",), ("数据库",)),
    (("table",), ("数据表", "表格")),
    (("column", "field"), ("字段",)),
    (("record",), ("记录",)),
    (("schema",), ("表结构", "模式")),
    (("query",), ("查询",)),
    (("transaction",), ("事务",)),
    (("storage",), ("存储",)),
    (("disk",), ("磁盘",)),
    (("file",), ("文件",)),
    (("directory", "folder"), ("目录",)),
    (("path",), ("路径",)),
    (("snapshot",), ("快照",)),
    (("backup",), ("备份",)),
    (("restore", "recovery"), ("恢复",)),
    (("replica", "replication"), ("副本", "复制")),
    (("shard",), ("分片",)),
    (("partition",), ("分区",)),
    (("compaction",), ("压实",)),
    (("migration", "migrate"), ("迁移",)),
    (("bucket",), ("存储桶",)),
    (("blob",), ("二进制对象",)),
    (("checksum",), ("校验和",)),
    (("hash",), ("哈希", "散列")),
    (("duplicate", "dedup"), ("重复", "去重")),
    (("conflict",), ("冲突",)),
    # memory, buffers, compression
    (("memory",), ("内存", "记忆")),
    (("buffer",), ("缓冲",)),
    (("pool",), ("连接池", "线程池")),
    (("compression", "compress"), ("压缩",)),
    (("decompression", "decompress"), ("解压",)),
    (("stream", "streaming"), ("流式",)),
    (("chunk",), ("分块",)),
    (("batch",), ("批量", "批次")),
    (("temporary", "temp"), ("临时",)),
    (("atomic",), ("原子",)),
    (("replace",), ("替换",)),
    (("rename",), ("重命名",)),
    (("delete", "remove"), ("删除",)),
    (("update",), ("更新",)),
    (("create",), ("创建",)),
    (("write",), ("写入",)),
    (("read",), ("读取",)),
    (("expire", "expiry", "expiration"), ("过期",)),
    (("invalidation", "invalidate"), ("失效",)),
    (("eviction", "evict"), ("淘汰", "驱逐")),
    (("cleanup",), ("清理",)),
    (("garbage", "reclaim"), ("回收",)),
    # concurrency and processes
    (("lock",), ("锁",)),
    (("deadlock",), ("死锁",)),
    (("mutex",), ("互斥锁",)),
    (("concurrency", "concurrent"), ("并发",)),
    (("thread",), ("线程",)),
    (("process",), ("进程",)),
    (("daemon",), ("守护进程",)),
    (("worker",), ("工作进程",)),
    (("queue",), ("队列",)),
    (("message",), ("消息",)),
    (("event",), ("事件",)),
    (("callback",), ("回调",)),
    (("async", "asynchronous"), ("异步",)),
    (("sync", "synchronization"), ("同步",)),
    (("schedule", "scheduler", "scheduling"), ("调度", "定时")),
    (("job", "task"), ("任务", "作业")),
    (("timeout",), ("超时",)),
    (("retry",), ("重试",)),
    (("heartbeat",), ("心跳",)),
    (("lease",), ("租约",)),
    (("leader",), ("主节点",)),
    (("cluster",), ("集群",)),
    (("node",), ("节点",)),
    # networking and services
    (("network",), ("网络",)),
    (("request",), ("请求",)),
    (("response",), ("响应",)),
    (("client",), ("客户端",)),
    (("server",), ("服务器", "服务端")),
    (("service",), ("服务",)),
    (("interface", "api"), ("接口",)),
    (("endpoint",), ("端点",)),
    (("gateway",), ("网关",)),
    (("proxy",), ("代理",)),
    (("connection",), ("连接",)),
    (("socket",), ("套接字",)),
    (("port",), ("端口",)),
    (("latency",), ("延迟", "时延")),
    (("throughput",), ("吞吐",)),
    (("performance",), ("性能",)),
    (("bandwidth",), ("带宽",)),
    (("load",), ("负载",)),
    (("limit",), ("限制", "上限")),
    (("quota",), ("配额",)),
    (("threshold",), ("阈值",)),
    (("budget",), ("预算",)),
    # security
    (("security",), ("安全",)),
    (("secret", "key"), ("密钥", "机密")),
    (("password",), ("密码",)),
    (("token",), ("令牌",)),
    (("credential",), ("凭证", "凭据")),
    (("certificate",), ("证书",)),
    (("encryption", "encrypt"), ("加密",)),
    (("signature",), ("签名",)),
    (("permission",), ("权限",)),
    (("role",), ("角色",)),
    (("authentication", "auth"), ("认证", "鉴权")),
    (("authorization",), ("授权",)),
    (("audit",), ("审计",)),
    (("redaction", "redact", "masking"), ("脱敏",)),
    (("vulnerability",), ("漏洞",)),
    (("user",), ("用户",)),
    (("account",), ("账号", "账户")),
    (("tenant",), ("租户",)),
    # delivery and version control
    (("release",), ("发布",)),
    (("version",), ("版本",)),
    (("deploy", "deployment"), ("部署",)),
    (("build",), ("构建",)),
    (("test",), ("测试",)),
    (("commit",), ("提交",)),
    (("branch",), ("分支",)),
    (("merge",), ("合并",)),
    (("rebase",), ("变基",)),
    (("rollback", "revert"), ("回滚",)),
    (("upgrade",), ("升级",)),
    (("review",), ("评审", "审查")),
    (("pipeline",), ("流水线",)),
    (("rollout",), ("灰度", "上线")),
    (("flag", "toggle", "switch"), ("开关",)),
    (("container",), ("容器",)),
    (("image",), ("镜像",)),
    (("plugin",), ("插件",)),
    (("dependency",), ("依赖",)),
    (("package",), ("软件包",)),
    (("configuration", "config"), ("配置",)),
    (("setting",), ("设置",)),
    (("environment",), ("环境",)),
    # operations
    (("monitoring", "monitor"), ("监控",)),
    (("alert",), ("告警",)),
    (("metric",), ("指标",)),
    (("dashboard",), ("仪表盘",)),
    (("trace", "tracing"), ("链路", "追踪")),
    (("log", "logs", "logging"), ("日志",)),
    (("error",), ("错误",)),
    (("exception",), ("异常",)),
    (("failure", "fault"), ("故障", "失败")),
    (("crash",), ("崩溃",)),
    (("restart",), ("重启",)),
    (("incident", "outage"), ("事故",)),
    (("runbook", "manual"), ("手册",)),
    (("usage",), ("用量", "使用")),
    (("statistics", "stats"), ("统计",)),
    (("counter",), ("计数器",)),
    (("scan",), ("扫描",)),
    # code and data processing
    (("parser", "parse"), ("解析",)),
    (("encoding", "encode"), ("编码",)),
    (("decoder", "decode"), ("解码",)),
    (("serialization", "serialize"), ("序列化",)),
    (("filter",), ("过滤",)),
    (("sort",), ("排序",)),
    (("ranking", "rank"), ("排名",)),
    (("score",), ("评分", "分数")),
    (("pagination",), ("分页",)),
    (("cursor",), ("游标",)),
    (("template",), ("模板",)),
    (("render",), ("渲染",)),
    (("frontend",), ("前端",)),
    (("backend",), ("后端",)),
    (("upload",), ("上传",)),
    (("download",), ("下载",)),
    (("export",), ("导出",)),
    (("import",), ("导入",)),
    (("search",), ("搜索", "检索")),
    (("tokenizer", "segmentation"), ("分词",)),
    (("fusion",), ("融合",)),
    (("hybrid",), ("混合",)),
    (("vector", "embedding"), ("向量", "嵌入")),
    (("model",), ("模型",)),
    (("prompt",), ("提示词",)),
    (("session",), ("会话",)),
    (("summary",), ("摘要", "总结")),
    (("preview",), ("预览",)),
    (("candidate",), ("候选",)),
    (("delivery", "deliver"), ("交付",)),
    (("watermark",), ("水位线", "水印")),
    (("window",), ("窗口",)),
    (("payment",), ("支付",)),
    (("refund",), ("退款",)),
    (("billing",), ("计费",)),
    # the words notes are made of
    (("decision",), ("决策", "决定")),
    (("procedure", "workflow"), ("流程",)),
    (("step",), ("步骤",)),
    (("checklist",), ("清单", "检查清单")),
    (("rule",), ("规则",)),
    (("policy", "strategy"), ("策略",)),
    (("plan", "approach"), ("方案",)),
    (("design",), ("设计",)),
    (("constraint",), ("约束",)),
    (("observation",), ("观察",)),
    (("preference",), ("偏好",)),
    (("convention",), ("规范", "约定")),
    (("document", "documentation", "doc"), ("文档",)),
    (("note",), ("笔记",)),
    (("tradeoff",), ("取舍", "权衡")),
    (("optimization", "optimize"), ("优化",)),
    (("implementation", "implement"), ("实现",)),
    (("feature",), ("功能", "特性")),
    (("fix",), ("修复",)),
    (("refactor",), ("重构",)),
    (("deprecated", "obsolete"), ("废弃", "弃用")),
    (("old", "legacy"), ("旧版", "旧")),
)


Tables = tuple[dict[str, list[str]], dict[str, list[str]]]


@cache
def _tables(stem: Callable[[str], str]) -> Tables:
    """English stem -> Chinese words, Chinese word -> English words."""
    english: dict[str, list[str]] = {}
    chinese: dict[str, list[str]] = {}
    for english_words, chinese_words in ENTRIES:
        for word in english_words:
            for key in dict.fromkeys((word, stem(word))):
                targets = english.setdefault(key, [])
                targets.extend(c for c in chinese_words[:PER_ENTRY] if c not in targets)
        for word in chinese_words:
            targets = chinese.setdefault(word, [])
            targets.extend(e for e in english_words[:PER_ENTRY] if e not in targets)
    return english, chinese


def _english_forms(token: str, stem: Callable[[str], str]) -> tuple[str, ...]:
    """The word, its stem and its singular: the light stemmer alone misses ``caches`` ->
    ``cache`` (it strips ``es``) and ``policies`` -> ``policy``."""
    forms = [token, stem(token)]
    if token.endswith("ies"):
        forms.append(token[:-3] + "y")
    if token.endswith("s"):
        forms.append(token[:-1])
    return tuple(forms)


def expansions(token: str, *, han: bool, stem: Callable[[str], str]) -> list[str]:
    """The other language's words for one normalised query token (may be empty).

    An English token is looked up by its forms (:func:`_english_forms`); a Han token yields
    the translations of every glossary word it contains, longest entry words first, then in
    the token's order (so 互斥锁 gives mutex before 锁 gives lock). ``stem`` is the ranking's
    English stemmer.
    """
    english, chinese = _tables(stem)
    if not han:
        for form in _english_forms(token, stem):
            if form in english:
                return list(english[form])
        return []
    found: list[str] = []
    contained = (word for word in chinese if word in token)
    for word in sorted(contained, key=lambda word: (-len(word), token.find(word), word)):
        found.extend(e for e in chinese[word] if e not in found)
    return found
