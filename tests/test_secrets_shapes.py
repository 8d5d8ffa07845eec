"""Credentials recognised by their shape in tool output (``secrets.scrub_output``): a
labelled set of credentials as commands print them (every one must go), a labelled set of
ordinary lines that merely look alike (none may change), and the false-positive rate on
real text: SEC filings and the source of the libraries dexter runs on."""

from __future__ import annotations

import importlib.util
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path

import pytest

from dexter.secrets import CREDENTIAL_TRIGGERS, REDACTED, scrub_credentials, scrub_output

ROOT = Path(__file__).resolve().parents[1]

# (line as a command prints it, the secret in it)
CREDENTIALS: list[tuple[str, str]] = [
    ("origin\thttps://x-access-token:ghs_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i@github.com/acme/models.git (fetch)",
     "ghs_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i"),
    ("\turl = https://ghp_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i@github.com/acme/models.git",
     "ghp_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i"),
    ("url = https://oauth2:glpat-Xy7Kq2Lm9Np4Rs6Tv8Wz@gitlab.example.com/team/repo.git",
     "glpat-Xy7Kq2Lm9Np4Rs6Tv8Wz"),
    ("DATABASE_URL=postgres://analyst:Tr0ub4dor-3@db.internal:5432/prices", "Tr0ub4dor-3"),
    ("redis://:hunter2hunter2@cache:6379/0", "hunter2hunter2"),
    ("Cloning into 'x'... https://deploy:p%40ss%21w0rd@git.example.com/x.git", "p%40ss%21w0rd"),
    ("amqp://guest:Gu3st-Secret@rabbit:5672/", "Gu3st-Secret"),
    ("+DB_PASSWORD=correct-horse-battery", "correct-horse-battery"),
    ("-    password = \"S3cure!Pass\"", "S3cure!Pass"),
    ("+API_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("export GITHUB_TOKEN=ghp_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2j",
     "ghp_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2j"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzKEY01", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzKEY01"),
    ("aws_access_key_id = AKIAQ3EXAMPLEK7XZ2PM", "AKIAQ3EXAMPLEK7XZ2PM"),
    ('{"client_secret": "c0ffee-Beans-42-xyz", "client_id": "abc"}', "c0ffee-Beans-42-xyz"),
    ('  "password": "Sup3r-s3cret"', "Sup3r-s3cret"),
    ("password: Sup3rS3cret2024", "Sup3rS3cret2024"),
    ("db:\n  password: 'winter-2024!'", "winter-2024!"),
    ("SECRET_KEY = 'django-insecure-8x!k2#p9q@m4v'", "django-insecure-8x!k2#p9q@m4v"),
    ("app.config['SECRET_KEY'] = 'f8a9b7c6d5e4f3a2'", "f8a9b7c6d5e4f3a2"),
    ("mysql -u root --password=Rt9-xQ2z analytics", "Rt9-xQ2z"),
    ("GET /v1/quotes?symbol=AAPL&api_key=Q8m2KxP9vL4nR7tW&range=1y", "Q8m2KxP9vL4nR7tW"),
    ("https://api.example.com/data?access_token=EAAGm0PX4ZCpsBAKq7&format=json", "EAAGm0PX4ZCpsBAKq7"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N'",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
    ("Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("x-api-key: 7Hq2mZ9pL4xW8vN3cT6y", "7Hq2mZ9pL4xW8vN3cT6y"),
    ("OPENAI_API_KEY=sk-proj-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8", "sk-proj-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8"),
    ("anthropic key sk-ant-api03-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i committed",
     "sk-ant-api03-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i"),
    ("slack: xoxb-123456789012-1234567890123-Zq8R2mK4pL9xW3vN", "xoxb-123456789012-1234567890123-Zq8R2mK4pL9xW3vN"),
    ("STRIPE_KEY = sk_live_51Zq8R2mK4pL9xW3vN7cT1yB6h", "sk_live_51Zq8R2mK4pL9xW3vN7cT1yB6h"),
    ("GOOGLE: AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("HF_TOKEN=hf_ZqRmKpLxWvNcTyBhJdFsAuEiOoPq", "hf_ZqRmKpLxWvNcTyBhJdFsAuEiOoPq"),
    ("token = \"Zq8R2mK4\"", "Zq8R2mK4"),
    ("accessToken: 'abcd1234efgh'", "abcd1234efgh"),
    ("refresh_token=1//0gLkQ2mZ9pXvR7tW", "1//0gLkQ2mZ9pXvR7tW"),
    ("passphrase=blue-Whale-77", "blue-Whale-77"),
    ("<add key=\"ApiKey\" value=\"x\" /> ApiKey=\"K9m2Zq8R4pL\"", "K9m2Zq8R4pL"),
    ("session_token => 'Zq8R2mK4pL9xW3vN'", "Zq8R2mK4pL9xW3vN"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
     "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    ("npm config: //registry.npmjs.org/:_authToken=npm_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i",
     "npm_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i"),
    ("pypi: password = pypi-AgEIcHlwaS5vcmcCJGE0ZjZiZWNhLTk2ZTYtNDRmNS1hYjE0LWQ4NmI3ZmY0",
     "pypi-AgEIcHlwaS5vcmcCJGE0ZjZiZWNhLTk2ZTYtNDRmNS1hYjE0LWQ4NmI3ZmY0"),
    # a command line (shell history, a script, `ps`, a CI log): the value as the next word
    ("mysql -u root --password Rt9-xQ2z analytics", "Rt9-xQ2z"),
    ("$ mysql -h db.internal -u analyst -pW1nter-2024 prices", "W1nter-2024"),
    ("mysqldump -u admin -p'S3cr3t!x' db > dump.sql", "S3cr3t!x"),
    ("sshpass -p Hunt3r2x ssh deploy@host", "Hunt3r2x"),
    ("keytool -list -keystore app.jks -storepass chang3it", "chang3it"),
    ("--api-key Q8m2KxP9vL4nR7tW --env prod", "Q8m2KxP9vL4nR7tW"),
    ("gh-release upload --token 9f8e7d6c5b4a3928 v1.2", "9f8e7d6c5b4a3928"),
    ("curl -u analyst:Pr1ces-2024 https://data.example.com/x", "Pr1ces-2024"),
    ("psql --db-password 'blue Whale 77' -h db", "blue Whale 77"),
    ("export PGPASSWORD=Tr0ub4dor-3", "Tr0ub4dor-3"),
    ("MYSQL_PWD=Sq1-p4ss mysql -u root", "Sq1-p4ss"),
]

# Ordinary lines: code that handles passwords, URLs without credentials, prose, numbers.
ORDINARY: list[str] = [
    "password = input('Password: ')",
    "password = getpass.getpass()",
    "token = self.token",
    "token = os.environ['GITHUB_TOKEN']",
    "api_key = os.getenv('OPENAI_API_KEY')",
    "secret = None",
    "password: str",
    "password: Optional[str] = None",
    "private_key: Ed25519PrivateKey | None = None",
    "def login(user: str, password: str) -> Token:",
    "client = Client(api_key=api_key, timeout=30)",
    "login(username=user, password=password)",
    "auth_token=environment_key,",
    "if token == \"with\" and depth > 0:",
    "token=${GITHUB_TOKEN}",
    "password: ${DB_PASSWORD}",
    "SECRET_KEY = env('SECRET_KEY')",
    'API_KEY = "YOUR_API_KEY"',
    "OPENAI_API_KEY=your-key-here",
    "password=<your password>",
    "token: ***",
    "password = '****'",
    "max_tokens=4096 prompt_tokens=1234 completion_tokens=88",
    "The secret: their supply chain beats everyone else's.",
    "Token: the smallest unit the model reads.",
    "PWD=/home/analyst/work",
    "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">",
    "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm",
    "git@github.com:acme/models.git",
    "ssh://git@github.com/acme/models.git",
    "https://user@example.com/x and mailto:ir@apple.com",
    "https://example.com/profile/jane@example.com",
    "https://query1.finance.yahoo.com/v8/finance/chart/AAPL?range=1y&interval=1d",
    "postgres://localhost:5432/prices",
    "Apple's revenue was $391,035 million in fiscal 2024, up 2% from $383,285 million.",
    "sk-learn and scikit-learn are the same library",
    "bypass=12345 compass=north",
    "keyword=revenue sort_key=date primary_key=id",
    "Passwords must be at least 12 characters.",
    "tokens_used: 4521",
    "| Net sales | 391,035 | 383,285 |",
    "export PATH=/usr/local/bin:$PATH",
    "commit 8f3a9c2e4b7d1f6a0c5e9b3d7f2a6c1e4b8d0f3a",
    "Merge: 1a2b3c4 5d6e7f8",
    "sha256: 3f786850e387550fdab836ed7e6dc881de23001b",
    "Authorization header missing",
    "-----BEGIN CERTIFICATE-----",
    "password_hash = bcrypt.hashpw(password, salt)",
    "token_count = len(tokens)",
    "\"token\": {\"type\": \"string\", \"description\": \"An API token\"}",
    # command lines and their help: options without a value, a database after -p, ports
    "mkdir -p build/reports && cp -pr data build/",
    "mysql -u root -p analytics",
    "mysql --password --host db analytics",
    "ssh -p 2222 deploy@host",
    "git push -u origin main",
    "docker run -u 1000:1000 image",
    "curl -u analyst https://data.example.com/x",
    "Use --password to be asked for it; --token-file reads it from a file.",
    "rsync --password-file /etc/rsync.pass src/ dest/",
    "tool --token $API_TOKEN --password \"$DB_PASSWORD\"",
    "  -p, --password[=name]  Password to use when connecting to server.",
    "--token TOKEN   an API token (default: read GITHUB_TOKEN)",
    "  --api-key KEY      the key to use",
    "gh auth login --with-token < token.txt",
    "PGPASSWORD=${PGPASSWORD:-}",
]


@pytest.mark.parametrize(("line", "secret"), CREDENTIALS)
def test_every_labelled_credential_is_masked(line: str, secret: str) -> None:
    cleaned = scrub_credentials(line)
    assert secret not in cleaned
    assert REDACTED in cleaned


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_are_left_as_they_are(line: str) -> None:
    assert scrub_credentials(line) == line


def test_the_masked_line_keeps_what_a_reader_needs() -> None:
    remote = "origin\thttps://x-access-token:ghs_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i@github.com/acme/m.git (fetch)"
    assert scrub_credentials(remote) == "origin\thttps://x-access-token:***@github.com/acme/m.git (fetch)"
    assert scrub_credentials('password = "hunter22"') == 'password = "***"'
    assert scrub_credentials("?api_key=Q8m2KxP9vL4nR7tW&range=1y") == "?api_key=***&range=1y"


def test_scrub_output_also_removes_known_values() -> None:
    assert scrub_output("id=Qm7xT2vL9pR4wK8s and url", ["Qm7xT2vL9pR4wK8s"]) == "id=*** and url"


def _lines(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [line for line in text.splitlines() if line.strip()]
    return found


# ``scrub_credentials`` tries a shape only where one of its trigger words starts
# (``dexter.secrets.CREDENTIAL_TRIGGERS``), so a line with none of them comes back unchanged:
# :func:`_changed` finds the lines that hold one (substring searches over all the lines at
# once) and calls ``scrub_credentials`` on those only: the same lines, a fraction of the CPU.


def _may_change(lines: list[str]) -> list[int]:
    """The indexes of the lines holding a trigger word, in order."""
    raw = "\n".join(lines).encode("ascii", "replace")  # one byte per character, as dexter
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))
    found: set[int] = set()
    lower_words, exact_words = CREDENTIAL_TRIGGERS
    for text, words in ((raw.lower(), lower_words), (raw, exact_words)):
        for word in words:
            at = text.find(word)
            while at >= 0:
                found.add(bisect_right(starts, at) - 1)
                at = text.find(word, at + 1)
    return sorted(found)


def _changed(lines: list[str]) -> list[str]:
    """The lines ``scrub_credentials`` changes, in order. Few long lines (SEC filings: a
    trigger word in each) are all scrubbed; many short ones (source code) only where
    :func:`_may_change` finds a trigger."""
    maybe = _may_change(lines) if len(lines) > 1000 else range(len(lines))
    return [lines[i] for i in maybe if scrub_credentials(lines[i]) != lines[i]]


def test_every_labelled_credential_holds_a_word_the_prefilter_keeps() -> None:
    """:func:`_may_change` skips only lines ``scrub_credentials`` cannot change: every labelled
    credential (each shape dexter masks) holds one of its words."""
    lines = [line for line, _ in CREDENTIALS]
    assert _may_change(lines) == list(range(len(lines)))


def test_no_false_positive_in_real_sec_filings_and_data() -> None:
    files = [p for p in (ROOT / "tests" / "fixtures" / "sec-real").rglob("*")
             if p.is_file() and p.suffix in (".htm", ".json")]
    lines = _lines(files)
    assert sum(map(len, lines)) > 5_000_000
    assert _changed(lines) == []


def test_false_positives_in_library_source_code_are_rare() -> None:
    """Code is where ``password``/``token`` appear most without a credential: the source
    of the libraries dexter runs on (changed lines there are docstring examples such as
    ``https://user:pass@host``, kept as credentials by shape)."""
    paths: list[Path] = []
    for name in ("httpx", "openai", "anthropic", "pydantic", "rich", "prompt_toolkit",
                 "typer", "dotenv"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations
        paths += Path(next(iter(spec.submodule_search_locations))).rglob("*.py")
    lines = _lines(paths)
    assert len(lines) > 100_000
    changed = _changed(lines)
    assert len(changed) / len(lines) < 0.0001, changed[:20]


def test_dexter_own_source_changes_only_where_it_holds_a_literal_key() -> None:
    lines = _lines(sorted((ROOT / "dexter").rglob("*.py")))
    changed = _changed(lines)
    assert all("sk-" in line for line in changed), changed


@pytest.mark.parametrize("token", [
    "ghp_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i", "gho_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i",
    "ghu_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i", "ghs_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i",
    "ghr_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i", "github_pat_11AZq8R2mK4pL9xW3vN7cT_1yB6hJ0dF5s",
    "glpat-Xy7Kq2Lm9Np4Rs6Tv8Wz", "xoxp-1234567890-Zq8R2mK4pL9x", "AKIAQ3EXAMPLEK7XZ2PM",
    "ASIAQ3EXAMPLEK7XZ2PM", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "sk-ant-api03-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5s", "sk-proj-Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8",
    "sk_live_51Zq8R2mK4pL9xW3vN7c", "rk_live_51Zq8R2mK4pL9xW3vN7c", "pk_test_51Zq8R2mK4pL9xW3vN7c",
    "hf_ZqRmKpLxWvNcTyBhJdFsAuEiOoPqAbCd", "npm_Zq8R2mK4pL9xW3vN7cT1yB6hJ0dF5sA8uE2i",
    "pypi-AgEIcHlwaS5vcmcCJGE0ZjZiZWNhLTk2ZTYtNDRmNS1hYjE0LWQ4NmI3ZmY0",
    "xai-Zq8R2mK4pL9xW3vN7cT1yB6h", "gsk_Zq8R2mK4pL9xW3vN7cT1yB6h", "pplx-Zq8R2mK4pL9xW3vN7cT1yB6h",
    "tvly-Zq8R2mK4pL9xW3vN7cT1yB6h",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
])
def test_every_documented_token_format_is_masked_on_its_own(token: str) -> None:
    assert scrub_credentials(f"found {token} in a file") == "found *** in a file"
