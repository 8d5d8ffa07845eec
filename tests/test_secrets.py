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


# -- secrets known by value, whatever their name ------------------------------------------


def test_values_that_look_like_credentials_count_whatever_the_name() -> None:
    env = {
        "MYLAB_APIKEY": "Zq8vN2kLw9Rt4Yp7Hs3Jd6Fg",        # opaque, high entropy
        "SOMETHING": "sk-ant-api03-abcdefghijk",            # known prefix
        "CI_THING": "ghp_abcdefghijklmnopqrstuv0123",
        "SLACK_HOOK_X": "xoxb-1234-5678-abcdefgh",
        "AWS_ID": "AKIAIOSFODNN7EXAMPLE",
        "GH": "github_pat_11ABCDEFG0abcdefghij",
        "DATABASE_URL": "postgres://app:hunter2hunter2@db:5432/x",
        # not secrets
        "PATH": "/usr/local/bin:/usr/bin:/bin:/opt/very/long/path/segment",
        "LS_COLORS": "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35",
        "GREETING": "hello world this is long but has spaces 123",
        "VERSION": "2026.11.30-release-candidate",
        "PROJECT_DIR": "/home/user/projects/dexter-2026-q4",
    }
    values = set(secret_values(env))
    assert values == {"Zq8vN2kLw9Rt4Yp7Hs3Jd6Fg", "sk-ant-api03-abcdefghijk",
                      "ghp_abcdefghijklmnopqrstuv0123", "xoxb-1234-5678-abcdefgh",
                      "AKIAIOSFODNN7EXAMPLE", "github_pat_11ABCDEFG0abcdefghij", "hunter2hunter2"}


def test_dotenv_values_in_the_working_directory_are_secrets(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("VENDOR_CREDENTIAL=vendor-secret-value-1\n")
    assert "vendor-secret-value-1" in secret_values()
    assert scrub("got vendor-secret-value-1 back") == "got *** back"


def test_the_cache_follows_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert "ZzSecretRotated0123456789" not in secret_values()
    monkeypatch.setenv("ROTATED", "ZzSecretRotated0123456789")
    assert scrub("x ZzSecretRotated0123456789") == "x ***"


def test_find_secret_names_a_masked_hint() -> None:
    from dexter.secrets import find_secret

    hint = find_secret("note: key sk-abcdefgh12345 used", ["sk-abcdefgh12345"])
    assert hint is not None and "sk-a" in hint and "sk-abcdefgh12345" not in hint
    assert find_secret("nothing here", ["sk-abcdefgh12345"]) is None


def test_scrub_value_copies_dataclass_events() -> None:
    from dexter.events import ToolEnd

    event = ToolEnd(tool="bash", args={"command": "echo sk-abcdefgh12345"},
                    result="out sk-abcdefgh12345", duration_ms=1, tool_call_id="c1")
    clean = scrub_value(event, ["sk-abcdefgh12345"])
    assert clean.result == "out ***" and clean.args == {"command": "echo ***"}
    assert event.result == "out sk-abcdefgh12345"  # the original is untouched
