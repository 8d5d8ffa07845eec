"""The metric lexicon: reader labels, statement order and the phrases that name a metric."""

from dexter import metrics
from dexter.data.xbrl import STATEMENT_ITEMS


def test_every_statement_field_dexter_builds_has_a_reader_label() -> None:
    for items in STATEMENT_ITEMS.values():
        for item in items:
            assert metrics.metric(item.field) is not None, item.field
            assert "_" not in metrics.label(item.field)


def test_unknown_fields_become_words_not_raw_names() -> None:
    assert metrics.label("gross_profit_ttm") == "Gross profit TTM"
    assert metrics.label("ebitda_margin") == "EBITDA margin"
    assert metrics.label("selling_general_and_administrative_expenses") == (
        "Selling, general and administrative")


def test_statement_order_follows_a_10k_income_statement() -> None:
    fields = ["net_income", "earnings_per_share_diluted", "revenue", "operating_income",
              "gross_profit", "cost_of_revenue", "earnings_per_share",
              "research_and_development"]
    assert sorted(fields, key=metrics.order) == [
        "revenue", "cost_of_revenue", "gross_profit", "research_and_development",
        "operating_income", "net_income", "earnings_per_share", "earnings_per_share_diluted"]


def test_phrases_resolve_to_the_longest_metric() -> None:
    named = [(text[a:b], m.field) for text in ["Net sales rose; net income margin was 24%, "
                                                 "cost of sales fell and diluted EPS was 6.08"]
             for a, b, m in metrics.metrics_named(text)]
    assert named == [("Net sales", "revenue"), ("net income margin", "net_margin"),
                     ("cost of sales", "cost_of_revenue"),
                     ("diluted EPS", "earnings_per_share_diluted")]


def test_phrases_do_not_match_inside_words() -> None:
    assert metrics.metrics_named("the cashier said evidently") == []
