"""The secret filter: a table of real-looking secrets that must be refused and text that must pass.

Every token below is assembled from pieces so this file itself never holds a literal that a
repository secret scanner would flag.
"""

from __future__ import annotations

import pytest

from dsh_knowledge.privacy import (
    PRIVACY_REJECTION_MESSAGE,
    PrivacyRejectedError,
    contains_sensitive_content,
    ensure_no_secrets,
)

A36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
UP16 = "IOSFODNN7EXAMPLE"
HEX40 = "0123456789abcdef0123456789abcdef01234567"
JWT = (
    "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + "."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "dBjftJeZ4CVPmB92K27uhbUJU1p1r"
)

POSITIVE = [
    ("github classic pat", "token " + "gh" + "p_" + A36),
    ("github oauth", "gh" + "o_" + A36),
    ("github user-to-server", "gh" + "u_" + A36),
    ("github server-to-server", "gh" + "s_" + A36),
    ("github refresh", "gh" + "r_" + A36),
    ("github fine-grained", "github" + "_pat_" + "11ABCDEFG0" + "_" + A36),
    ("aws access key", "key AK" + "IA" + UP16),
    ("aws sts key", "AS" + "IA" + UP16),
    ("slack bot", "xo" + "xb-" + "1234567890-" + "abcdefABCDEF"),
    ("slack app", "xo" + "xa-" + "2-1234567890-abcdef"),
    ("slack user", "xo" + "xp-" + "1234567890-0987654321"),
    ("slack refresh", "xo" + "xr-" + "abcdefghijkl"),
    ("slack legacy", "xo" + "xs-" + "abcdefghij12"),
    ("stripe live", "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe test", "sk" + "_test_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("openai legacy", "sk" + "-" + A36),
    ("openai project", "sk" + "-proj-" + A36),
    ("anthropic", "sk" + "-ant-api03-" + A36),
    ("deepseek", "sk" + "-" + HEX40[:32]),
    ("generic sk underscore", "sk" + "_" + A36),
    ("google api key", "AI" + "za" + "SyA" + A36[:33]),
    ("xai", "xa" + "i-" + A36),
    ("bearer header", "Authorization: Bear" + "er " + A36),
    ("bearer lowercase", "curl -H 'authorization: bear" + "er " + A36 + "=='"),
    ("jwt", "session=" + JWT),
    ("password assignment", "pass" + "word=" + "hunter22"),
    ("password colon quoted", "pass" + 'word: "s3cr3t!"'),
    ("passwd", "pass" + "wd=" + "letmein"),
    ("pwd", "pw" + "d = " + "Tr0ub4dor"),
    ("api_key", "api" + "_key=" + "abc123def"),
    ("api-key", "API" + "-KEY: " + "xyz987"),
    ("apikey", "api" + "key=" + "q1w2e3"),
    ("access_token", "access" + "_token=" + "zzz999"),
    ("auth-token", "auth" + "-token: " + "t0k3n"),
    ("client_secret", "client" + "_secret=" + "c5e6r7"),
    ("private_key assignment", "private" + "_key='" + "mysecretvalue'"),
    ("credential", "credential" + "=" + "admin:admin"),
    ("rsa private key", "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow"),
    ("openssh private key", "-----BEGIN OPENSSH " + "PRIVATE KEY-----"),
    ("ec private key", "-----BEGIN EC " + "PRIVATE KEY-----"),
    ("pkcs8 private key", "-----BEGIN " + "PRIVATE KEY-----"),
    ("postgres url", "postgres" + "://app:" + "s3cret@db.internal:5432/app"),
    ("postgresql url", "postgresql" + "://u:" + "p@localhost/db"),
    ("mysql url", "mysql" + "://root:" + "toor@127.0.0.1/x"),
    ("mongodb srv url", "mongodb+srv" + "://user:" + "pw123@cluster0.example.net"),
    ("redis url", "redis" + "://default:" + "redispw@cache:6379"),
    ("token inside prose", "The deploy uses " + "gh" + "p_" + A36 + " for the registry."),
]

NEGATIVE = [
    ("plain fact", "The payments service uses PostgreSQL 16."),
    ("decision", "We decided to route provider calls through ResponseRouter."),
    ("python code", "def add(a, b):\n    return a + b"),
    ("typescript code", "const router = new ResponseRouter({ retries: 3 });"),
    ("password word alone", "Reset the password through the admin panel."),
    ("password policy", "Passwords must be at least 12 characters long."),
    ("api key prose", "The API key lives in the vault, never in the repository."),
    ("password empty assignment", "password="),
    ("password two chars", "pwd=ab"),
    ("bearer short", "Use a Bearer token in the Authorization header."),
    ("bearer short value", "Bearer abc123"),
    ("jwt prefix only", "JWTs start with eyJ followed by base64."),
    ("jwt two parts", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("sk short", "sk-short"),
    ("sk in word", "task-manager-for-the-whole-team-and-more"),
    ("ghp short", "gh" + "p_abc"),
    ("aws too short", "AKIA1234"),
    ("aws lowercase", "akia" + UP16.lower()),
    ("slack short", "xo" + "xb-123"),
    ("stripe short", "sk_live_123"),
    ("google short", "AIzaShort"),
    ("xai short", "xai-abc"),
    ("postgres no password", "postgres://db.internal:5432/app"),
    ("postgres user only", "postgresql://app@localhost/db"),
    ("http url with port", "http://localhost:8080/api/v1"),
    ("redis no auth", "redis://cache:6379/0"),
    ("public key", "-----BEGIN PUBLIC KEY-----"),
    ("certificate", "-----BEGIN CERTIFICATE-----"),
    ("git sha", "Fixed in commit " + HEX40),
    ("uuid", "Item 3f2b8c1e-9d4a-4e6b-8f7c-2a1b0c9d8e7f was archived."),
    ("chinese", "我们决定使用 PostgreSQL 作为主数据库。"),
    ("markdown", "## Setup\n\nRun `make setup` then `make test`."),
    ("shell", "export PATH=$HOME/.local/bin:$PATH"),
    ("config key without value", "Set client_secret in the environment before deploy."),
    ("credential noun", "Credentials rotate every 90 days."),
    ("tokens discussion", "access tokens expire after one hour; refresh them on 401."),
    ("yaml", "retries: 3\ntimeout: 30s\nregion: eu-west-1"),
    ("file path", "src/auth/password_reset.py handles the reset flow."),
    ("sql", "SELECT id FROM users WHERE email = ? LIMIT 1;"),
    ("json", '{"name": "dsh", "version": "0.1.0"}'),
    ("hex color", "The brand color is #1a2b3c."),
    ("version", "Requires Python >= 3.11 and Node 20."),
    ("mixed case words", "SkipList and AkiaNode are class names."),
]


def test_tables_are_large_enough() -> None:
    assert len(POSITIVE) >= 40
    assert len(NEGATIVE) >= 40


@pytest.mark.parametrize(("label", "text"), POSITIVE, ids=[p[0] for p in POSITIVE])
def test_secret_shapes_are_refused(label: str, text: str) -> None:
    assert contains_sensitive_content(text), label
    with pytest.raises(PrivacyRejectedError) as caught:
        ensure_no_secrets(text)
    assert str(caught.value) == PRIVACY_REJECTION_MESSAGE
    assert caught.value.code == "privacy-policy-rejected"


@pytest.mark.parametrize(("label", "text"), NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_ordinary_text_passes(label: str, text: str) -> None:
    assert not contains_sensitive_content(text), label
    ensure_no_secrets(text, [{"type": "file", "source": text, "locator": text}])


@pytest.mark.parametrize("field", ["source", "locator"])
def test_evidence_fields_are_filtered(field: str) -> None:
    secret = "gh" + "p_" + A36
    record = {"type": "file", "source": "src/a.py", field: secret}
    with pytest.raises(PrivacyRejectedError) as caught:
        ensure_no_secrets("Plain content.", [record])
    assert secret not in str(caught.value)


def test_non_strings_are_not_sensitive() -> None:
    assert not contains_sensitive_content(None)
    assert not contains_sensitive_content(12345)


def test_agent_layer_codes_are_unique_and_distinct_from_the_core() -> None:
    import inspect

    import dsh_knowledge.errors as core
    from dsh_knowledge.tool_errors import ToolInputError, ToolUnavailableError

    core_codes = {
        cls.code
        for _, cls in inspect.getmembers(core, inspect.isclass)
        if issubclass(cls, core.KnowledgeError)
    }
    agent_codes = [PrivacyRejectedError.code, ToolInputError.code, ToolUnavailableError.code]
    assert agent_codes == ["privacy-policy-rejected", "invalid-tool-input", "tool-unavailable"]
    assert not core_codes & set(agent_codes)
