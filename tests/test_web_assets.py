"""The page's own files are linked by content and kept by the browser between loads; every
other answer (the HTML, the API) is still not stored. Through Starlette's TestClient, and
in Debian's chromium for what a reload fetches."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from smartcontext.server.assets import IMMUTABLE, digests, versioned_html
from smartcontext.server.http import WEB_DIR, build_app
from smartcontext.tools import ToolRegistry
from test_web_api import BASE, make_folder
from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, web_server

LINKED = re.compile(r'(?:src|href)="(/static/[^"]+)"')


@pytest.fixture
def client(tmp_path):
    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    with TestClient(build_app(registry), base_url=BASE) as c:
        yield c
    registry.close()


def test_each_page_links_its_files_by_content_and_those_addresses_are_kept(client):
    for page in ("/", "/search"):
        html = client.get(page)
        assert html.headers["cache-control"] == "no-store"
        links = LINKED.findall(html.text)
        assert links and all("?v=" in link for link in links), links
        for link in links:
            path, _, digest = link.partition("?v=")
            body = (WEB_DIR / Path(path).name).read_bytes()
            assert digest == hashlib.sha256(body).hexdigest()[:len(digest)]
            answer = client.get(link)
            assert answer.status_code == 200 and answer.content == body
            assert answer.headers["cache-control"] == IMMUTABLE
            # The page's other protections stay on its files.
            assert "script-src 'self'" in answer.headers["content-security-policy"]
            assert answer.headers["x-content-type-options"] == "nosniff"


def test_another_or_no_digest_and_the_api_are_not_stored(client):
    assert client.get("/static/chat.js").headers["cache-control"] == "no-store"
    assert client.get("/static/chat.js?v=0000000000000000").headers["cache-control"] == "no-store"
    assert client.get("/static/nothing.js?v=0000000000000000").status_code == 404
    for path in ("/api/status", "/api/state", "/api/chats"):
        assert client.get(path).headers["cache-control"] == "no-store", path


def test_a_changed_file_gets_a_new_address(tmp_path):
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "a.js").write_text("one")
    (folder / "page.html").write_text('<script src="/static/a.js"></script><script src="/static/cdn.js"></script>')
    first = versioned_html(folder / "page.html", digests(folder))
    (folder / "a.js").write_text("two")
    second = versioned_html(folder / "page.html", digests(folder))
    assert first != second and b"/static/a.js?v=" in first and b"/static/a.js?v=" in second
    # A link to a file that is not there is left as written.
    assert b'src="/static/cdn.js"' in second


def test_a_reload_fetches_no_script_or_style_again(tmp_path):
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    with web_server(make_folder(tmp_path / "ws")) as url, browser_context() as context:
        page = context.new_page()
        seen = []
        for _ in range(2):
            page.goto(url + "/")
            page.wait_for_selector("html[data-ws=open][data-panel=ready]")
            seen.append(page.evaluate("""() => performance.getEntriesByType('resource')
                .filter(e => e.name.includes('/static/')).map(e => [e.name, e.transferSize])"""))
        first, again = seen
        assert len(first) == len(LINKED.findall((WEB_DIR / "index.html").read_text())) == len(again)
        assert all(size > 0 for _, size in first), first
        assert all(size == 0 for _, size in again), again  # from the browser's cache
