#!/usr/bin/env python3
"""Build the benign redaction corpus: sentences of the kind agents save, none holding a secret.

    .venv/bin/python bench/redaction_corpus.py REPO [REPO …] [--out tests/data/redaction_benign.json]

Each REPO is a git repository (a clone of a bundle is enough). The corpus mixes three sources, all
from those repositories (seeded, so the same repositories give the same file):
- commit messages (subjects and body paragraphs) that carry code: identifiers, options, colons;
- documentation lines with code in them (reStructuredText and Markdown);
- memories written the way agents write them, from templates filled with the repositories' real
  test names, functions, environment variables and commit SHAs, beside service names that contain
  auth/token/secret/key, identifiers after a colon, environment variable names and UUIDs: the
  look-alikes a redactor must leave alone.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVICES = ["auth-gateway", "token-service", "secret-rotator", "keycloak-auth", "api-key-manager", "authz-proxy",
            "oauth-bridge", "token-exchange", "keyvault-sync", "secrets-operator", "passkey-api", "auth-worker",
            "session-keystore", "jwt-issuer", "key-broker", "auth0-sync", "credential-helper", "tokenizer-svc",
            "signing-keys-cron", "password-reset-mailer"]  # fmt: skip
ENV_NAMES = ["GITHUB_TOKEN", "NPM_TOKEN", "PYPI_API_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
             "SECRET_KEY_BASE", "DJANGO_SECRET_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AUTH_SERVICE_URL",
             "TOKEN_REFRESH_INTERVAL", "SENTRY_AUTH_TOKEN", "VAULT_TOKEN", "CI_JOB_TOKEN", "KEYCLOAK_REALM",
             "SECRETS_BACKEND", "JWT_PUBLIC_KEY_PATH", "SESSION_SECRET_FILE", "API_KEY_HEADER", "AUTH_MODE"]  # fmt: skip
PLAIN_VALUES = ["300", "oidc", "true", "false", "vault", "15000", "us-east-1", "X-Api-Key", "/etc/app/session.key",
                "https://auth.internal.example.com/v2", "staging", "file", "3600", "keycloak.internal:8443"]  # fmt: skip
# Written by hand from the review's classes (each was altered by an earlier redactor or is close to one).
HANDWRITTEN = [
    "auth-gateway: test_retry_backoff fails on CI",
    "token-service: refresh_access_token() now retries twice",
    "secret-rotator: rotate_all_keys runs at 03:00 UTC",
    "keycloak-auth: login_redirect_uri must include the trailing slash",
    "api-key-manager: KeyStore.load_from_disk raises on empty files",
    "The auth token: test_token_expiry_handling is flaky on macOS",
    "auth: use_pkce_flow is the default since v2.3",
    "AUTH_SERVICE_URL points at the staging cluster",
    "Set GITHUB_TOKEN in the workflow env; the job reads it via os.environ",
    "The fix landed in 3f9c2a1b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f90",
    "secret_key_base is read from config/credentials.yml.enc",
    "Reverted a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0 because it broke token refresh",
    "The auth middleware: AuthMiddleware.dispatch_request_v2 swallows 401s",
    "key: test_upsert_with_compound_pk_and_alter fails after the rebase",
    "secret-store: SecretStore.get_or_create_default_namespace is slow on cold start",
    "auth_token_ttl_seconds=3600 in settings.py",
    "tokenizer: BertTokenizerFast2 loads vocab_v3.txt from the cache",
    "passkey-api: verify_assertion_response accepts only ES256",
    "The api key rotation job: rotate_stale_keys_v2 finished in 41s",
    "access_key_id rotation is handled by the aws-vault wrapper",
    "Use MEMORYD_TOKEN_FILE instead of MEMORYD_TOKEN on shared machines",
    "auth-proxy: upstream_timeout_ms=15000 fixed the 504s",
    "Token bucket: RateLimiter.acquire_tokens(n=5) blocks too long",
    "Commit 9fceb02 fixed the auth callback; see PR #4821",
    "The secret scanning check: detect_secrets_hook_v1 flagged tests/fixtures/fake_keys.py",
    'keyring: keyring.get_password("memoryd", user) returns None on headless Linux',
    "password reset: send_password_reset_email_task runs on the celery queue",
    "authz: has_permission_for_resource(user, 'repo:write') is cached per request",
    "The token is: stored in the OS keychain, never on disk",
    "jwt-verifier: JWKS cache refreshes every 600s via refresh_jwks_keys",
    "key=value pairs in .env are parsed by python-dotenv",
    "oauth-client: exchange_code_for_token_v3 handles the PKCE verifier",
    "secrets: SECRETS_BACKEND=vault in production, file in dev",
    "auth0 tenant: dev-k3x9m2p7.us.auth0.com is the staging one",
    "The session secret: SESSION_SECRET_KEY_PATH points to /etc/app/session.key",
    "TOKEN_REFRESH_INTERVAL=300 and TOKEN_LEEWAY=30 in the helm values",
    "credentials: CredentialProvider.resolve_chain_v2 checks env, file, then IMDS",
    "api_key_header_name is X-Api-Key for the partner API",
    "Bearer auth: the client sends get_bearer_token_from_env() output",
    "Set AUTH_MODE=oidc and restart auth-gateway",
]
# Written by hand after the structure rules, as a check (none altered on first run).
HANDWRITTEN_LATER = [
    "Authorization: Basic base64(user:pass) is what the legacy API expects",
    "Send Authorization: Bearer ${GITHUB_TOKEN} from the workflow",
    "The header is Authorization: Bearer <token>; never log it",
    "Authorization: Negotiate is handled by the Kerberos sidecar since v1.4",
    "Authorization: AWS4-HMAC-SHA256 signing is done by botocore, not by us",
    "The deploy key is stored in 1Password under ci-deploy-2024",
    "signing key: ed25519, rotated yearly",
    "webhook secret: see WEBHOOK_SECRET in the vault",
    "encryption key for backups lives in KMS alias/backup-2024",
    "The license key format is XXXX-XXXX-XXXX-XXXX",
    "AWS region us-east-1 and bucket acme-prod-artifacts-2024-archive-logs",
    "aws s3 sync ./dist s3://acme-web-prod/releases/2024-12-04/build-1187/",
    "The AWS account id is 123456789012 and the role is arn:aws:iam::123456789012:role/deployer",
    "AKIA keys are rotated by the iam-rotate job every 90 days",
    "git rev-parse HEAD gave 9fceb02d0ae598e95dc970b74767f19372d61af8 for the aws deploy",
    "The aws cli image is public.ecr.aws/aws-cli/aws-cli:2.15.0",
    "-----BEGIN CERTIFICATE----- blocks in certs/ca.pem are public, keep them",
    "The PEM header must be -----BEGIN PUBLIC KEY----- for the verifier",
    "PuTTY users should convert keys with puttygen, see docs/ssh.md",
    'The JWK set at /.well-known/jwks.json has "kty":"RSA" keys with "n" and "e" only',
    '{"kty":"RSA","kid":"2024-12-key-1","use":"sig","alg":"RS256"}',
    "creds for grafana live in the ops vault, ask Dana",
    "The passcode prompt appears after three failed logins",
    'key = cache_key_for(user_id, "profile_v2")',
    'api_key_header = "X-Api-Key"',
    'SECRET_KEY = env("DJANGO_SECRET_KEY")',
    "token_url: https://auth.example.com/oauth/token",
    "secret_ref: projects/acme/secrets/db-password/versions/latest",
    "The session token TTL is 3600s; refresh_token TTL is 30 days",
    "auth_required=True on every route in api/routes.py except /healthz",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    'password_hash = make_password(raw_password, hasher="argon2")',
    "The webhook signing key header is X-Hub-Signature-256",
    "deploy key fingerprint SHA256:Zk9mQ2pL7vR4nW8zT3bC6dF1gH5jK0sAq3vK8mT2pW9",
    "master key rotation: run bin/rails credentials:edit on the release box",
    "The aws_secret_access_key line in ~/.aws/credentials must not be committed",
    "Authorization header parsing: parse_authorization_header() splits on the first space",
    "x-api-key: required for /v2 endpoints (see api/auth.py)",
    "Proxy-Authorization is stripped by the corporate proxy at 10.0.0.1:3128",
]
TEMPLATES = [
    "{svc}: {test} fails on CI since {sha7}",
    "{svc}: {func}() now retries twice before giving up",
    "{svc}: {test} is flaky on macOS; rerun with -p no:randomly",
    "Set {env} before running {test} locally; CI injects it from the repository settings",
    "{env} is read once at start-up by {func}, so restart {svc} after changing it",
    "{env}={plain} in the staging values file for {svc}",
    "Reverted {sha} in {svc} because it broke {func}",
    "The fix for {test} landed in {sha}",
    "{svc} logs request id {uuid} for the failing {func} call",
    "tenant {uuid} on {svc} still uses the old {func} path",
    "auth: {func} is called for every request, keep it cheap",
    "token: {test} covers the refresh path of {svc}",
    "secret: rotate via {svc}, never edit {env} by hand",
    "key: {func} accepts a tuple for compound primary keys",
    "The {svc} runbook says: check {env} first, then run {test}",
    "{svc} owns {func}; ask in #platform before changing its signature",
    "Our auth token flow: {svc} calls {func}, then caches for {plain_num} seconds",
    "Bisected the {svc} regression to {sha7} ({func})",
    "Migrated {svc} to read {env} from the secret store; the variable name stays the same",
    "{svc}: {func}(table, pk='id') raises when the table has no rowid",
    "When {test} fails with a KeyError, clear the cache dir and rerun",
    "Decided: {svc} keeps {env} out of the container image; it is mounted at runtime",
    "The api key header for {svc} is named in {env}; value lives in the vault",
    "Build {sha7} of {svc} passed {test} and {test2}",
    "Password reset emails come from {svc}; {func} renders the template",
    "{svc} healthcheck: GET /healthz returns 200 once {func} finished warming",
    "secret-scanning flagged {test} because the fixture file is named fake_keys.py; it is a false positive",
    "key rotation for {svc} is tracked in issue #{num}; owner: platform team",
    "{env} must be set for {test}; otherwise the test is skipped with a clear message",
    "In {svc}, {func} and {func2} share a connection; do not call them from two threads",
]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _commits(repo: Path) -> list[str]:
    out = []
    for msg in _git(repo, "log", "--format=%B%x00").split("\0"):
        for para in msg.strip().split("\n\n"):
            para = " ".join(para.split())
            # code-bearing: an identifier with _ or (), an option, a colon, backticks
            if 25 <= len(para) <= 300 and re.search(r"\w_\w|\w\(\)|--\w|`|: \S", para):
                out.append(para)
    return out


def _docs(repo: Path) -> list[str]:
    out = []
    for path in sorted([*repo.glob("docs/*.rst"), *repo.glob("*.md")]):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = " ".join(line.split())
            if 30 <= len(line) <= 240 and re.search(r"``|`|\w_\w|--\w", line) and not line.startswith(("..", "$")):
                out.append(line)
    return out


def _names(repos: list[Path]) -> tuple[list[str], list[str], list[str]]:
    tests, funcs, shas = set(), set(), []
    for repo in repos:
        for path in repo.rglob("*"):
            if path.suffix not in (".py", ".go") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            tests.update(
                re.findall(r"\bdef (test_\w+)|\bfunc (Test\w+)", text)
                and [a or b for a, b in re.findall(r"\bdef (test_\w+)|\bfunc (Test\w+)", text)]
            )
            funcs.update(re.findall(r"^\s*def ([a-z]\w{3,})\(", text, re.M))
            funcs.update(re.findall(r"^func (?:\(\w+ \*?\w+\) )?([A-Z]\w{3,})\(", text, re.M))
        shas += _git(repo, "log", "--format=%H").split()
    return sorted(tests), sorted(funcs), shas


def _name(repo: Path) -> str:
    """The repository's name: its origin's last path part (a clone of `x.bundle` is `x`), else the folder's."""
    try:
        origin = _git(repo, "config", "--get", "remote.origin.url").strip()
    except subprocess.CalledProcessError:
        origin = ""
    return Path(origin).name.removesuffix(".bundle").removesuffix(".git") if origin else repo.name


