from __future__ import annotations

from dsh_knowledge.tokenize import (
    CONTRAST_TOKENS,
    STOP_WORDS,
    content_tokens,
    normalize_text,
    query_tokens,
    tokenize,
)


def test_normalisation_is_nfkc_lowercase_and_punctuation_to_single_spaces() -> None:
    assert normalize_text("  Ｒｅｓｐｏｎｓｅ—Router::route()  v2_beta ") == (
        "response router route v2 beta"
    )


def test_latin_tokens_are_the_space_separated_words() -> None:
    assert tokenize(normalize_text("Provider selection must use ResponseRouter.")) == [
        "provider",
        "selection",
        "must",
        "use",
        "responserouter",
    ]


def test_query_tokens_drop_stopwords_short_tokens_and_duplicates() -> None:
    assert query_tokens(normalize_text("How do we use the DB? x db Router router")) == [
        "db",
        "router",
    ]


def test_query_tokens_keep_only_the_first_sixteen() -> None:
    words = [f"word{n}" for n in range(20)]
    assert query_tokens(" ".join(words)) == words[:16]


def test_han_runs_expand_into_bigrams() -> None:
    assert content_tokens("连接池耗尽") == ["连接", "接池", "池耗", "耗尽"]


def test_han_glued_to_latin_is_split_first() -> None:
    assert content_tokens("api接口v2") == ["api", "接口", "v2"]


def test_single_han_character_stays_one_token() -> None:
    assert content_tokens("用 redis") == ["用", "redis"]


def test_chinese_query_shares_bigrams_with_chinese_content() -> None:
    query = set(query_tokens(normalize_text("数据库连接池")))
    content = set(content_tokens("连接池耗尽导致超时"))
    assert query & content == {"连接", "接池"}


def test_word_lists_match_the_earlier_tool() -> None:
    assert len(STOP_WORDS) == 119
    assert {"a", "your", "using", "please"} <= STOP_WORDS
    assert len(CONTRAST_TOKENS) == 25
    assert {"not", "never", "must", "without"} <= CONTRAST_TOKENS
