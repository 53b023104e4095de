"""The one redaction of every URL, DSN, command line and message hopgraph records or prints:
a secret never reaches a trace, a manifest or a log line."""

from __future__ import annotations

import logging
import re
import sys
from urllib.parse import quote, quote_plus, unquote

_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)@")
"""A URL's user information: everything before the last ``@`` of its authority, so a
password holding ``@`` is one password, and a user name alone (``http://TOKEN@host``, sent
as Basic auth) is a secret too."""
SECRET_NAMES = (
    "password",
    "passwd",
    "pwd",
    "pass",
    "secret",
    "token",
    "apikey",
    "key",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "signature",
    "sig",
    "code",
    "jwt",
    "session",
    "sessionid",
    "hmac",
)
"""The parameter names whose value is a secret, whatever words come before them (``api_key``,
``X-Amz-Signature``, ``access_token``): a password, a key, a token, a signed URL's
signature, an OAuth ``code``, a session id, a JWT, an HMAC."""
JOINED = (
    "access",
    "api",
    "client",
    "private",
    "refresh",
    "app",
    "master",
    "auth",
    "secret",
    "user",
    "id",
)
"""Words a secret's name is written joined to, with no ``_`` or ``-`` (``accesstoken``,
``clientsecret``, ``privatekey``): only these, so ``monkey=3`` is no secret."""
_NAME = r"((?:[A-Za-z0-9]+[_-])*(?:" + "|".join(JOINED) + r")?(?:" + "|".join(SECRET_NAMES) + r"))"
_SECRET_VALUE = re.compile(
    r"(?i)\b" + _NAME + r"(\s*=\s*)"
    r"('[^']*'|\"[^\"]*\"|(?:bearer|basic|token)(?:\s+|%20|\+)[^\s,;&#]+|[^\s,;&#]+)"
)
"""A secret's ``name=value``: a key=value DSN, a ``--set``, a URL's query (``?key=``,
``&api-key=``, ``access_token=``, ``sig=``), whatever joins the name's words (``_``, ``-`` or
nothing: ``accesstoken=``, ``clientsecret=``); an ``Authorization=Bearer X`` value is masked
whole."""
_QUOTED_VALUE = re.compile(r"(?i)([\"'])" + _NAME + r"\1(\s*:\s*)([\"'])(?:(?!\4).)*\4")
"""A secret in JSON or a quoted YAML / Python mapping: ``"api_key": "sk-..."``."""
_HEADER = re.compile(
    r"(?im)(^|[\s{,;\"'])((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie)"
    r"(\s*:\s*)((?:bearer|basic|token|digest)\s+)?([^\s,;\"']+)"
)
"""A secret HTTP header as a message or a dump writes it: ``Authorization: Basic X``,
``x-api-key: X``."""
_YAML_LINE = re.compile(r"(?im)^(\s*" + _NAME + r")(\s*:[ \t]*)(\S[^\n]*)$")
"""``name: value`` on a line of its own (YAML, an env dump)."""
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20|\+)([A-Za-z0-9._~+/-]{6,}=*)")
"""A bearer token wherever it stands (``Authorization: Bearer X``)."""

_KNOWN: set[str] = set()
"""Secret values met so far (``remember``): masked wherever they are echoed, in any form."""


def remember(*values: str) -> None:
    """Mask these secret values wherever they appear from now on, as they are and URL-encoded
    (an exporter or a library that echoes a URL's query without its name)."""
    for value in values:
        if value and len(value) >= 4 and value != "***":
            _KNOWN.update({value, unquote(value), quote(value, safe=""), quote_plus(value)})


def _masked(m: re.Match[str]) -> str:
    """A ``name=value`` secret masked; a value long and odd enough not to be a common word is
    remembered, so an echo of it without its name is masked too."""
    value = m[3].strip("'\"")
    if len(value) >= 8 and not value.isalpha():
        remember(value)
    return f"{m[1]}{m[2]}***"


def _userinfo(m: re.Match[str]) -> str:
    """A URL's user information masked: the password; a user name alone where the scheme
    sends it as Basic auth (HTTP, WebSocket), not a database's user name (``postgresql://u@``)."""
    user, sep, _ = m[2].partition(":")
    if sep:
        return f"{m[1]}{user}:***@"
    basic = m[1].lower().rstrip(":/") in ("http", "https", "ws", "wss")
    return f"{m[1]}***@" if basic else m[0]


def redacted(text: str) -> str:
    """``text`` with every secret it may hold replaced by ***: a URL's user information
    (``scheme://user:***@host``; ``http://***@host`` for a user name alone, which HTTP sends as
    Basic auth), and the value
    of a ``password=``, ``key=``, ``api-key=``, ``secret=`` or ``token=`` pair (a key=value
    DSN, a ``--set``, a URL's query). The one redaction of every URL, DSN, command line and
    message hopgraph records or prints."""
    if not text:
        return text
    text = _BEARER.sub(r"\1\2***", _SECRET_VALUE.sub(_masked, _URL_USERINFO.sub(_userinfo, text)))
    text = _QUOTED_VALUE.sub(lambda m: f"{m[1]}{m[2]}{m[1]}{m[3]}{m[4]}***{m[4]}", text)
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{m[4] or ''}***", text)
    text = _YAML_LINE.sub(lambda m: f"{m[1]}{m[3]}***", text)
    return masked_known(text)


def masked_known(text: str) -> str:
    """``text`` with every secret value met so far (``remember``) replaced by ***, and nothing
    else touched: what a trace, a reply or a prediction line gets (their prose is kept as it
    is; only a known key is masked)."""
    for value in sorted(_KNOWN, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    return text


def masked_known_bytes(data: bytes) -> bytes:
    """``data`` with every known secret value overwritten by as many ``*``: the same length,
    so a length-prefixed encoding (a checkpoint's msgpack) stays readable."""
    for value in sorted(_KNOWN, key=len, reverse=True):
        raw = value.encode("utf-8")
        if raw in data:
            data = data.replace(raw, b"*" * len(raw))
    return data


class RedactingFilter(logging.Filter):
    """A log record's message redacted (``redacted``) before any handler writes it: what a
    library logs (an exporter's retry warning naming its endpoint) holds no secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redacted(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redacted(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logs() -> None:
    """Every record any logger (a library's too) hands to the root's handlers passes through
    ``RedactingFilter`` before it is written."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def command_line() -> str:
    """This process's ``hopgraph`` command line, redacted, as records keep it."""
    return redacted(" ".join(["hopgraph", *sys.argv[1:]])) if sys.argv else ""
