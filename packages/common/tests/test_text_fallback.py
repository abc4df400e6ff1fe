"""Both segmentation paths, each in a real interpreter: with ICU, and with ``icu`` hidden.

The fallback is forced the way a platform without a pyicu-wheels wheel would see it: a
meta-path finder installed before anything else refuses to find ``icu``, so the import
inside dsh_common.text fails for real. Nothing of ours is patched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from dsh_common._segment_fallback import segment_words as fallback_segment
from dsh_common.text import FALLBACK_WARNING

HIDE_ICU = textwrap.dedent(
    """
    import sys

    class HideIcu:
        def find_spec(self, name, path=None, target=None):
            if name == "icu" or name.startswith("icu."):
                raise ImportError("icu hidden by the test")
            return None

    sys.meta_path.insert(0, HideIcu())
    """
)

PROBE = textwrap.dedent(
    """
    import json, sys
    from dsh_common import text
    texts = json.loads(sys.argv[1])
    out = {
        "segments": [text.segment_words(t) for t in texts],
        "terms": [text.query_terms(t) for t in texts],
        "backend": text.segmenter_name(),
        "icu_loaded": "icu" in sys.modules,
    }
    print(json.dumps(out, ensure_ascii=False))
    """
)

TEXTS = [
    "数据库连接池耗尽导致超时 connection pool exhausted",
    "don't retry e.g. after 3.14 s or 1,000 calls; user_id=42",
    "カタカナ 한국어 Ünïcode",
]


def _run(hide_icu: bool) -> subprocess.CompletedProcess[str]:
    code = (HIDE_ICU if hide_icu else "") + PROBE
    return subprocess.run(
        [sys.executable, "-c", code, json.dumps(TEXTS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_with_icu_no_warning_and_dictionary_words() -> None:
    done = _run(hide_icu=False)
    out = json.loads(done.stdout)
    assert out["backend"] == "icu"
    assert done.stderr == ""
    assert out["segments"][0][:2] == ["数据", "库"]  # ICU's dictionary finds words


def test_without_icu_falls_back_with_exactly_one_warning() -> None:
    done = _run(hide_icu=True)
    out = json.loads(done.stdout)
    assert out["backend"] == "fallback"
    assert out["icu_loaded"] is False
    # Six texts were segmented (three twice); the warning is printed once.
    assert done.stderr.count(FALLBACK_WARNING) == 1
    han = out["segments"][0]
    assert han[:8] == ["数", "据", "库", "连", "接", "池", "耗", "尽"]
    assert han[-3:] == ["connection", "pool", "exhausted"]
    assert out["segments"][1] == [
        "don't",
        "retry",
        "e.g",
        "after",
        "3.14",
        "s",
        "or",
        "1,000",
        "calls",
        "user_id",
        "42",
    ]
    assert out["segments"][2] == ["カタカナ", "한국어", "Ünïcode"]
    # Chinese recall still works: the Han bigrams are identical on both paths.
    with_icu = json.loads(_run(hide_icu=False).stdout)
    bigrams = {t for t in with_icu["terms"][0] if len(t) == 2 and "\u4e00" <= t[0] <= "\u9fff"}
    assert bigrams <= set(out["terms"][0])
    assert "连接" in out["terms"][0]


def test_fallback_matches_icu_on_latin_text() -> None:
    # Where there is no dictionary involved, the two engines agree.
    from dsh_common.text import segment_words

    for sample in ["pool exhausted after 3.14 s", "naïve café don't", "v2.3.1 user_id=42"]:
        assert fallback_segment(sample) == segment_words(sample)


def test_sitecustomize_hiding_icu_reaches_the_fallback(tmp_path: Path) -> None:
    # The blocker as sitecustomize, so every interpreter start (a console script too) has it.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE_ICU)
    probe = "from dsh_common.text import query_terms as q; print(q('连接池 pool'))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "['连', '接', '池', 'pool', '连接', '接池']"
    assert done.stderr.count("pyicu-wheels") == 1
