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
    "checkout", "api-gateway", "search-api", "auth", "payments", "inventory", "catalog", "shipping", "recommender",
    "notifications", "user-profile", "cart", "pricing", "reviews", "media", "analytics", "admin-api", "webhooks",
    "scheduler", "importer", "exporter-core", "orders", "ledger", "billing", "frontend-ssr",
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
    for qid, sl, lang, text, rel in QUERIES:
        rows.append({"type": "query", "id": qid, "slice": sl, "lang": lang, "text": text, "relevant": rel})
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {OUT}: {sum(r['type'] == 'memory' for r in rows)} memories, {len(QUERIES)} queries")


if __name__ == "__main__":
    main()
