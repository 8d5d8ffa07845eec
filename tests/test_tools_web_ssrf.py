"""The SSRF guard: private, loopback, metadata and odd IP forms are refused, redirects too."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from dexter.config import Settings
from dexter.tools import web_fetch
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.net import BlockedURLError, check_url, parse_ip_literal, pinned_request
from dexter.tools.web_fetch import WebFetchTool, clear_memory_cache
from tests.fixtures.web.fake_http import serving


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_memory_cache()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def fake_dns(monkeypatch: pytest.MonkeyPatch, table: dict[str, list[str]]) -> list[str]:
    """Answer getaddrinfo from ``table``; returns the list of names looked up."""
    asked: list[str] = []

    def getaddrinfo(host: str, port: Any, *_: Any, **__: Any) -> list[Any]:
        asked.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (ip, port)) for ip in table[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/admin",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://[::1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://0.0.0.0/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[2002:7f00:1::]/",
    "http://[64:ff9b::a00:1]/",
    "http://100.64.1.1/",
    "http://224.0.0.1/",
    "http://[fe80::1]/",
    "http://240.0.0.1/",
    "http://[::]/",
    "http://192.0.0.192/",             # Oracle Cloud metadata
    "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64 of 169.254.169.254
    "http://[fd00:ec2::254]/",         # AWS metadata over IPv6
    "http://0x7f.1/",
    "http://017700000001/",
    "http://[fe80::1%25eth0]/",
])
async def test_private_and_odd_forms_are_refused_without_dns(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    asked = fake_dns(monkeypatch, {})
    with pytest.raises(BlockedURLError, match="allow_private_network"):
        await check_url(url, allow_private=False)
    assert asked == []


def test_ip_literal_forms() -> None:
    assert str(parse_ip_literal("2130706433")) == "127.0.0.1"
    assert str(parse_ip_literal("0x7f000001")) == "127.0.0.1"
    assert str(parse_ip_literal("127.1")) == "127.0.0.1"
    assert str(parse_ip_literal("0177.0.0.1")) == "127.0.0.1"
    assert parse_ip_literal("example.com") is None
    assert parse_ip_literal("cafe.be") is None
    assert parse_ip_literal("127.0.0.1 evil") is None


async def test_public_name_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"innocent.example.com": ["10.1.2.3"]})
    with pytest.raises(BlockedURLError, match=r"resolves to 10\.1\.2\.3, a private network"):
        await check_url("https://innocent.example.com/report", allow_private=False)


async def test_any_private_address_among_several_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"mixed.example.com": ["93.184.216.34", "127.0.0.1"]})
    with pytest.raises(BlockedURLError, match="loopback"):
        await check_url("https://mixed.example.com/", allow_private=False)


async def test_public_name_passes_and_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"www.sec.gov": ["93.184.216.34"]})
    checked = await check_url("https://www.sec.gov:8443/cgi-bin/browse", allow_private=False)
    assert checked.addresses == ("93.184.216.34",)
    async with httpx.AsyncClient() as client:
        request = pinned_request(client, checked, {"Accept": "*/*"})
    assert request.url.host == "93.184.216.34"
    assert request.url.path == "/cgi-bin/browse"
    assert request.headers["host"] == "www.sec.gov:8443"
    assert request.extensions["sni_hostname"] == "www.sec.gov"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x/",
                                 "https://user:pw@example.com/", "http:///nohost", "x" * 2100,
                                 "http://0177.0.0.1/"])
async def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(ToolFailure):
        await check_url(url, allow_private=False)


async def test_switch_skips_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = fake_dns(monkeypatch, {})
    checked = await check_url("http://127.0.0.1:9/x", allow_private=True)
    assert checked.addresses == () and asked == []


def _ctx(tmp_path: Path, allow_private: bool) -> ToolContext:
    settings = Settings()
    settings.tools.allow_private_network = allow_private
    return ToolContext(settings=settings, cwd=tmp_path, home=tmp_path / ".dexter")


async def test_loopback_server_is_reachable_only_with_the_switch(tmp_path: Path) -> None:
    tool = WebFetchTool()
    with serving() as server:
        server.route("/page", body=b"plain text page", headers={"Content-Type": "text/plain"})
        args = tool.parse_args({"url": server.url("/page"), "prompt": "raw"})
        with pytest.raises(BlockedURLError):
            await tool.run(args, _ctx(tmp_path, allow_private=False))
        assert server.hits("/page") == 0
        result = await tool.run(args, _ctx(tmp_path, allow_private=True))
        assert "plain text page" in result.content
        assert server.hits("/page") == 1


@pytest.mark.parametrize(("target", "dns"), [
    ("http://169.254.169.254/latest/meta-data/iam", {}),
    ("http://internal.example.com/admin", {"internal.example.com": ["10.0.0.7"]}),
    ("http://[::1]:22/", {}),
])
async def test_redirect_to_a_private_address_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        target: str, dns: dict[str, list[str]]) -> None:
    fake_dns(monkeypatch, dns)
    real_check = web_fetch.check_url
    with serving() as server:
        port = server.server.server_address[1]

        async def check_treating_the_test_server_as_public(url: Any, *, allow_private: bool) -> Any:
            parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
            if parsed.host == "127.0.0.1" and parsed.port == port:
                return await real_check(url, allow_private=True)
            return await real_check(url, allow_private=allow_private)

        monkeypatch.setattr(web_fetch, "check_url", check_treating_the_test_server_as_public)
        server.route("/go", status=302, headers={"Location": target})
        tool = WebFetchTool()
        with pytest.raises(BlockedURLError, match="Refused to fetch"):
            await tool.run(tool.parse_args({"url": server.url("/go"), "prompt": "raw"}),
                           _ctx(tmp_path, allow_private=False))
        assert server.hits("/go") == 1
