"""What the web tests and ``bench/web.py`` share: Debian's chromium driven by Playwright
(Playwright's own browser download is unreachable here) and the web server started as
``smartcontext serve web`` on a free port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
from test_mcp_server import stop

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
MISSING_CHROMIUM = (f"the browser tests need Debian's chromium at {CHROMIUM}: install it with "
                    "`apt-get install -y chromium` (the README's test command does when it is missing)")


def chromium_missing() -> bool:
    return not os.access(CHROMIUM, os.X_OK)


@contextmanager
def browser_context(viewport: dict[str, int] | None = None) -> Iterator[object]:
    """A Playwright browser context of chromium with a fresh profile, closed afterwards."""
    from playwright.sync_api import sync_playwright

    if chromium_missing():
        raise RuntimeError(MISSING_CHROMIUM)
    profile = tempfile.mkdtemp(prefix="sc-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport=viewport or {"width": 1280, "height": 800},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def eventually(page, expression: str, timeout: float = 60, arg: object = None) -> object:
    """The first truthy value of ``expression`` evaluated in ``page``, polled every 50 ms.
    For conditions that need a promise (a fetch): Playwright's ``wait_for_function`` does not
    wait for a returned promise, which is truthy, so such a wait returns at once."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression, arg)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout} s: {expression}")
        page.wait_for_timeout(50)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(extra: dict[str, str] | None = None, src: Path | None = None) -> dict[str, str]:
    """The environment of a server subprocess: this checkout's ``src`` (or ``src``, another
    checkout's, for ``bench/web.py --compare``) first on PYTHONPATH."""
    src = str(src or Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else src
    return env


@contextmanager
def web_server(folder: Path, env: dict[str, str] | None = None, timeout: float = 60,
               src: Path | None = None) -> Iterator[str]:
    """``smartcontext serve web FOLDER`` on a free port (run from ``src`` when given);
    yields its base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "smartcontext", "serve", "web", str(folder), "--port", str(port), "--no-browser"],
        env=server_env(env, src), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the web server exited: {proc.stderr.read().decode(errors='replace')}")
            try:
                if httpx.get(url + "/api/status", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the web server did not answer within {timeout} s")
            time.sleep(0.1)
        yield url
    finally:
        stop(proc)
