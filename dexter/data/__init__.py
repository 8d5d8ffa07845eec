"""Financial data sources: one interface, two implementations (Financial Datasets, SEC EDGAR).

Modules:

- ``base``: the ``DataSource`` interface, capabilities, results and errors.
- ``http``: the HTTP client (retries, rate limiting, clear errors).
- ``http_source``: ``SourceConnection`` (where and how to connect) and ``HttpSource``, the
  base class both sources share (constructor, cached GET, closing).
- ``cache``: the disk cache with per-endpoint TTLs.
- ``financial_datasets``: the Financial Datasets API (needs ``FINANCIAL_DATASETS_API_KEY``).
- ``edgar``: SEC EDGAR (keyless): tickers, filings, XBRL facts, frames, filing documents.
- ``xbrl``: pure functions that turn XBRL company facts into statements.
- ``filing_text``: HTML to text and item splitting for 10-K / 10-Q / 8-K documents.
"""
