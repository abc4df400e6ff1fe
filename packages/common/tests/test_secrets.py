"""The shared secret detector: every shape of the table, in every context, both sensitivities."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common import secrets as secrets_module
from dsh_common.secrets import Span, contains_secret, find_secrets, is_secret_name, redact

from .secret_shapes import GLUED, PROSE, SHAPES, Shape, cases

CASES = cases()
MARK = "[REDACTED]"


def _mark(span: Span) -> str:
    return MARK


def test_the_table_covers_every_kind_the_detector_reports() -> None:
    assert len(SHAPES) >= 50
    kinds = {shape.kind for shape in SHAPES}
    assert {
        "openai-key",
        "anthropic-key",
        "github-token",
        "aws-access-key-id",
        "slack-token",
        "slack-webhook",
        "stripe-key",
        "google-api-key",
        "jwt",
        "bearer",
        "basic-auth",
        "private-key",
        "url-password",
        "assignment",
    } <= kinds


@pytest.mark.parametrize("eager", [False, True], ids=["refusing", "redacting"])
@pytest.mark.parametrize(("case", "shape", "text"), CASES, ids=[c[0] for c in CASES])
def test_each_shape_is_found_and_redacted_in_each_context(
    case: str, shape: Shape, text: str, eager: bool
) -> None:
    spans = find_secrets(text, eager=eager)
    assert contains_secret(text, eager=eager), case
    # The shape's own kind covers where its secret sits (other rules may report it too).
    where = text.find(shape.hidden) if shape.hidden in text else None
    if where is not None:
        assert any(
            s.kind == shape.kind and s.start <= where and where + len(shape.hidden) <= s.end
            for s in spans
        ), (case, spans)
    redacted = redact(text, _mark, eager=eager)
    assert shape.hidden not in redacted, (case, redacted)
    assert MARK in redacted
    glued = GLUED.get(case.rsplit("/", 1)[1])
    if glued:  # glued Chinese on both sides is kept, only the secret goes
        assert redacted.startswith(glued[0]) and redacted.endswith(glued[1]), redacted
    if case.endswith("/json"):  # a redacted JSON document is still JSON
        json.loads(redacted)


@pytest.mark.parametrize("eager", [False, True], ids=["refusing", "redacting"])
@pytest.mark.parametrize("text", PROSE)
def test_ordinary_prose_is_left_alone(text: str, eager: bool) -> None:
    assert find_secrets(text, eager=eager) == []
    assert redact(text, _mark, eager=eager) == text


def test_the_redacting_sensitivity_adds_the_earlier_filters_short_forms() -> None:
    short = ["sk-" + "short", "SK-" + "abc", "gh" + "p_abcd", "Bearer abc123", "?token=x"]
    for text in short:
        assert not contains_secret(text), text
        assert contains_secret(text, eager=True), text
    assert redact("Bear" + "er abc123 ok", _mark, eager=True) == "[REDACTED] ok"


_PIECES = [s.snippet for s in SHAPES] + list(PROSE)
_HIDDEN = {s.snippet: s.hidden for s in SHAPES}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_PIECES), st.sampled_from([" ", "\n", "，", "密钥", "\t", "。"])),
        max_size=6,
    )
)
def test_any_mix_of_shapes_and_prose_is_redacted_in_both_sensitivities(
    pieces: list[tuple[str, str]],
) -> None:
    text = "".join(piece + gap for piece, gap in pieces)
    covered = set()
    for span in find_secrets(text, eager=True):
        covered.update(range(span.start, span.end))
    for span in find_secrets(text):  # whatever the refusing side finds, redacting hides
        assert set(range(span.start, span.end)) <= covered, (text, span)
    for eager in (False, True):
        once = redact(text, _mark, eager=eager)
        for piece, _ in pieces:
            if piece in _HIDDEN:
                assert _HIDDEN[piece] not in once, (text, once)
        # Redacting again changes nothing: the marker is never itself a secret.
        assert redact(once, _mark, eager=eager) == once


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("MYSQL_ROOT_PASSWORD", True),
        ("client_secret", True),
        ("clientSecret", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("aws_secret_access_key", True),
        ("GITHUB_TOKEN", True),
        ("APIKey", True),
        ("api-key", True),
        ("x-api-key", True),
        ("private_key", True),
        ("signingKey", True),
        ("DB_PASS", True),
        ("_authToken", True),
        ("passphrase", True),
        ("PGPASSWORD", True),
        ("DBPASSWORD", True),
        ("DBPASS", True),
        ("SSHPASS", True),
        ("MYSQLPASS", True),
        ("rootpasswd", True),
        ("pgpassphrase", True),
        ("max_token", False),
        ("max_tokens", False),
        ("token_count", False),
        ("password_reset", False),
        ("DB_PASSWORD_FILE", False),
        ("key", False),
        ("primary_key", False),
        ("pass", False),
        ("bypass", False),
        ("auth", False),
        ("tokenizer", False),
        ("", False),
        ("compass", False),
        ("trespass", False),
        ("surpass", False),
        ("passport", False),
        ("PGPASSFILE", False),
        ("passenger", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_auth_names_a_secret_only_when_redacting() -> None:
    assert is_secret_name("authorization", eager=True) and is_secret_name("auth", eager=True)
    assert not is_secret_name("authorization")


def test_overlapping_spans_are_replaced_once_with_the_first_kind() -> None:
    text = "curl -H 'Authorization: Bear" + "er " + SHAPES[0].snippet + "' https://x"
    seen: list[str] = []
    out = redact(text, lambda span: seen.append(span.kind) or "<" + span.kind + ">", eager=True)
    assert out == "curl -H 'Authorization: <bearer>' https://x"
    assert seen == ["bearer"]


def test_a_private_key_block_goes_whole_and_a_cut_one_up_to_its_body() -> None:
    block = next(s for s in SHAPES if s.label == "rsa private key").snippet
    out = redact("before\n" + block + "\nafter", _mark)
    assert out == "before\n[REDACTED]\nafter"
    cut = block.split("-----END")[0]  # pasted without its END line
    assert redact("key:\n" + cut, _mark) == "key:\n[REDACTED]"
    escaped = json.dumps({"k": cut})  # cut inside a JSON string: "\n" escapes
    assert redact(escaped, _mark) == '{"k": "[REDACTED]"}'


def test_placeholders_and_the_marker_are_not_secrets() -> None:
    for text in [
        "password=${DB_PASSWORD}",
        "token=$TOKEN",
        "api_key: <api-key>",
        "secret=***",
        "password: [REDACTED]",
        "postgres://u:${PW}@h/db",
        "password=null",
        "https://***@github.com/x",
    ]:
        assert not contains_secret(text, eager=True), text


@pytest.mark.parametrize(
    "text",
    [
        "密钥是sk" + "-" + "A" * 24 + "，请保管",
        "令牌gh" + "p_" + "B" * 36 + "已过期",
        "访问AK" + "IA" + "IOSFODNN7EXAMPLE" + "密钥",
        "数据库DB_PASSWORD=" + "s3cr3t" + "然后重启",
    ],
)
def test_tokens_glued_to_chinese_are_found_in_both_sensitivities(text: str) -> None:
    assert contains_secret(text) and contains_secret(text, eager=True)
    out = redact(text, _mark)
    assert out.count(MARK) >= 1 and out[0] in "密令访数" and not out[-1].isascii()


# -- the cost of a scan: the compiled patterns themselves ------------------------------------


def _patterns() -> list[re.Pattern[str]]:
    """Every compiled pattern of the detector: module constants, rule tables, value maps."""
    found: list[re.Pattern[str]] = []
    for value in vars(secrets_module).values():
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, tuple):
            items = list(value)
        else:
            items = [value]
        for item in items:
            if isinstance(item, re.Pattern):
                found.append(item)
            elif isinstance(item, secrets_module._Rule):
                found.append(item.pattern)
    return found


def _walk(items: Any, in_repeat: bool, problems: list[str], where: str) -> None:
    for op, av in items:
        name = str(op)
        if name in ("POSSESSIVE_REPEAT", "ATOMIC_GROUP"):
            problems.append(f"{where}: {name} (newer than Python 3.8)")
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, sub = av
            variable = high > 1 and low != high
            if in_repeat and variable:
                problems.append(f"{where}: a variable repeat inside a repeat")
            _walk(sub, in_repeat or high > 1, problems, where)
        elif name == "SUBPATTERN":
            _walk(av[-1], in_repeat, problems, where)
        elif name == "BRANCH":
            for branch in av[1]:
                _walk(branch, in_repeat, problems, where)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _walk(av[1], in_repeat, problems, where)


def test_no_pattern_can_backtrack_over_a_run_or_needs_a_newer_python() -> None:
    # A repeat holding a variable repeat ("(a+)*") is what makes a backtracking engine
    # exponential; possessive repeats and atomic groups would not compile on the Python an
    # earlier sync may run the memory repository's filter script with.
    from re import _parser  # type: ignore[attr-defined]

    patterns = _patterns()
    assert len(patterns) >= 30
    problems: list[str] = []
    for pattern in patterns:
        _walk(_parser.parse(pattern.pattern, pattern.flags), False, problems, pattern.pattern[:40])
    assert problems == []


def test_a_megabyte_of_near_misses_is_answered_correctly() -> None:
    # Correctness on the bench's adversarial inputs (their speed is bench_secrets.py's job).
    megabyte = 1024 * 1024
    near_misses = [
        "sk-ab ",
        "eyJaaaaaaaaaaa-",
        "password=",
        "a=",
        'password="',
        "x://u:p",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "%41",
        "Bearer x ",
        "AKIA",
        "密码：",
        "password：“",
        "密码：“a",
        "“token”＝“",
    ]
    for unit in near_misses:
        text = (unit * (megabyte // len(unit) + 1))[:megabyte]
        spans = find_secrets(text)
        if unit in ("password=", 'password="', "-----BEGIN RSA PRIVATE KEY-----\n", "password：“"):
            assert spans, unit  # these do hold secrets (or cut key blocks)
        else:
            assert spans == [], (unit, spans[:3])


def test_a_value_inside_json_escaped_text_ends_at_the_escaped_newline() -> None:
    # A transcript renders a tool call as JSON: the newline after a value is the two
    # characters "\n". A redacted value there is a placeholder, a real one is found whole.
    redacted = '- tool: shell({"cmd": "aws_secret_access_key = [REDACTED]\\n"})\\n'
    assert find_secrets(redacted) == []
    secret = "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
    text = f'shell({{"cmd": "aws_secret_access_key = {secret}\\n"}})'
    spans = find_secrets(text)
    assert [(span.kind, text[span.start : span.end]) for span in spans] == [("assignment", secret)]


def test_a_redacted_flag_inside_json_inside_json_is_a_placeholder() -> None:
    text = '{"cmd": "{\\"cmd\\": \\"mysql --password [REDACTED]\\"}"}'
    assert find_secrets(text) == []
