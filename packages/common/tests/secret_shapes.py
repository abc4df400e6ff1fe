"""The table of secret shapes every product's tests replay: one list, many contexts.

dsh-common tests the detector on it, dsh-knowledge proves each shape is refused, dsh-memory
proves each is gone from what a sync agent reads and from the memory's Git history. Every
token is assembled from pieces, so no literal secret sits in the repository for a scanner
(or an attacker) to find.

A :class:`Shape` is a secret in its natural form (``snippet``) and the part of it that must
never survive (``secret``). :func:`contexts` places a snippet in English prose, glued to
Chinese on both sides, in JSON, in an env file, in a URL and as a Chinese input method types
it (full-width colon, equals sign and quotes: ``password：…``, ``DB_PASSWORD＝…``,
“token”：“…”); a shape may give its own form for a context where the generic wrapping would
not be how the secret really appears.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from urllib.parse import quote

CONTEXTS = ("english", "cjk", "json", "env", "url", "ime-colon", "ime-equals", "ime-quoted")
#: What the CJK context glues on each side; redaction must leave both intact.
CJK_BEFORE = "部署用的是"
CJK_AFTER = "不要外传"
#: What the input-method contexts put on each side (full-width punctuation), kept intact too.
IME_BEFORE = "部署配置："
IME_AFTER = "，不要外传。"
#: The text each context must still start and end with after redaction.
GLUED = {
    "cjk": (CJK_BEFORE, CJK_AFTER),
    **{name: (IME_BEFORE, IME_AFTER) for name in CONTEXTS if name.startswith("ime-")},
}

A36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
UP16 = "IOSFODNN7" + "EXAMPLE"
HEX32 = "0123456789abcdef" * 2
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"
PASSWORD = "Hunt" + "er2-x9Q"
JWT = (
    "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + "."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "dBjftJeZ4CVPmB92K27uhbUJU1p1r"
)
PEM_BODY = "MIIEow" + "IBAAKCAQEA7Z1x" + "Q2b3c4d5e6f7g8h9"


def _pem(kind: str, *, headers: str = "") -> str:
    label = f"{kind} PRIVATE KEY".strip()
    return (
        f"-----BEGIN {label}-----\n{headers}{PEM_BODY}\n{PEM_BODY[::-1]}==\n-----END {label}-----"
    )


@dataclass(frozen=True)
class Shape:
    label: str
    #: The kind :func:`dsh_common.secrets.find_secrets` reports for it.
    kind: str
    snippet: str
    #: The substring that must be gone after redaction (default: the whole snippet).
    secret: str = ""
    forms: dict[str, str] = field(default_factory=dict)

    @property
    def hidden(self) -> str:
        return self.secret or self.snippet


def _ime(name: str, value: str, *, colon: str = "：") -> dict[str, str]:
    """``name`` set to ``value`` as a Chinese input method types it, with full-width
    separators and quotes (``colon`` is what follows a quoted name)."""
    return {
        "ime-colon": f"{IME_BEFORE}{name}：{value}{IME_AFTER}",
        "ime-equals": f"{IME_BEFORE}{name}＝{value}{IME_AFTER}",
        "ime-quoted": f"{IME_BEFORE}“{name}”{colon}“{value}”{IME_AFTER}",
    }


def _assignment(label: str, name: str, value: str = PASSWORD, **forms: str) -> Shape:
    defaults = {
        "json": json.dumps({name: value}),
        "env": f"{name}={value}\n",
        "url": f"https://example.com/login?{name}={quote(value, safe='')}&next=/",
        **_ime(name, value),
    }
    return Shape(label, "assignment", f"{name}={value}", value, {**defaults, **forms})


def _url(label: str, url: str, password: str) -> Shape:
    return Shape(label, "url-password", url, password, {"url": url + "?sslmode=require"})


_SLACK_HOOK = "https://hooks.slack.com/services/" + "T0123ABCD/" + "B0123ABCD/" + A36[:24]
_DISCORD_HOOK = "https://discord.com/api/webhooks/" + "123456789012/" + A36 + "_x"
_BASIC = base64.b64encode(b"deploy:" + PASSWORD.encode()).decode()

SHAPES: tuple[Shape, ...] = (
    Shape("openai legacy key", "openai-key", "sk" + "-" + A36),
    Shape("openai project key", "openai-key", "sk" + "-proj-" + A36),
    Shape("anthropic key", "anthropic-key", "sk" + "-ant-api03-" + A36),
    Shape("deepseek key", "openai-key", "sk" + "-" + HEX32),
    Shape("github classic token", "github-token", "gh" + "p_" + A36),
    Shape("github oauth token", "github-token", "gh" + "o_" + A36),
    Shape("github user-to-server token", "github-token", "gh" + "u_" + A36),
    Shape("github server-to-server token", "github-token", "gh" + "s_" + A36),
    Shape("github refresh token", "github-token", "gh" + "r_" + A36),
    Shape("github fine-grained token", "github-token", "github" + "_pat_11ABCDEFG0_" + A36),
    Shape("gitlab token", "gitlab-token", "gl" + "pat-" + A36[:20]),
    Shape("aws access key id", "aws-access-key-id", "AK" + "IA" + UP16),
    Shape("aws sts key id", "aws-access-key-id", "AS" + "IA" + UP16),
    _assignment(
        "aws secret access key (ini)",
        "aws_secret_access_key",
        AWS_SECRET,
        env="aws_secret_access_key = " + AWS_SECRET + "\n",
    ),
    _assignment("aws secret access key (env)", "AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    Shape("slack bot token", "slack-token", "xo" + "xb-" + "1234567890-" + A36[:24]),
    Shape("slack user token", "slack-token", "xo" + "xp-" + "1234567890-0987654321-" + A36[:8]),
    Shape("slack webhook", "slack-webhook", _SLACK_HOOK, forms={"url": _SLACK_HOOK + "?x=1"}),
    Shape(
        "discord webhook",
        "discord-webhook",
        _DISCORD_HOOK,
        forms={"url": _DISCORD_HOOK + "?wait=true"},
    ),
    Shape("stripe live secret key", "stripe-key", "sk" + "_live_" + A36[:24]),
    Shape("stripe test secret key", "stripe-key", "sk" + "_test_" + A36[:24]),
    Shape("stripe restricted key", "stripe-key", "rk" + "_live_" + A36[:24]),
    Shape("stripe publishable key", "stripe-key", "pk" + "_live_" + A36[:24]),
    Shape("stripe webhook secret", "stripe-webhook-secret", "wh" + "sec_" + A36[:32]),
    Shape("google api key", "google-api-key", "AI" + "za" + "SyA" + A36[:32]),
    Shape("xai key", "xai-key", "xa" + "i-" + A36),
    Shape("npm token", "npm-token", "np" + "m_" + A36),
    Shape("hugging face token", "huggingface-token", "h" + "f_" + A36[:34]),
    Shape("jwt", "jwt", JWT),
    Shape(
        "bearer token",
        "bearer",
        "Authorization: Bear" + "er " + A36,
        A36,
        _ime("Authorization", "Bear" + "er " + A36),
    ),
    Shape(
        "basic credentials",
        "basic-auth",
        "Authorization: Ba" + "sic " + _BASIC,
        _BASIC,
        {
            "json": json.dumps({"Authorization": "Basic " + _BASIC}),
            "url": "https://example.com/cb?authorization=Basic%20" + quote(_BASIC, safe=""),
            **_ime("Authorization", "Ba" + "sic " + _BASIC),
        },
    ),
    Shape("rsa private key", "private-key", _pem("RSA"), PEM_BODY),
    Shape("pkcs8 private key", "private-key", _pem(""), PEM_BODY),
    Shape("encrypted pkcs8 private key", "private-key", _pem("ENCRYPTED"), PEM_BODY),
    Shape(
        "encrypted rsa private key",
        "private-key",
        _pem("RSA", headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D\n\n"),
        PEM_BODY,
    ),
    Shape("openssh private key", "private-key", _pem("OPENSSH"), PEM_BODY),
    Shape("ec private key", "private-key", _pem("EC"), PEM_BODY),
    _url(
        "postgresql+psycopg2 url",
        "postgresql+psycopg2" + "://app:" + PASSWORD + "@db.internal/app",
        PASSWORD,
    ),
    _url(
        "https url with password",
        "https" + "://deploy:" + PASSWORD + "@git.example.com/r.git",
        PASSWORD,
    ),
    _url("mysql url", "mysql" + "://root:" + PASSWORD + "@127.0.0.1:3306/x", PASSWORD),
    _url("redis url without user", "redis" + "://:" + PASSWORD + "@cache:6379/0", PASSWORD),
    _url(
        "mongodb+srv url", "mongodb+srv" + "://user:" + PASSWORD + "@cluster0.example.net", PASSWORD
    ),
    _assignment("password", "pass" + "word"),
    _assignment("DB_PASSWORD", "DB_" + "PASSWORD"),
    _assignment("MYSQL_ROOT_PASSWORD", "MYSQL_ROOT_" + "PASSWORD"),
    _assignment("db_password", "db_" + "password"),
    _assignment("client_secret", "client" + "_secret"),
    _assignment("clientSecret (camelCase)", "client" + "Secret"),
    _assignment("GITHUB_TOKEN", "GITHUB_" + "TOKEN"),
    _assignment("api_key", "api" + "_key"),
    _assignment("apikey", "api" + "key"),
    _assignment("secret_key", "secret" + "_key"),
    _assignment("access_key", "access" + "_key"),
    _assignment("private_key", "private" + "_key"),
    _assignment("passwd", "pass" + "wd"),
    _assignment("DB_PASS", "DB_" + "PASS"),
    _assignment("PGPASSWORD (one word)", "PG" + "PASSWORD"),
    _assignment("DBPASS (one word)", "DB" + "PASS"),
    _assignment("SSHPASS (one word)", "SSH" + "PASS"),
    _assignment("dbpassword (one word)", "db" + "password"),
    _assignment("spring.datasource.password", "spring.datasource." + "password"),
    Shape(
        "password flag",
        "assignment",
        "mysql -u root --pass" + "word " + PASSWORD,
        PASSWORD,
        {
            "json": json.dumps({"cmd": "mysql --pass" + "word " + PASSWORD}),
            "env": "MYSQL_CMD='mysql --pass" + "word " + PASSWORD + "'\n",
        },
    ),
    Shape(
        "yaml password",
        "assignment",
        "pass" + "word: " + PASSWORD,
        PASSWORD,
        _ime("pass" + "word", PASSWORD),
    ),
    Shape(
        "token in full-width quotes",
        "assignment",
        "to" + "ken：“" + PASSWORD + "”",
        PASSWORD,
        _ime("to" + "ken", PASSWORD),
    ),
    Shape(
        "chinese password label",
        "assignment",
        "密" + "码：" + PASSWORD,
        PASSWORD,
        {"url": "https://example.com/?q=密" + "码:" + PASSWORD, **_ime("密" + "码", PASSWORD)},
    ),
    Shape(
        "chinese key label",
        "assignment",
        "密" + "钥是" + PASSWORD,
        PASSWORD,
        {
            "url": "https://example.com/?q=密" + "钥是" + PASSWORD,
            "ime-quoted": f"{IME_BEFORE}密" + "钥是“" + PASSWORD + f"”{IME_AFTER}",
        },
    ),
)


def _generic(context: str, snippet: str) -> str:
    if context == "ime-colon":
        return f"{IME_BEFORE}{snippet}{IME_AFTER}"
    if context == "ime-equals":
        return f"{IME_BEFORE}值＝{snippet}{IME_AFTER}"
    if context == "ime-quoted":
        return f"{IME_BEFORE}“{snippet}”{IME_AFTER}"
    if context == "english":
        return f"For the deploy we use {snippet} on the staging box."
    if context == "cjk":
        return f"{CJK_BEFORE}{snippet}{CJK_AFTER}"
    if context == "json":
        return json.dumps({"note": snippet}, ensure_ascii=False)
    if context == "env":
        return f'NOTE="{snippet}"\n'
    return "https://example.com/callback?note=" + quote(snippet, safe="") + "&x=1"


def contexts(shape: Shape) -> list[tuple[str, str]]:
    """``(context, text)`` for every context: the shape's own form where it has one."""
    return [(name, shape.forms.get(name) or _generic(name, shape.snippet)) for name in CONTEXTS]


