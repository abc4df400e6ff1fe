from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common.text import han_bigrams, han_runs, normalize, query_terms, segment_words

# Segments that Node's Intl.Segmenter("zh", {granularity: "word"}) marks isWordLike
# (Node 20, ICU 77), recorded by running it on these very strings.
INTL_SEGMENTER_CASES = [
    (
        "数据库连接池耗尽导致超时 connection pool exhausted",
        [
            "数据",
            "库",
            "连接",
            "池",
            "耗",
            "尽",
            "导致",
            "超",
            "时",
            "connection",
            "pool",
            "exhausted",
        ],
    ),
    (
        "登录请求在测试环境中超时，需要检查 Redis 配置。",
        ["登录", "请求", "在", "测试", "环境", "中", "超", "时", "需要", "检查", "Redis", "配置"],
    ),
    (
        "缓存雪崩的预防: use jittered TTLs (v2.3.1) for user_id=42",
        [
            "缓",
            "存",
            "雪崩",
            "的",
            "预防",
            "use",
            "jittered",
            "TTLs",
            "v2.3.1",
            "for",
            "user_id",
            "42",
        ],
    ),
    (
        "It's 3.14 e.g. foo_bar 😀 テスト 한국어 text",
        ["It's", "3.14", "e.g", "foo_bar", "テスト", "한국어", "text"],
    ),
    (
        "ＡＢＣ full-width １２３ and naïve café",
        ["ＡＢＣ", "full", "width", "１２３", "and", "naïve", "café"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), INTL_SEGMENTER_CASES)
def test_segments_match_intl_segmenter(text: str, expected: list[str]) -> None:
    assert segment_words(text) == expected


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_segments_match_node_directly() -> None:
    script = (
        "const t=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "const s=new Intl.Segmenter('zh',{granularity:'word'});"
        "console.log(JSON.stringify(t.map(x=>[...s.segment(x)]"
        ".filter(g=>g.isWordLike).map(g=>g.segment))))"
    )
    texts = [text for text, _ in INTL_SEGMENTER_CASES] + ["𠀀𠀁 astral 汉字 mixed"]
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == [segment_words(t) for t in texts]


def test_normalize_folds_width_and_case() -> None:
    assert normalize("ＡＢＣ１２３ Ｒｅｄｉｓ") == "abc123 redis"
    assert normalize("ﬁle") == "file"


def test_han_runs_and_bigrams() -> None:
    assert han_runs("数据库 pool 连接池") == ["数据库", "连接池"]
    assert han_bigrams("数据库 x 连接池") == ["数据", "据库", "连接", "接池"]
    assert han_bigrams("池") == []


def test_query_terms_cover_dictionary_splits() -> None:
    terms = query_terms("数据库连接池 Redis")
    # ICU splits 连接池 as 连接|池; the bigram 接池 still matches "连接池耗尽" text.
    assert {"连接", "接池", "数据", "据库", "redis"} <= set(terms)
    assert len(terms) == len(set(terms))


def test_query_terms_without_dedupe_keep_every_term() -> None:
    assert query_terms("超时 超时", dedupe=False).count("超时") == 2


# One character of each ASCII word-break class (UAX #29): letter, digit, "_", MidNumLet
# ".", Single_Quote "'", MidNum "," ";", MidLetter ":", Double_Quote, space, newlines, other.
WORD_BREAK_CLASSES = ["a", "1", "_", ".", "'", ",", ";", ":", '"', " ", "\n", "\r", "\t", "-"]


def _icu_words() -> Callable[[str], list[str]]:
    import icu

    from dsh_common.text import _icu_segmenter

    return _icu_segmenter(icu)


def test_ascii_words_are_icus_words() -> None:
    # ASCII text is segmented by a regular expression, never by ICU: it must give exactly
    # what ICU gives, for every arrangement of the word-break classes.
    icu_words = _icu_words()
    samples = [
        "".join(chars)
        for size in range(1, 5)
        for chars in itertools.product(WORD_BREAK_CLASSES, repeat=size)
    ]
    samples += ["".join(pair) for pair in itertools.product(map(chr, range(128)), repeat=2)]
    samples += ["don't retry e.g. after 3.14 s or 1,000 calls; user_id=42 a:b __ _x x_ 1'2"]
    for sample in samples:
        assert segment_words(sample) == icu_words(sample), repr(sample)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_random_ascii_words_are_icus_words(text: str) -> None:
    assert segment_words(text) == _icu_words()(text)


def test_an_ascii_query_does_not_load_icu() -> None:
    probe = (
        "import sys; from dsh_common.text import query_terms; "
        "print(query_terms('Why does login time out?'), 'icu' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "['why', 'does', 'login', 'time', 'out'] False"
