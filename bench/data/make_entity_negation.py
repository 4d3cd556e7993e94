#!/usr/bin/env python3
"""Writes bench/data/entity_negation.jsonl: the entity-rarity / negation / temporal / cross-lingual-pull set.

Written by hand for issue 12 by the engineer who changed the ranking (so not independent of it;
it was written before the new ranking was tuned, and the ranking is never tuned on it alone).
Same format as bilingual.jsonl. The failure modes it probes (issue 12):

- entity_rare: a query names a common entity (Prometheus, PostgreSQL, Redis, Kubernetes, Kafka,
  Grafana, Docker, nginx) and a unique name; 12 of the 16 answers do not name the common entity
  ("billing-exporter serves its metrics on port 9464"), as in the issue's Prometheus example; 25-100 templated distractors per common entity
  (every template for each of 25 services, 625 in all) mention it for other services, in the same sentence shapes;
- negation: "which X did we decide not to use"; the answer holds a negated alternative, and a
  positive memory about the same technology stands beside it;
- temporal: the answer carries the date or order the question asks about, next to an undated
  memory on the same topic;
- xling_pull: the answer is in the other language, and a same-language memory shares a keyword.

Batch 2 (rows marked `"batch": 2`): 26 more queries of the same kinds with their own targets and
neighbours, written by a second engineer (recall2) before running any ranking on them, to check
that a fix for the batch-1 misses is not fitted to those 44 queries. Some use phrasings the
ranking's cue lists do not hold ("rule out", "turned down", "没有选"), a few ask across languages.

    .venv/bin/python bench/data/make_entity_negation.py     # rewrites the .jsonl (deterministic)
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_suffix("").parent / "entity_negation.jsonl"

# (id, kind, text)
TARGETS = [
    # entity_rare
    ("e01", "fact", "billing-exporter serves its metrics on port 9464 at /metrics."),
    ("e02", "fact", "The ledger-sync job writes its checkpoints to the table ledger_sync_state."),
    ("e03", "fact", "Every cache key of the ratelimiter service starts with rl:v2:."),
    ("e04", "decision", "The quartz-scheduler pod gets a PodDisruptionBudget with minAvailable 1."),
    ("e05", "fact", "The orders.v3 topic keeps 14 days of messages for the fraud-scorer consumer."),
    ("e06", "fact", "The geo-router dashboard lives at /d/georouter-main."),
    ("e07", "warning", "The docx-renderer Docker image must be built with --platform linux/amd64."),
    ("e08", "fact", "The reverse proxy in front of tilecache keeps map tiles for one hour."),
    ("e09", "fact", "The Prometheus alert HighQueueLag for mailpump fires when the lag exceeds 5000 messages."),
    ("e10", "fact", "The reportgen worker may open at most 8 database connections."),
    ("e11", "fact", "The Redis Streams consumer group for notifyd is named notifyd-workers."),
    ("e12", "fact", "The invoice-sweeper CronJob runs at 02:30 UTC."),
    ("e13", "fact", "pdf-stamper 服务的 Pod 内存上限是 512Mi。"),
    ("e14", "fact", "Prometheus 抓取 edge-proxy 的间隔设为 15 秒。"),
    ("e15", "fact", "clickstream-ingest reads from a topic with 48 partitions."),
    ("e16", "fact", "Alerts of the vaultwarden-sync job go to the #sec-oncall channel."),
    # negation
    ("n01", "decision", "用 PostgreSQL，不用 MongoDB：订单需要多行事务。"),
    ("n02", "decision", "We dropped Celery; background jobs now run on RQ."),
    ("n03", "decision", "Do not use moment.js in the web app; use date-fns instead."),
    ("n04", "decision", "We rejected GraphQL for the public API and kept REST with OpenAPI."),
    ("n05", "decision", "不要再用 Jenkins 跑夜间构建，已迁到 GitHub Actions。"),
    ("n06", "warning", "Never keep secrets in .env files committed to git; they belong in the vault."),
    ("n07", "decision", "We are not adopting Kubernetes for the edge nodes; they stay on plain systemd units."),
    ("n08", "decision", "放弃了 Elasticsearch，站内搜索改用 Meilisearch。"),
    ("n09", "decision", "From v5.0 the mobile app no longer supports Android 9 or older."),
    ("n10", "warning", "Avoid ORM lazy loading in the reporting service; it caused N+1 queries."),
    ("n11", "decision", "We decided against Redis Cluster; one Redis primary with a replica is enough."),
    ("n12", "decision", "不用 Webpack 了，前端构建统一用 Vite。"),
    ("n13", "decision", "We won't use Terraform Cloud; state stays in the S3 backend with DynamoDB locking."),
    ("n14", "preference", "I don't want emoji in commit messages."),
    # temporal
    ("t01", "fact", "2024-02: CI moved from Travis CI to GitHub Actions."),
    ("t02", "fact", "2025-06: the monorepo CI moved from GitHub Actions to Buildkite."),
    ("t03", "decision", "In March 2025 we raised the public API rate limit to 600 requests per minute."),
    ("t04", "decision", "Since the v4 release in May 2025 the iOS app requires iOS 16."),
    ("t05", "decision", "2025 年 9 月起，日志保留期从 30 天改为 90 天。"),
    ("t06", "fact", "Before the 2024 storage migration, user avatars were kept on the NFS share /mnt/avatars."),
    # xling_pull
    ("x01", "fact", "支付服务调用第三方接口失败时最多重试 5 次。"),
    ("x02", "fact", "搜索服务的索引每天凌晨 3 点全量重建。"),
    ("x03", "fact", "登录接口签发的 JWT 有效期是 15 分钟，刷新令牌 7 天。"),
    ("x04", "fact", "数据管道里失败的任务会通知到 #data-alerts 频道。"),
    ("x05", "decision", "Deploys to production are frozen every Friday after 14:00."),
    ("x06", "playbook", "Feature flags are removed within two sprints after a full rollout."),
    ("x07", "decision", "监控告警在夜间静默，P0 级别除外。"),
    ("x08", "decision", "Code reviews need two approvals for any change that touches database migrations."),
]

# Near neighbours written on purpose next to the targets (positive mentions, undated, same-language).
NEIGHBOURS = [
    ("nb01", "fact", "PostgreSQL 16 is the primary database for orders and invoices."),
    ("nb02", "fact", "MongoDB Atlas hosts the product analytics events."),
    ("nb03", "fact", "Celery beat schedules are documented in ops/schedules.md."),
    ("nb04", "fact", "The web app formats dates in the user's locale."),
    ("nb05", "fact", "GraphQL playground is enabled on the internal admin API."),
    ("nb06", "fact", "Jenkins 的构建日志保留 30 天。"),
    ("nb07", "fact", "The vault is unsealed with three of five key shares."),
    ("nb08", "fact", "Kubernetes runs every service in the main region."),
    ("nb09", "fact", "Elasticsearch 集群有 3 个节点，用于日志检索。"),
    ("nb10", "fact", "The Android app is built with Gradle 8 and targets API level 34."),
    ("nb11", "fact", "The reporting service exports CSV and PDF files."),
    ("nb12", "fact", "Redis 7 caches sessions with a 30 minute TTL."),
    ("nb13", "fact", "Webpack 的旧配置还留在 legacy/admin 目录里。"),
    ("nb14", "fact", "Terraform modules live in infra/modules and are versioned by git tags."),
    ("nb15", "preference", "Commit messages use the imperative mood and stay under 72 characters."),
    ("nb16", "fact", "GitHub Actions workflows live in .github/workflows."),
    ("nb17", "fact", "The public API rate limit for anonymous clients is 60 requests per minute."),
    ("nb18", "fact", "The iOS app uses SwiftUI for every new screen."),
    ("nb19", "fact", "Log retention for audit logs is governed by the compliance team."),
    ("nb20", "fact", "User avatars are resized to 256x256 on upload."),
    ("nb21", "fact", "The payment page shows a retry button after a card is declined."),
    ("nb22", "fact", "The search box debounces input by 300 ms before querying."),
    ("nb23", "fact", "The login page uses the shared Button component from the design system."),
    ("nb24", "fact", "The data pipeline README explains how the DAGs are laid out."),
    ("nb25", "fact", "生产环境的数据库每天凌晨做一次全量备份。"),
    ("nb26", "fact", "功能开关的管理后台在 /admin/flags。"),
    ("nb27", "fact", "Monitoring dashboards are listed on the team wiki."),
    ("nb28", "fact", "代码评审的模板在 .github/pull_request_template.md。"),
    ("nb29", "fact", "Buildkite agents run on spot instances."),
    ("nb30", "fact", "Vite dev server runs on port 5173."),
]

SERVICES = [
    "checkout",
    "api-gateway",
    "search-api",
    "auth",
    "payments",
    "inventory",
    "catalog",
    "shipping",
    "recommender",
    "notifications",
    "user-profile",
    "cart",
    "pricing",
    "reviews",
    "media",
    "analytics",
    "admin-api",
    "webhooks",
    "scheduler",
    "importer",
    "exporter-core",
    "orders",
    "ledger",
    "billing",
    "frontend-ssr",
]
COMMON = {
    "Prometheus": [
        "The {s} service exposes Prometheus metrics on port {p}.",
        "Prometheus scrapes {s} every 30 seconds.",
        "The Prometheus alert for {s} fires when the error rate passes 2%.",
        "{s} 的 Prometheus 指标在 /metrics 路径下。",
    ],
    "PostgreSQL": [
        "The {s} service stores its data in PostgreSQL.",
        "The PostgreSQL connection pool of {s} has {n} connections.",
        "{s} runs its migrations against PostgreSQL with Alembic.",
        "{s} 的 PostgreSQL 表都加了 created_at 索引。",
    ],
    "Redis": [
        "{s} caches lookups in Redis for {n} minutes.",
        "The Redis key prefix for {s} is {s}:.",
        "{s} uses Redis for distributed locks.",
        "{s} 在 Redis 里存会话数据。",
    ],
    "Kubernetes": [
        "On Kubernetes the {s} deployment runs {n} replicas.",
        "The Kubernetes memory limit of {s} is {n}00Mi.",
        "{s} has a Kubernetes HorizontalPodAutoscaler targeting 70% CPU.",
        "{s} 在 Kubernetes 上用 readinessProbe 检查 /healthz。",
    ],
    "Kafka": [
        "{s} publishes events to the Kafka topic {s}.events.",
        "The Kafka consumer of {s} commits offsets every {n} seconds.",
        "Kafka retention for {s} topics is 7 days.",
    ],
    "Grafana": [
        "The Grafana dashboard for {s} shows p95 latency and error rate.",
        "Grafana alerts for {s} go to the #{s}-alerts channel.",
        "{s} 的 Grafana 面板由 SRE 维护。",
    ],
    "Docker": [
        "The {s} Docker image is based on python:3.12-slim.",
        "The Docker build of {s} uses a multi-stage Dockerfile.",
    ],
    "nginx": [
        "nginx in front of {s} terminates TLS.",
        "nginx caches {s} responses for {n} minutes.",
    ],
}

# Batch 2 (recall2): targets and neighbours, written before any ranking was run on them.
TARGETS_2 = [
    # entity_rare
    ("e17", "fact", "The thumbnailer service exposes its metrics on port 9311."),
    ("e18", "fact", "The audit-trail writer keeps its rows in the table audit_events_v2, partitioned by month."),
    ("e19", "fact", "Session tokens of the sso-bridge expire from the cache after 45 minutes."),
    ("e20", "decision", "The pdf-indexer deployment is pinned to the nodes labelled disk=ssd."),
    ("e21", "fact", "The clickhouse-loader consumer group is named chl-main and starts from the earliest offset."),
    ("e22", "fact", "The panel for the smtp-relay queue depth sits on the mail-overview dashboard."),
    ("e23", "warning", "The ocr-worker image needs tesseract-ocr installed in the final stage."),
    ("e24", "fact", "Requests to the legacy-soap endpoint time out after 120 seconds at the proxy."),
    ("e25", "fact", "avatar-resizer 每个副本最多同时处理 4 个任务。"),
    ("e26", "fact", "The geo-events topic is compacted and keeps the latest value per key forever."),
    # negation
    ("n15", "decision", "不用 Kafka 做任务队列，异步任务统一走 RabbitMQ。"),
    ("n16", "decision", "We are not using Tailwind in the admin UI; styles stay in CSS modules."),
    ("n17", "decision", "放弃 gRPC，服务之间继续用 HTTP/JSON 调用。"),
    ("n18", "warning", "Never run database migrations from a developer laptop against production."),
    ("n19", "decision", "We dropped support for Python 3.8 in the SDK."),
    ("n20", "decision", "We stopped self-hosting GitLab and moved the repositories to GitHub."),
    ("n21", "preference", "我不想在代码里看到 print 调试语句，用 logging。"),
    ("n22", "decision", "We turned down Auth0 because of its per-user pricing; login stays on Keycloak."),
    ("n23", "decision", "没有选 Cassandra，时序数据放在 TimescaleDB。"),
    # temporal
    ("t07", "fact", "2023-11: the docs site moved from Jekyll to MkDocs."),
    ("t08", "decision", "Starting in January 2026, on-call rotations last one week instead of two."),
    # xling_pull
    ("x09", "fact", "订单导出任务每周一早上 6 点运行。"),
    ("x10", "decision", "The staging database is reset from a production snapshot every Sunday."),
    ("x11", "fact", "上传文件的大小上限是 25 MB。"),
    ("x12", "warning", "Do not rotate the signing key during business hours; tokens in flight become invalid."),
    ("x13", "fact", "客服系统的工单超过 48 小时未回复会自动升级。"),
]

NEIGHBOURS_2 = [
    ("nb31", "fact", "RabbitMQ 的管理界面在 15672 端口。"),
    ("nb32", "fact", "Tailwind is used on the marketing site."),
    ("nb33", "fact", "gRPC 的 proto 文件放在 api/proto 目录。"),
    ("nb34", "fact", "Database migrations are written with Alembic and reviewed like code."),
    ("nb35", "fact", "The SDK is tested on Python 3.9 to 3.12."),
    ("nb36", "fact", "GitLab CI templates are kept in ci/templates."),
    ("nb37", "fact", "The logging config lives in config/logging.yaml."),
    ("nb38", "fact", "Keycloak realms are exported nightly to the backup bucket."),
    ("nb39", "fact", "TimescaleDB 的压缩策略是 7 天后压缩。"),
    ("nb40", "fact", "MkDocs builds the docs with the material theme."),
    ("nb41", "fact", "The on-call schedule is kept in PagerDuty."),
    ("nb42", "fact", "The order export includes cancelled orders."),
    ("nb43", "fact", "预发布环境的地址是 staging.internal。"),
    ("nb44", "fact", "Uploaded files are scanned for viruses before they are stored."),
    ("nb45", "fact", "签名密钥保存在 KMS 里。"),
    ("nb46", "fact", "Support tickets are tagged by product area."),
]

QUERIES_2 = [
    ("q45", "entity_rare", "en", "which port does Prometheus scrape for thumbnailer", ["e17"]),
    ("q46", "entity_rare", "en", "which PostgreSQL table does audit-trail write to", ["e18"]),
    ("q47", "entity_rare", "en", "Redis TTL for sso-bridge session tokens", ["e19"]),
    ("q48", "entity_rare", "en", "Kubernetes node selector for pdf-indexer", ["e20"]),
    ("q49", "entity_rare", "en", "what Kafka consumer group does clickhouse-loader use", ["e21"]),
    ("q50", "entity_rare", "en", "which Grafana dashboard shows the smtp-relay queue depth", ["e22"]),
    ("q51", "entity_rare", "en", "what must the Docker image of ocr-worker include", ["e23"]),
    ("q52", "entity_rare", "en", "nginx timeout for legacy-soap", ["e24"]),
    ("q53", "entity_rare", "zh-Hans", "avatar-resizer 在 Kubernetes 上每个副本的并发数", ["e25"]),
    ("q54", "entity_rare", "zh-Hans", "Kafka 里 geo-events 主题的数据保留多久", ["e26"]),
    ("q55", "negation", "en", "which message broker did we decide not to use for task queues", ["n15"]),
    ("q56", "negation", "en", "which CSS framework did we rule out for the admin UI", ["n16"]),
    ("q57", "negation", "zh-Hans", "服务间通信我们不用哪种协议", ["n17"]),
    ("q58", "negation", "en", "where should migrations never be run from", ["n18"]),
    ("q59", "negation", "en", "which Python version did the SDK stop supporting", ["n19"]),
    ("q60", "negation", "en", "what did we stop self-hosting", ["n20"]),
    ("q61", "negation", "en", "what debugging habit do I not want in the code", ["n21"]),
    ("q62", "negation", "en", "which identity provider was turned down", ["n22"]),
    ("q63", "negation", "zh-Hans", "时序数据库没有选哪个", ["n23"]),
    ("q64", "temporal", "en", "what did the docs site use before MkDocs", ["t07"]),
    ("q65", "temporal", "en", "since when are on-call rotations one week long", ["t08"]),
    ("q66", "xling_pull", "en", "when does the order export job run", ["x09"]),
    ("q67", "xling_pull", "zh-Hans", "预发布环境的数据库多久重置一次", ["x10"]),
    ("q68", "xling_pull", "en", "what is the maximum upload file size", ["x11"]),
    ("q69", "xling_pull", "zh-Hans", "签名密钥可以在工作时间轮换吗", ["x12"]),
    ("q70", "xling_pull", "en", "when are unanswered support tickets escalated", ["x13"]),
]

QUERIES = [
    # (id, slice, lang, text, relevant)
    ("q01", "entity_rare", "en", "where can I scrape Prometheus stats for billing-exporter", ["e01"]),
    ("q02", "entity_rare", "en", "which PostgreSQL table holds the ledger-sync checkpoints", ["e02"]),
    ("q03", "entity_rare", "en", "what Redis key prefix does the ratelimiter use", ["e03"]),
    ("q04", "entity_rare", "en", "Kubernetes disruption budget for quartz-scheduler", ["e04"]),
    ("q05", "entity_rare", "en", "how long does Kafka keep messages for fraud-scorer", ["e05"]),
    ("q06", "entity_rare", "en", "Grafana dashboard of geo-router", ["e06"]),
    ("q07", "entity_rare", "en", "Docker build flags needed for docx-renderer", ["e07"]),
    ("q08", "entity_rare", "en", "how long does nginx cache tilecache responses", ["e08"]),
    ("q09", "entity_rare", "en", "what threshold triggers the Prometheus alert for mailpump", ["e09"]),
    ("q10", "entity_rare", "en", "reportgen PostgreSQL connection limit", ["e10"]),
    ("q11", "entity_rare", "en", "name of the Redis consumer group used by notifyd", ["e11"]),
    ("q12", "entity_rare", "en", "when does the invoice-sweeper Kubernetes job run", ["e12"]),
    ("q13", "entity_rare", "zh-Hans", "pdf-stamper 在 Kubernetes 上的内存限制", ["e13"]),
    ("q14", "entity_rare", "zh-Hans", "Prometheus 多久抓取一次 edge-proxy", ["e14"]),
    ("q15", "entity_rare", "en", "how many Kafka partitions does clickstream-ingest read", ["e15"]),
    ("q16", "entity_rare", "en", "where do Grafana alerts for vaultwarden-sync go", ["e16"]),
    ("q17", "negation", "en", "which database did we decide not to use", ["n01"]),
    ("q18", "negation", "en", "which task queue did we stop using", ["n02"]),
    ("q19", "negation", "en", "which date library is not allowed in the web app", ["n03"]),
    ("q20", "negation", "en", "what API style did we decide against for the public API", ["n04"]),
    ("q21", "negation", "en", "which CI should no longer run the nightly builds", ["n05"]),
    ("q22", "negation", "en", "where must secrets never be kept", ["n06"]),
    ("q23", "negation", "en", "where did we decide not to use Kubernetes", ["n07"]),
    ("q24", "negation", "zh-Hans", "哪个搜索引擎被放弃了", ["n08"]),
    ("q25", "negation", "en", "which Android versions are no longer supported", ["n09"]),
    ("q26", "negation", "en", "what should we avoid in the reporting service", ["n10"]),
    ("q27", "negation", "en", "which Redis setup did we reject", ["n11"]),
    ("q28", "negation", "zh-Hans", "前端不再使用哪个打包工具", ["n12"]),
    ("q29", "negation", "en", "did we decide against Terraform Cloud", ["n13"]),
    ("q30", "negation", "en", "what don't I want in commit messages", ["n14"]),
    ("q31", "temporal", "en", "which CI did we use first, before GitHub Actions", ["t01"]),
    ("q32", "temporal", "en", "what did we change about the API rate limit in March 2025", ["t03"]),
    ("q33", "temporal", "en", "since when does the iOS app require iOS 16", ["t04"]),
    ("q34", "temporal", "en", "when did log retention change to 90 days", ["t05"]),
    ("q35", "temporal", "en", "what CI does the monorepo use since 2025", ["t02"]),
    ("q36", "temporal", "en", "where were avatars stored before the storage migration", ["t06"]),
    ("q37", "xling_pull", "en", "how many times does the payment service retry a failed provider call", ["x01"]),
    ("q38", "xling_pull", "en", "when is the search index fully rebuilt", ["x02"]),
    ("q39", "xling_pull", "en", "how long is a login JWT valid", ["x03"]),
    ("q40", "xling_pull", "en", "where are failed data pipeline tasks reported", ["x04"]),
    ("q41", "xling_pull", "zh-Hans", "周五下午可以发布到生产环境吗", ["x05"]),
    ("q42", "xling_pull", "zh-Hans", "功能开关全量上线后多久要清理", ["x06"]),
    ("q43", "xling_pull", "en", "are monitoring alerts muted at night", ["x07"]),
    ("q44", "xling_pull", "zh-Hans", "改数据库迁移的代码需要几个人批准", ["x08"]),
]


def _lang(text: str) -> str:
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return "zh-Hans" if cjk > len(text) * 0.2 else ("mixed" if cjk else "en")


def main() -> None:
    rows = []
    for mid, kind, text in TARGETS + NEIGHBOURS:
        rows.append({"type": "memory", "id": mid, "lang": _lang(text), "kind": kind, "project": "en", "text": text})
    n = 0
    for _entity, templates in COMMON.items():
        for i, s in enumerate(SERVICES):
            for tpl in templates:
                n += 1
                text = tpl.format(s=s, p=9100 + i, n=3 + i % 7)
                rows.append({"type": "memory", "id": f"d{n:03d}", "lang": _lang(text), "kind": "fact", "project": "en",
                             "text": text})  # fmt: skip
    for mid, kind, text in TARGETS_2 + NEIGHBOURS_2:
        rows.append({"type": "memory", "id": mid, "lang": _lang(text), "kind": kind, "project": "en", "text": text,
                     "batch": 2})  # fmt: skip
    for qid, sl, lang, text, rel in QUERIES:
        rows.append({"type": "query", "id": qid, "slice": sl, "lang": lang, "text": text, "relevant": rel, "batch": 1})
    for qid, sl, lang, text, rel in QUERIES_2:
        rows.append({"type": "query", "id": qid, "slice": sl, "lang": lang, "text": text, "relevant": rel, "batch": 2})
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {OUT}: {sum(r['type'] == 'memory' for r in rows)} memories, {len(QUERIES) + len(QUERIES_2)} queries")


if __name__ == "__main__":
    main()
