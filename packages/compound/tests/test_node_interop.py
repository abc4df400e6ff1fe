"""Cross-checks against Node itself (the earlier helper's runtime), when node is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dsh_compound.record import parse_record
from dsh_compound.retrieval import recall_terms

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
GOLDEN = Path(__file__).parent / "golden" / "login-timeout.md"

# The contract's recall tokenisation (docs/compatibility/compound.md, Recall), written with
# Intl.Segmenter as the Node helper does.
TERMS_SCRIPT = r"""
const q = process.argv[1];
const seg = new Intl.Segmenter("zh", {granularity: "word"});
const words = [...seg.segment(q)].filter((s) => s.isWordLike).map((s) => s.segment);
const grams = [];
for (const run of q.match(/[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu) ?? [])
  for (let i = 0; i + 1 < run.length; i++) grams.push(run.slice(i, i + 2));
const terms = [...words, ...grams].map((t) => t.normalize("NFKC").toLowerCase()).filter(Boolean);
console.log(JSON.stringify([...new Set(terms.slice(0, 999))]));
"""

STRINGIFY_SCRIPT = r"""
const lines = require("fs").readFileSync(0, "utf8").split("\n");
const value = JSON.parse(lines[1].slice("dsh_compound: ".length));
process.stdout.write(JSON.stringify(value));
"""


def node(script: str, *args: str, stdin: bytes | None = None) -> str:
    assert NODE is not None
    result = subprocess.run(
        [NODE, "-e", script, *args], input=stdin, capture_output=True, check=True, timeout=30
    )
    return result.stdout.decode("utf-8")


@pytest.mark.parametrize(
    "query",
    [
        "数据库连接池超时",
        "Login 超时 timeout ｐｏｏｌ",
        "用户登录失败后重试三次仍然超时，怀疑是缓存配置错误",
        "HTTP 502 网关错误 after deploy v2.3.1",
    ],
)
def test_query_terms_match_node_intl_segmenter(query: str) -> None:
    assert recall_terms(query) == json.loads(node(TERMS_SCRIPT, query))


def test_front_matter_is_what_json_stringify_writes() -> None:
    data = GOLDEN.read_bytes()
    line = data.split(b"\n")[1].decode("utf-8").removeprefix("dsh_compound: ")
    assert node(STRINGIFY_SCRIPT, stdin=data) == line
    assert json.loads(line) == parse_record(data).metadata
