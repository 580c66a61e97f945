"""The page's files with content-addressed links, so a browser keeps them between loads.

Every answer of the web server says ``Cache-Control: no-store`` (the API's answers hold the
user's notes and chats). The page's own scripts and style sheet hold nothing private and
change only with the package, so the HTML links each one as ``/static/NAME?v=DIGEST`` (the
first hex digits of its SHA-256) and an answer to exactly that address may be kept for a
year: a reload asks the server for the HTML and the data only, and a new version of a file
has a new address. An address with another or no digest is answered as before (no-store).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

DIGEST_CHARS = 16
IMMUTABLE = "public, max-age=31536000, immutable"
# ``src="/static/x.js"`` and ``href="/static/x.css"`` in the page's own HTML.
LINK = re.compile(r'(?P<attr>(?:src|href)=")/static/(?P<name>[A-Za-z0-9._-]+)"')


def digests(folder: Path) -> dict[str, str]:
    """Each file's digest, by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:DIGEST_CHARS]
            for p in sorted(folder.iterdir()) if p.is_file()}


def versioned_html(path: Path, known: dict[str, str]) -> bytes:
    """The HTML of ``path`` with each link to a known static file carrying its digest."""
    def link(m: re.Match[str]) -> str:
        name = m.group("name")
        digest = known.get(name)
        return m.group(0) if digest is None else f'{m.group("attr")}/static/{name}?v={digest}"'

    return LINK.sub(link, path.read_text(encoding="utf-8")).encode("utf-8")


class VersionedStaticFiles(StaticFiles):
    """Static files; an address whose ``v`` is the file's digest is cacheable for a year."""

    def __init__(self, directory: Path, known: dict[str, str]):
        super().__init__(directory=directory)
        self.known = known

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        asked = _query_value(scope, b"v")
        if response.status_code == 200 and asked is not None and asked == self.known.get(Path(path).name):
            response.headers["cache-control"] = IMMUTABLE
        return response


def _query_value(scope: Scope, name: bytes) -> str | None:
    for part in scope.get("query_string", b"").split(b"&"):
        key, _, value = part.partition(b"=")
        if key == name:
            return value.decode("latin-1")
    return None
