"""Which data sources a finance tool call may use, built from settings and the environment.

Financial Datasets is on only when ``FINANCIAL_DATASETS_API_KEY`` is set (never with an
empty key); Yahoo Finance's chart endpoint (keyless prices) unless ``tools.keyless_prices``
is off; SEC EDGAR is always on and keyless. For each capability the sources are tried in
order: Financial Datasets first (richer, official), then the keyless ones (e.g. when the
plan does not cover statements or prices).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType

from dexter.config import Settings
from dexter.data.base import CAPABILITY_LABELS, Capability, DataSource
from dexter.data.cache import DiskCache
from dexter.data.edgar import EdgarSource
from dexter.data.financial_datasets import KEY_ENV, FinancialDatasetsSource
from dexter.data.fulltext import FullTextSearchSource
from dexter.data.holdings import HoldingsSource
from dexter.data.http import DEFAULT_RETRY, RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.data.insiders import InsiderSource
from dexter.data.peers import PeersSource
from dexter.data.ratelimit import SEC_RATE_LIMITER, AsyncRateLimiter
from dexter.data.releases import EarningsReleaseSource
from dexter.data.sec import SecSource
from dexter.data.segments_source import SegmentsSource
from dexter.data.yahoo import YAHOO_RATE_LIMITER, YahooChartSource

# What a missing capability needs. Only Financial Datasets has these today.
UNLOCK_KEY = KEY_ENV


@dataclass
class SourceOptions:
    """Knobs tests turn: retries, HTTP timeout, the SEC and Yahoo limiters, today's date."""

    retry: RetryPolicy = DEFAULT_RETRY
    http_timeout: float = 30.0
    sec_rate_limiter: AsyncRateLimiter | None = SEC_RATE_LIMITER
    yahoo_rate_limiter: AsyncRateLimiter | None = YAHOO_RATE_LIMITER
    today: dt.date | None = None
    use_cache: bool = True


@dataclass
class SourceSet:
    """The open sources of one tool call; use as ``async with``."""

    sources: list[DataSource] = field(default_factory=list)

    def for_capability(self, capability: Capability) -> list[DataSource]:
        """Sources offering ``capability``, preferred first."""
        return [s for s in self.sources if s.supports(capability)]

    def supports(self, capability: Capability) -> bool:
        """True when some configured source offers ``capability``."""
        return bool(self.for_capability(capability))

    def labels(self) -> str:
        """``Financial Datasets, SEC EDGAR``."""
        return ", ".join(s.label for s in self.sources)

    async def aclose(self) -> None:
        """Close every source's connections."""
        for source in self.sources:
            await source.aclose()

    async def __aenter__(self) -> SourceSet:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def fd_key(env: Mapping[str, str] | None = None) -> str:
    """The Financial Datasets key, stripped; empty when unset."""
    return (os.environ if env is None else env).get(KEY_ENV, "").strip()


def build_sources(
    settings: Settings, env: Mapping[str, str] | None = None,
    options: SourceOptions | None = None,
) -> SourceSet:
    """Open the configured sources: Financial Datasets when keyed, Yahoo Finance's chart
    endpoint when keyless prices are on, then SEC EDGAR."""
    opts = options or SourceOptions()
    cache = DiskCache(settings.home_path / "cache") if opts.use_cache else None
    sources: list[DataSource] = []
    key = fd_key(env)
    if key:
        sources.append(FinancialDatasetsSource(
            SourceConnection(settings.tools.financial_datasets_base_url, cache,
                             retry=opts.retry, timeout=opts.http_timeout, today=opts.today),
            api_key=key,
        ))
    if settings.tools.keyless_prices:
        sources.append(YahooChartSource(
            SourceConnection(settings.tools.yahoo_chart_base_url, cache, retry=opts.retry,
                             timeout=opts.http_timeout, rate_limiter=opts.yahoo_rate_limiter,
                             today=opts.today),
            user_agent=settings.tools.yahoo_user_agent,
        ))
    sources.extend(sec_sources(settings, cache, opts))
    return SourceSet(sources)


SEC_SOURCES: tuple[type[SecSource], ...] = (
    EdgarSource, SegmentsSource, EarningsReleaseSource, InsiderSource, HoldingsSource,
    FullTextSearchSource, PeersSource)
"""The keyless SEC EDGAR sources, in the order they are offered."""


def sec_sources(settings: Settings, cache: DiskCache | None,
                options: SourceOptions | None = None) -> list[SecSource]:
    """Every keyless SEC EDGAR source, on one set of hosts, User-Agent and limiter."""
    opts = options or SourceOptions()
    connection = SourceConnection(settings.tools.sec_edgar_base_url, cache, retry=opts.retry,
                                  timeout=opts.http_timeout, rate_limiter=opts.sec_rate_limiter,
                                  today=opts.today)
    return [kind(connection, data_url=settings.tools.sec_edgar_data_url,
                 user_agent=settings.tools.sec_user_agent,
                 fts_url=settings.tools.sec_edgar_fts_url) for kind in SEC_SOURCES]


def capability_list(capabilities: Iterable[Capability]) -> str:
    """``stock prices, company news, and crypto prices``: labels, deduplicated, in order."""
    labels = list(dict.fromkeys(CAPABILITY_LABELS[c] for c in capabilities))
    if len(labels) < 3:
        return " and ".join(labels)
    return ", ".join(labels[:-1]) + ", and " + labels[-1]


def unlock_message(capability: Capability, what: str | None = None) -> str:
    """The message for data no configured source can give."""
    label = what or CAPABILITY_LABELS[capability]
    keyless = ("SEC EDGAR gives statements, company facts, segments, filings, earnings "
               "releases, insider trades (Form 4), 13F holdings by manager, full-text search, "
               "SIC peers and simple screens, and Yahoo Finance daily stock prices "
               "(tools.keyless_prices, on by default)")
    return (f"{label[0].upper() + label[1:]} need {UNLOCK_KEY} (Financial Datasets). Without "
            f"a key, {keyless}. Set {UNLOCK_KEY} to unlock this.")
