"""The one redaction of every URL, DSN, command line and message hopgraph records or prints:
a secret never reaches a trace, a manifest or a log line."""

from __future__ import annotations

import re
import sys

_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)@")
"""A URL's user information: everything before the last ``@`` of its authority, so a
password holding ``@`` is one password, and a user name alone (``http://TOKEN@host``, sent
as Basic auth) is a secret too."""
_SECRET_VALUE = re.compile(
    r"(?i)\b((?:[A-Za-z0-9]+[_-])*(?:password|passwd|pwd|secret|token|apikey|key|auth|"
    r"credentials?|signature))(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s,;&#]+)"
)
"""A secret's ``name=value``: a key=value DSN, a ``--set``, a URL's query (``?key=``,
``&api-key=``, ``access_token=``), whatever joins the name's words (``_`` or ``-``)."""


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
    return _SECRET_VALUE.sub(r"\1\2***", _URL_USERINFO.sub(_userinfo, text))


def command_line() -> str:
    """This process's ``hopgraph`` command line, redacted, as records keep it."""
    return redacted(" ".join(["hopgraph", *sys.argv[1:]])) if sys.argv else ""