def cases() -> list[tuple[str, Shape, str]]:
    """Every shape in every context, with a readable test id ``label/context``."""
    return [(f"{s.label}/{name}", s, text) for s in SHAPES for name, text in contexts(s)]


#: Ordinary text that neither sensitivity may touch (the refusing one nor the redacting one).
PROSE: tuple[str, ...] = (
    "The payments service uses PostgreSQL 16.",
    "Reset the password through the admin panel.",
    "The API key lives in the vault, never in the repository.",
    "access tokens expire after one hour; refresh them on 401.",
    "Set client_secret in the environment before deploy.",
    "max_tokens: 4096",
    "token_count=512",
    "DB_PASSWORD_FILE=/run/secrets/db",
    "password=${DB_PASSWORD}",
    "api_key: <your-api-key>",
    "password: [REDACTED]",
    "GITHUB_TOKEN=$GITHUB_TOKEN",
    "src/auth/password_reset.py handles the reset flow.",
    "http://localhost:8080/api/v1 and https://example.com:443/x",
    "postgres://app@localhost/db",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "Fixed in commit 0123456789abcdef0123456789abcdef01234567",
    "我们决定使用 PostgreSQL 作为主数据库。",
    "密码长度至少12位，必须包含数字。",
    "令牌是JWT格式，密码是必填项。",
    "SkipList and AkiaNode are class names.",
    "task-manager-for-the-whole-team-and-more",
    '{"name": "dsh", "version": "0.1.0", "max_token": 8192}',
    "export PATH=$HOME/.local/bin:$PATH",
    "Token: rotate it every month.",
    # As a Chinese input method types prose: full-width separators and quotes before words.
    "Token：rotate it every month.",
    "token：请在设置里生成，不要写进代码。",
    "密码：“必填项”，长度至少12位。",
    "“password”：“请向运维索取”",
    "password：${DB_PASSWORD}，DB_PASSWORD_FILE＝/run/secrets/db",
    # Words that end in "pass" or start with it name no secret.
    "bypass=on, compass: north, trespass=no, surpass=1, overpass=closed",
    "passport：E12345678，passenger=Li",
)
