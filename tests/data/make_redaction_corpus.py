"""Regenerate the generated part of redaction_corpus.json: fake secrets by family, and look-alikes.

    python tests/data/make_redaction_corpus.py

Every secret is random (seeded), shaped like its family's real tokens, and never a real key. Each
family appears in English and in Chinese context. The hand-written cases of the corpus (those
without "generated": true) are kept as they are.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from pathlib import Path

HERE = Path(__file__).parent
CORPUS = HERE / "redaction_corpus.json"
rng = random.Random(20261203)

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def r(chars: str, n: int) -> str:
    while True:
        s = "".join(rng.choice(chars) for _ in range(n))
        if any(c.isdigit() for c in s) or not any(c.isdigit() for c in chars):
            return s


def ulid() -> str:
    return "01" + r("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 24)


# family → (kind, generator of the secret, English templates, Chinese templates); {s} is the secret
FAMILIES: dict[str, tuple[str, object, list[str], list[str]]] = {
    "twilio_auth_token": (
        "secret_assignment",
        lambda: r(HEX, 32),
        [
            "The Twilio auth token is {s}; SMS alerts break if it rotates.",
            "twilio: account ACa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 auth token {s}",
        ],
        ["Twilio 的 auth token 是 {s}，短信告警靠它。"],
    ),
    "twilio_api_key": (
        "twilio_key",
        lambda: "SK" + r(HEX, 32),
        ["Twilio API key for the worker: {s}"],
        ["短信服务用的 Twilio API key：{s}"],
    ),
    "sendgrid": (
        "sendgrid_key",
        lambda: f"SG.{r(URLSAFE, 22)}.{r(URLSAFE, 43)}",
        ["Transactional mail goes out with SendGrid key {s} from the notifier."],
        ["邮件通知用 SendGrid，key 是 {s}"],
    ),
    "mailgun": (
        "mailgun_key",
        lambda: "key-" + r(LOWER, 32),
        ["Mailgun private key {s} for mg.example.org"],
        ["Mailgun 私钥 {s} 配在 notifier 里"],
    ),
    "digitalocean": (
        "digitalocean_token",
        lambda: "dop_v1_" + r(HEX, 64),
        ["doctl auth init used the DigitalOcean token {s}"],
        ["DigitalOcean 的访问令牌：{s}"],
    ),
    "huggingface": (
        "huggingface_token",
        lambda: "hf_" + r(string.ascii_letters, 34),
        ["Model downloads in CI use HF_TOKEN {s} (read scope)."],
        ["CI 下载模型用 Hugging Face 令牌 {s}"],
    ),
    "django_secret_key": (
        "secret_assignment",
        lambda: "django-insecure-" + r(ALNUM + "!@#%^&*(-_=+)", 30) + "&" + r(ALNUM, 8),
        ["settings.py had SECRET_KEY={s} before we moved it to the vault"],
        ["之前 settings.py 里写死了 SECRET_KEY={s}"],
    ),
    "anthropic": (
        "anthropic_key",
        lambda: "sk-ant-api03-" + r(URLSAFE, 93) + "AA",
        ["ANTHROPIC_API_KEY={s} is the judge's key"],
        ["评审用的 Anthropic key：{s}"],
    ),
    "openai": (
        "openai_key",
        lambda: "sk-proj-" + r(URLSAFE, 48),
        ["the embeddings job calls OpenAI with {s}"],
        ["OpenAI 的 key 是 {s}，别外传"],
    ),
    "github_pat": (
        "github_token",
        lambda: "ghp_" + r(ALNUM, 36),
        ["Release bot pushes tags with {s}"],
        ["发布机器人用 GitHub token {s} 推 tag"],
    ),
    "github_fine_grained": (
        "github_token",
        lambda: "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59),
        ["Dependabot uses the fine-grained PAT {s}"],
        ["细粒度 PAT：{s}"],
    ),
    "gitlab": (
        "gitlab_token",
        lambda: "glpat-" + r(URLSAFE, 20),
        ["GitLab mirror token {s}"],
        ["GitLab 镜像同步令牌 {s}"],
    ),
    "slack_bot": (
        "slack_token",
        lambda: f"xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(ALNUM, 24)}",
        ["The on-call bot posts with {s}"],
        ["值班机器人用 {s} 发消息"],
    ),
    "slack_webhook": (
        "slack_webhook",
        lambda: (
            f"T{r(string.ascii_uppercase + string.digits, 8)}/B{r(string.ascii_uppercase + string.digits, 8)}/{r(ALNUM, 24)}"
        ),
        ["Alerts go to https://hooks.slack.com/services/{s}"],
        ["告警发到 https://hooks.slack.com/services/{s}"],
    ),
    "stripe_secret": (
        "stripe_key",
        lambda: "sk_live_" + r(ALNUM, 24),
        ["Billing charges with {s}"],
        ["计费服务用 Stripe 密钥 {s}"],
    ),
    "stripe_webhook": (
        "stripe_webhook_secret",
        lambda: "whsec_" + r(ALNUM, 32),
        ["Verify webhooks with {s}"],
        ["Webhook 签名密钥 {s}"],
    ),
    "aws_access_key": (
        "aws_access_key",
        lambda: "AKIA" + r(string.ascii_uppercase + "234567", 16),
        ["The backup role's access key is {s}"],
        ["备份用的 AWS access key：{s}"],
    ),
    "aws_secret_key": (
        "aws_secret_key",
        lambda: r(ALNUM + "/+", 40),
        ["aws_secret_access_key = {s}"],
        ["配置里 aws_secret_access_key={s}"],
    ),
    "google_api_key": (
        "google_api_key",
        lambda: "AIza" + r(URLSAFE, 35),
        ["Maps uses {s} in the web app"],
        ["地图服务的 API key：{s}"],
    ),
    "google_oauth_secret": (
        "google_oauth_secret",
        lambda: "GOCSPX-" + r(URLSAFE, 28),
        ["OAuth client secret {s} for the staging login"],
        ["Google 登录的 client secret 是 {s}"],
    ),
    "azure_storage": (
        "azure_storage_key",
        lambda: r(B64, 86) + "==",
        ["DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={s};EndpointSuffix=core.windows.net"],
        ["日志存储连接串：AccountName=acmelogs;AccountKey={s}"],
    ),
    "azure_ad_secret": (
        "azure_ad_client_secret",
        lambda: r(ALNUM, 3) + str(rng.randint(0, 9)) + "Q~" + r(ALNUM + "_~.-", 34),
        ["The app registration secret is {s}"],
        ["Azure 应用注册的密钥：{s}"],
    ),
    "npm": ("npm_token", lambda: "npm_" + r(ALNUM, 36), ["//registry.npmjs.org/:_authToken={s}"], ["npm 发布令牌 {s}"]),
    "pypi": (
        "pypi_token",
        lambda: "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 70),
        ["twine upload -u __token__ -p {s}"],
        ["PyPI 上传令牌：{s}"],
    ),
    "databricks": (
        "databricks_token",
        lambda: "dapi" + r(HEX, 32),
        ["Notebooks authenticate with {s}"],
        ["Databricks 令牌 {s}"],
    ),
    "vault": (
        "vault_token",
        lambda: "hvs." + r(URLSAFE, 90),
        ["VAULT_TOKEN {s} expires Friday"],
        ["Vault 根令牌 {s} 周五过期"],
    ),
    "doppler": (
        "doppler_token",
        lambda: "dp.pt." + r(ALNUM, 43),
        ["Doppler service token {s}"],
        ["Doppler 服务令牌 {s}"],
    ),
    "shopify": (
        "shopify_token",
        lambda: "shpat_" + r(HEX, 32),
        ["The storefront sync uses {s}"],
        ["Shopify 同步用 {s}"],
    ),
    "square": (
        "square_token",
        lambda: "sq0atp-" + r(URLSAFE, 22),
        ["Square payments use {s}"],
        ["Square 支付令牌 {s}"],
    ),
    "telegram": (
        "telegram_token",
        lambda: f"{rng.randint(10**8, 10**9)}:AA{r(URLSAFE, 33)}",
        ["The deploy bot token is {s}"],
        ["部署通知机器人的 token：{s}"],
    ),
    "discord_webhook": (
        "discord_token",
        lambda: f"https://discord.com/api/webhooks/{r(string.digits, 18)}/{r(URLSAFE, 68)}",
        ["Release notes are posted to {s}"],
        ["发版通知发到 {s}"],
    ),
    "jwt": (
        "jwt",
        lambda: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + r(ALNUM, 30) + "." + r(URLSAFE, 43),
        ["Service-to-service calls carry {s}"],
        ["服务间调用带着 {s}"],
    ),
    "private_key": (
        "private_key",
        lambda: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            + "\n".join(r(B64, 70) for _ in range(4))
            + "\n-----END OPENSSH PRIVATE KEY-----"
        ),
        ["Deploy key:\n{s}"],
        ["部署私钥：\n{s}"],
    ),
    "postgres_url": (
        "connection_string",
        lambda: r(ALNUM, 14) + "!",
        ["DATABASE_URL=postgresql://app:{s}@db.internal:5432/app"],
        ["数据库连接串 postgresql://app:{s}@db.internal:5432/app"],
    ),
    "mongodb_url": (
        "connection_string",
        lambda: r(ALNUM, 16),
        ["mongodb+srv://svc:{s}@cluster0.ab1cd.mongodb.net/prod"],
        ["Mongo 连接：mongodb+srv://svc:{s}@cluster0.ab1cd.mongodb.net/prod"],
    ),
    "redis_url": (
        "connection_string",
        lambda: r(ALNUM, 20),
        ["REDIS_URL=redis://:{s}@cache:6379/0"],
        ["缓存地址 redis://:{s}@cache:6379/0"],
    ),
    "grafana": (
        "grafana_token",
        lambda: "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8),
        ["Dashboards provisioned with {s}"],
        ["Grafana 服务账号令牌 {s}"],
    ),
    "linear": ("linear_key", lambda: "lin_api_" + r(ALNUM, 40), ["Linear sync key {s}"], ["Linear 同步 key {s}"]),
    "notion": (
        "notion_token",
        lambda: "ntn_" + r(string.digits, 11) + r(ALNUM, 35),
        ["Docs export uses {s}"],
        ["Notion 导出用 {s}"],
    ),
    "sentry": ("sentry_token", lambda: "sntryu_" + r(HEX, 64), ["sentry-cli uses {s}"], ["sentry-cli 的令牌 {s}"]),
    "newrelic": (
        "newrelic_key",
        lambda: "NRAK-" + r(string.ascii_uppercase + string.digits, 27),
        ["New Relic user key {s}"],
        ["New Relic 用户 key {s}"],
    ),
    "pulumi": ("pulumi_token", lambda: "pul-" + r(HEX, 40), ["PULUMI_ACCESS_TOKEN={s}"], ["Pulumi 访问令牌 {s}"]),
    "age": (
        "age_secret_key",
        lambda: "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        ["sops decrypts with {s}"],
        ["sops 解密用 {s}"],
    ),
    "okta": ("secret_assignment", lambda: "00" + r(URLSAFE, 40), ["OKTA_API_TOKEN: {s}"], ["Okta 的 API token 是 {s}"]),
    "datadog": (
        "secret_assignment",
        lambda: r(HEX, 32),
        ["DD_API_KEY={s} in the agent config"],
        ["Datadog api key 为 {s}"],
    ),
    "heroku": (
        "secret_assignment",
        lambda: str(uuid.UUID(int=rng.getrandbits(128))),
        ["HEROKU_API_KEY={s}"],
        ["Heroku API key：{s}"],
    ),
    "alibaba": (
        "alibaba_access_key",
        lambda: "LTAI" + r(ALNUM, 20),
        ["OSS uploads use access key {s}"],
        ["阿里云 AccessKey ID {s}"],
    ),
    "dynatrace": (
        "dynatrace_token",
        lambda: "dt0c01." + r(string.ascii_uppercase + string.digits, 24) + "." + r(ALNUM, 64),
        ["OneAgent installs with {s}"],
        ["Dynatrace 令牌 {s}"],
    ),
    "tailscale": (
        "tailscale_key",
        lambda: "tskey-auth-" + r(ALNUM, 12) + "-" + r(ALNUM, 30),
        ["New nodes join with {s}"],
        ["新节点用 {s} 加入 tailnet"],
    ),
    "mailchimp": (
        "mailchimp_key",
        lambda: r(HEX, 32) + "-us21",
        ["Newsletter sync key {s}"],
        ["Mailchimp 的 key：{s}"],
    ),
    "chinese_password": (
        "password",
        lambda: r(ALNUM, 10) + "#" + r(string.digits, 2),
        ["The staging root password is {s}"],
        ["测试环境 root 密码是 {s}，别外传"],
    ),
    "bearer": (
        "bearer_token",
        lambda: r(URLSAFE, 40),
        ["curl -H 'Authorization: Bearer {s}' https://api.internal"],
        ["调用接口时带上 Authorization: Bearer {s}"],
    ),
    "curl_basic": (
        "basic_auth",
        lambda: r(ALNUM, 14),
        ["curl -u deploy:{s} https://ci.internal/job"],
        ["用 curl -u deploy:{s} 触发构建"],
    ),
    "signed_url": (
        "secret_assignment",
        lambda: r(ALNUM + "%", 44),
        ["Share https://acme.blob.core.windows.net/x/report.pdf?sv=2024-01-01&se=2026-12-31&sig={s}"],
        ["临时下载链接 https://acme.blob.core.windows.net/x/a.zip?sp=r&sig={s}"],
    ),
    "replicate": (
        "replicate_token",
        lambda: "r8_" + r(ALNUM, 37),
        ["Image jobs call Replicate with {s}"],
        ["Replicate 令牌 {s}"],
    ),
    "groq": ("groq_key", lambda: "gsk_" + r(ALNUM, 52), ["GROQ_API_KEY is {s}"], ["Groq 的 key 为 {s}"]),
    "use_as_password": (
        "password",
        lambda: r(ALNUM, 9) + "!" + r(string.digits, 2),
        ["Use {s} as the admin password for the kiosk."],
        ["用 {s} 作为数据库密码"],
    ),
}

BENIGN = [
    *(f"Commit {r(HEX, 40)} fixed the token refresh bug in auth/session.py." for _ in range(4)),
    *(f"提交 {r(HEX, 40)} 修复了令牌刷新的问题" for _ in range(3)),
    *(f"Request id {uuid.UUID(int=rng.getrandbits(128))} timed out at the gateway after 30 s." for _ in range(4)),
    *(f"请求 ID {uuid.UUID(int=rng.getrandbits(128))} 在网关超时" for _ in range(3)),
    *(f"The memory id {ulid()} was superseded by {ulid()} last week." for _ in range(3)),
    *(f"记忆 {ulid()} 已被替换" for _ in range(2)),
    "The base64 of 'hello world' is aGVsbG8gd29ybGQ= in the RFC 4648 test vectors.",
    "RFC 4648 lists Zm9vYmFy as the base64 encoding of foobar.",
    "Test vector: SHA-256 of the empty string is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    "单元测试里 'abc' 的 MD5 是 900150983cd24fb0d6963f7d28e17f72，用来校验实现。",
    "AES-128 test key 000102030405060708090a0b0c0d0e0f comes from FIPS-197 appendix C.",
    "Brand colours: primary #1a73e8, accent #fbbc04, danger #d93025, background #f8f9fa.",
    "主题色改成 #3b82f6，悬停用 #2563eb。",
    "Rename get_user_session_token_refresh_handler_for_mobile_clients to refresh_mobile_session.",
    "The function validate_password_strength_and_history_constraints runs on every change.",
    "Reset the password from the admin page, never by editing the users table.",
    "Password resets expire after 30 minutes and need the second factor.",
    "密码长度至少 12 位，必须包含数字和符号。",
    "忘记密码时走邮件重置流程，不要直接改数据库。",
    "The rate limiter is a token bucket: 10 tokens per second, burst 50.",
    "限流用令牌桶算法，每秒补充 10 个令牌。",
    "API key rotation happens every 90 days through the secrets manager.",
    "API 密钥每 90 天轮换一次，由 Vault 管理。",
    "The secret store is HashiCorp Vault at https://vault.internal:8200 with the kv-v2 engine.",
    "Read the token from os.environ['GITHUB_TOKEN'] instead of hard-coding it.",
    "The key is read from $STRIPE_SECRET_KEY at start-up.",
    "Set DB_PASSWORD in the .env file; the template lists it empty.",
    "Publishable key pk_live_51Hx" + r(ALNUM, 40) + " is safe in the browser bundle.",
    "Docker image digest sha256:" + r(HEX, 64) + " is pinned in the Helm chart.",
    "npm lockfile integrity sha512-" + r(B64, 86) + "== matched.",
    "SSH public key fingerprint SHA256:" + r(B64, 43) + " belongs to the deploy host.",
    "Add the public key ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + r(B64, 43) + " deploy@ci to authorized_keys.",
    "The ARN arn:aws:iam::123456789012:role/backup-writer lets the job write to s3://acme-backups-2026.",
    "Version 3.12.4 of the SDK changed the key derivation default to scrypt.",
    "Ports: API 8443, metrics 9090, admin 9443; the auth service listens on 10.0.3.17:8443.",
    "Kubernetes secret/app-tls holds the certificate; rotate it with cert-manager.",
    "The token endpoint is https://auth.example.com/oauth2/token and returns JSON.",
    "Bearer tokens expire after 3600 seconds; refresh them with the refresh endpoint.",
    "Keyboard shortcut ctrl+k opens the command palette; key-value settings live in config.toml.",
    "Use a key-value store such as Redis 7 for session state.",
    "The secret santa draw is on December 12th in the kitchen.",
    "Keep the SECRET_KEY out of git; read it from the environment in settings.py.",
    "The order id ord_2026_0001123 was refunded twice by mistake.",
    "UUIDv7 values like 018f3c9a-7b2e-7c44-9a5d-3e2f1b0c8d7a sort by time.",
    "The license is MIT; see LICENSE for the full text.",
    "JWTs are signed with RS256; the public JWKS lives at /.well-known/jwks.json.",
    "Build number 20261203.4 failed on the arm64 runner.",
    "The cache key is built as f'{user_id}:{scope_hash}:{version}'.",
    "Use secrets.token_urlsafe(32) to generate tokens, never random.random().",
    "生成令牌用 secrets.token_urlsafe(32)，不要用 random。",
    "Git tag v2.4.0 points at 5d41402abc4b2a76b9719d911017c592 in the mirror.",
    "The S3 bucket acme-prod-logs-eu-west-1 keeps 30 days of access logs.",
    "Sentry DSN project 4504983 collects frontend errors only.",
    "The passwd file format has seven colon-separated fields.",
    "私钥永远不要提交到仓库，公钥可以放在 README 里。",
    "访问密钥的长度是 40 个字符，格式见文档。",
    "凭证过期后，CLI 会提示重新登录。",
    "Auth0 tenant acme-prod uses the universal login page.",
    "Twilio sends SMS from +1 415 555 0100 for the alerting flow.",
    "The Datadog dashboard 'API latency' tracks p95 per endpoint.",
    "Mailgun domain mg.example.org is verified with DKIM.",
    "Heroku app acme-staging runs on the eco dyno tier.",
    "Okta groups map to the admin and viewer roles.",
    "The token count of a prompt is about 1.3 per English word.",
    "令牌数大约是中文字数的 1.5 倍。",
    "Hash the password with argon2id (m=64MiB, t=3, p=4) before storing it.",
    "Checksum 9fceb02d0ae598e95dc970b74767f19372d61af8 matches the release tarball.",
    "Use commit 1a410efbd13591db07496601ebc7a059dd55cfe9 as the base of the branch.",
    "The access log line format is '$remote_addr - $remote_user [$time_local]'.",
    "X-Request-ID header 7f3c2a9e-61b4-4f0e-9d2a-8c5e4b3a2f10 links the traces.",
    "Enable the 'auth' module before 'session' in the middleware list.",
    "The password field in the form uses autocomplete=current-password.",
    "Grafana dashboard uid a1b2c3d4e5 shows the queue depth.",
    "The API returns 401 when the token is missing and 403 when it lacks a scope.",
    "Our webhook secret is stored in AWS Secrets Manager under prod/webhooks.",
    "Key ID 7A3F9C2E (the release signing key) is published on keys.openpgp.org.",
    "Passphrase prompts come from ssh-agent; add the key with ssh-add -t 8h.",
    "Parquet files are partitioned by dt=2026-12-03/hour=14.",
    "The ULID 01HZX3Q6X0ABCDEFGHJKMNPQRS encodes 2024-06-05 as its timestamp.",
    "Base32 test vector: MZXW6YTBOI====== decodes to 'foobar'.",
]


def main() -> None:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    secrets = [c for c in corpus["secrets"] if not c.get("generated")]
    benign = [c for c in corpus["benign"] if not c.get("generated")]
    for family, (kind, gen, en, zh) in FAMILIES.items():
        for lang, templates in (("en", en), ("zh", zh)):
            for template in templates:
                secret = gen()  # type: ignore[operator]
                secrets.append({"text": template.format(s=secret), "secret": secret, "kind": kind, "family": family,
                                "lang": lang, "generated": True})  # fmt: skip
    benign += [{"text": text, "generated": True} for text in BENIGN]
    CORPUS.write_text(json.dumps({"secrets": secrets, "benign": benign}, ensure_ascii=False, indent=1) + "\n",
                      encoding="utf-8")  # fmt: skip
    print(
        f"{len(secrets)} secrets over {len({s.get('family', s['kind']) for s in secrets})} families, {len(benign)} benign"
    )


if __name__ == "__main__":
    main()
