"""One rule for what counts as a secret, used by every writer of text."""

from __future__ import annotations

import json

from dexter.secrets import scrub, scrub_value, secret_values


def test_secret_values_come_from_key_like_variable_names() -> None:
    env = {"OPENAI_API_KEY": "sk-abcdefgh12", "GITHUB_TOKEN": "ghp_12345678",
           "APP_SECRET": "s3cr3t-value", "HOME": "/root/very/long/path", "X_KEY": "1234567"}
    values = secret_values(env)
    assert set(values) == {"sk-abcdefgh12", "ghp_12345678", "s3cr3t-value"}
    assert "/root/very/long/path" not in values
    assert "1234567" not in values  # 7 characters: too short to be treated as a secret


def test_eight_characters_is_enough() -> None:
    assert secret_values({"X_KEY": "12345678"}) == ["12345678"]


def test_scrub_hides_raw_and_json_escaped_values() -> None:
    secret = 'ab"cd\\ef-1234'
    text = f"raw {secret} and json {json.dumps(secret)}"
    cleaned = scrub(text, [secret])
    assert secret not in cleaned and json.dumps(secret)[1:-1] not in cleaned
    assert cleaned.count("***") == 2


def test_longer_secrets_are_replaced_first() -> None:
    assert scrub("key=abcdefgh1234", ["abcdefgh", "abcdefgh1234"]) == "key=***"


def test_key_shaped_tokens_only_when_asked() -> None:
    text = "uses sk-learn and sk-proj-1234567890abcdef"
    assert scrub(text, []) == text
    masked = scrub(text, [], key_shaped=True)
    assert "sk-proj-1234567890abcdef" not in masked


def test_scrub_value_walks_nested_structures() -> None:
    data = {"args": ["token=abcdefgh99", {"deep": "abcdefgh99"}], "n": 3}
    assert scrub_value(data, ["abcdefgh99"]) == {"args": ["token=***", {"deep": "***"}], "n": 3}