def build(repos: list[Path], seed: int = 23, mined: int = 200, templated: int = 200) -> list[str]:
    rnd = random.Random(seed)
    commits = [c for r in repos for c in _commits(r)]
    docs = [d for r in repos for d in _docs(r)]
    tests, funcs, shas = _names(repos)
    picked = rnd.sample(commits, min(len(commits), mined * 2 // 3)) + rnd.sample(docs, min(len(docs), mined // 3))
    made = []
    for i in range(templated):
        sha = rnd.choice(shas)
        made.append(TEMPLATES[i % len(TEMPLATES)].format(
            svc=rnd.choice(SERVICES), test=rnd.choice(tests), test2=rnd.choice(tests), func=rnd.choice(funcs),
            func2=rnd.choice(funcs), env=rnd.choice(ENV_NAMES), plain=rnd.choice(PLAIN_VALUES), sha=sha,
            sha7=sha[:7], uuid=uuid.UUID(int=rnd.getrandbits(128), version=4), num=rnd.randint(10, 2000),
            plain_num=rnd.choice([60, 300, 900, 3600]),
        ))  # fmt: skip
    return list(dict.fromkeys(HANDWRITTEN + HANDWRITTEN_LATER + picked + made))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "redaction_benign.json")
    args = ap.parse_args()
    texts = build(args.repos)
    args.out.write_text(json.dumps({"about": __doc__.splitlines()[0], "sources": [_name(r) for r in args.repos],
                                    "texts": texts}, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")  # fmt: skip
    print(f"{len(texts)} sentences -> {args.out}")


if __name__ == "__main__":
    main()
