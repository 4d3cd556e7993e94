"""Entities a memory mentions: libraries/technologies, files, functions and people.

Rules, applied to the text as written (Chinese with or without spaces, English, mixed). All
boundaries are ASCII, so a CJK character ends a name just as a space does ("用PostgreSQL 16做"):

- file: a path-like token ending in a known extension (``login.py``, ``src/app/main.ts``,
  ``docker-compose.yml``), a dotfile (``.env``, ``.github/workflows/ci.yml``) or a well-known
  extension-less name (``Makefile``, ``Dockerfile`` …); kept as written. A token that is a
  lexicon name (``Node.js``, ``Next.js``) is a library, not a file.
- function: an identifier followed by ``(…)`` (``get_session()``, ``Engine.recall()``). With
  arguments, the name must look like code (``_``, ``.`` or camelCase) so prose such as
  "file(s)" is skipped. Also a backticked snake_case / camelCase / ``Class.method`` identifier.
- library: a built-in lexicon matched case-insensitively and mapped to canonical casing and
  aliases (Postgres → PostgreSQL, k8s → Kubernetes, golang → Go). Names that are ordinary
  English words (Go, Solid, React, Rust, Swift, Express, Flask, Spring …, marked ``=``) must be
  written with their canonical casing. At the start of an English sentence they also need a
  version number or Chinese text right after them, so "Go to the page" is not Go. Version pins
  (``numpy==1.26``, ``django>=4.2``, ``numpy<2``, ``react@18``) are libraries too.
- person: an ``@handle`` (not a decorator, npm scope or e-mail), or a name next to a speech or
  preference cue: "Alice said/prefers/decided …", "ask/ping/cc Bob", "according to Carol",
  "reviewed by Dan", "abble 偏好/说/认为/决定 …". A lower-case handle needs a Chinese cue or
  must open the text. Lexicon names, roles (PM, user, team …), months and days are never people.

Files, functions and pins are found first and masked, so ``docker-compose.yml`` or
``requests.get()`` do not also yield a library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KINDS", "Entity", "extract_entities"]

KINDS = ("library", "file", "function", "person")

# One technology per line: canonical name first, then aliases. "=" marks a form that must be
# written exactly so (an ordinary English word); "~" additionally guards it at sentence start.
LEXICON = """
PostgreSQL|Postgres|PostgresQL
MySQL
SQLite|sqlite3
MongoDB|Mongo
Redis
MariaDB
Cassandra
DynamoDB
ClickHouse
DuckDB
Elasticsearch
OpenSearch
Meilisearch
Typesense
Neo4j
CockroachDB
InfluxDB
TimescaleDB
Memcached
Supabase
Firebase
BigQuery
=Snowflake
SQL Server|MSSQL
etcd
ZooKeeper
Qdrant
pgvector
Milvus
FAISS
Python|python3
TypeScript
JavaScript
=Java
Kotlin
Scala
=C#
=C++
~Go|golang
=Rust
=Ruby
PHP
=Swift
Elixir
Erlang
Haskell
Lua
=Zig
=Dart
Bash
WebAssembly|Wasm
Node.js|NodeJS|=Node
Deno
=Bun
~React|ReactJS|React.js
React Native
Vue|Vue.js|VueJS
Angular
Svelte
SvelteKit
~Solid|SolidJS|Solid.js
Next.js|NextJS
Nuxt|Nuxt.js
~Remix
=Astro
jQuery
Tailwind CSS|TailwindCSS|Tailwind
~Bootstrap
Redux
Zustand
Vite
webpack
esbuild
~Rollup
Turborepo
Storybook
htmx
Alpine.js
Lodash
Moment.js
date-fns
Axios
Zod
tRPC
Electron
Tauri
Flutter
SwiftUI
Three.js
Django
FastAPI
=Flask
Starlette
Pydantic
SQLAlchemy
Alembic
=Celery
=RQ
Dramatiq
~Express|Express.js
NestJS
Spring Boot
~Spring
=Rails|Ruby on Rails
Laravel
=Gin
Actix
Axum
Tokio
serde
gRPC
GraphQL
Protobuf|Protocol Buffers
uvicorn
gunicorn
httpx
aiohttp
Prisma
TypeORM
Sequelize
=Drizzle
Hibernate
numpy
pandas
=Polars
SciPy
scikit-learn|sklearn
PyTorch|torch
TensorFlow
=JAX
Hugging Face|HuggingFace
LangChain
LlamaIndex
Matplotlib
Jupyter
MLflow
Streamlit
Gradio
Apache Spark|PySpark|=Spark
Airflow
Dask
Kafka|Apache Kafka
RabbitMQ
ONNX
OpenCV
spaCy
OpenCC
pytest
unittest
=Jest
Vitest
=Mocha
Cypress
Playwright
Selenium
Puppeteer
tox
Ruff
mypy
Pyright
Flake8
pylint
isort
ESLint
Prettier
pre-commit
pip
virtualenv
=Poetry
=uv
npm
pnpm
=Yarn
=Cargo
Conda|Anaconda
Homebrew
Maven
Gradle
Bazel
CMake
setuptools
Docker
Docker Compose|docker-compose|docker compose
Kubernetes|k8s
=Helm
Terraform
Ansible
Pulumi
Podman
Nginx
Caddy
Traefik
Istio
=Vault
AWS
GCP|Google Cloud
Azure
Vercel
Netlify
Heroku
Cloudflare
AWS Lambda
=S3
=EC2
Linux
macOS|OS X
=Windows
Ubuntu
Debian
Git
GitHub
GitLab
GitHub Actions|=GHA
GitLab CI
Jenkins
CircleCI
Travis CI|=Travis
Sentry
Grafana
Prometheus
Datadog
OpenTelemetry
OpenSSL
CUDA
systemd
VS Code|VSCode
Xcode
Neovim
Auth0
Keycloak
OpenAI
Ollama
llama.cpp
"""

FILE_EXTENSIONS = (
    "py pyi ipynb js mjs cjs jsx ts tsx vue svelte json jsonl yml yaml toml ini cfg conf env lock "
    "md mdx rst txt csv tsv sql sh bash zsh ps1 bat go rs java kt kts scala rb php c h cc cpp hpp "
    "cs swift dart lua ex exs erl hs zig html htm css scss sass less xml proto graphql gql tf "
    "tfvars hcl gradle properties log pem crt db sqlite sqlite3 parquet wasm patch diff j2 jinja "
    "tpl mk cmake nix bzl mod sum service plist"
).split()
BARE_FILES = (
    "Makefile Dockerfile Containerfile Justfile Procfile Gemfile Rakefile Vagrantfile Jenkinsfile CODEOWNERS"
).split()

# Said/preferred/decided … after a name, in English and in Chinese (both scripts).
PERSON_AFTER_EN = (
    "said|says|prefers|prefer|wants|thinks|decided|suggested|mentioned|likes|asked|recommends|"
    "recommended|approved|owns|maintains|insisted|noted|reported|requested|confirmed|agreed"
)
PERSON_AFTER_ZH = "說|说|偏好|認為|认为|決定|决定|喜歡|喜欢|建議|建议|提到|覺得|觉得|習慣|习惯|想要"
PERSON_BEFORE_EN = (
    "ask|ping|cc|tell|thank|thanks|contact|according to|talk to|check with|confirm with|"
    "owned by|reviewed by|written by|approved by|reported by|requested by|suggested by|"
    "maintained by|assigned to"
)
NOT_PERSON = set(
    """the this that these those it he she they we i you everyone someone somebody nobody anyone
    user users team client clients customer customers boss lead leader manager owner reviewer
    maintainer maintainers admin docs doc documentation readme spec issue bug code test tests log
    error upstream management product design security legal support ops devops backend frontend
    worker workers service server module function script job api endpoint scheduler handler
    process thread agent bot model system library framework tool
    here channel all everyone property staticmethod classmethod dataclass override abstractmethod
    cached_property lru_cache cache wraps contextmanager pytest fixture app router component
    injectable input output media import apply layer keyframes tailwind types latest next
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


@dataclass(frozen=True)
class Entity:
    kind: str
    name: str

    @property
    def id(self) -> str:
        return f"entity:{self.kind}:{self.name}"


@dataclass(frozen=True)
class _Form:
    canonical: str
    exact: str | None  # the only accepted spelling, for ordinary-word names
    guarded: bool  # also rejected at sentence start unless a version or CJK follows


def _load_lexicon() -> tuple[dict[str, _Form], re.Pattern[str]]:
    forms: dict[str, _Form] = {}
    for line in LEXICON.strip().splitlines():
        names = line.split("|")
        canonical = names[0].lstrip("=~")
        for form in names:
            bare = form.lstrip("=~")
            exact = bare if form[0] in "=~" else None
            forms[bare.lower()] = _Form(canonical, exact, form[0] == "~")
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_\-./@$])(?:{alternatives})(?![A-Za-z0-9_+#\-]|\.[A-Za-z0-9])", re.I)
    return forms, pattern


_FORMS, _LIBRARY = _load_lexicon()

_FILE = re.compile(
    r"(?<![A-Za-z0-9_\-./~@$])"
    r"((?:~/|\.{1,2}/|/)?(?:[A-Za-z0-9_\-.@]+/)*"
    rf"(?:[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*\.(?:{'|'.join(FILE_EXTENSIONS)})"
    r"|(?-i:\.[a-z][a-z0-9_\-]*(?:\.[a-z0-9_\-]+)*)"
    rf"|(?-i:{'|'.join(BARE_FILES)})))"
    r"(?![A-Za-z0-9_\-/(]|\.[A-Za-z0-9])",
    re.I,
)
_CALL = re.compile(rf"(?<![A-Za-z0-9_.$@])({_IDENT}(?:\.{_IDENT})*)\(([^()\n]{{0,60}})\)")
_BACKTICK = re.compile(rf"`({_IDENT}(?:\.{_IDENT})*)`")
_PIN = re.compile(r"(?<![A-Za-z0-9_\-./@])([A-Za-z][A-Za-z0-9_.\-]*?)(?:\[[\w,]+\])?(?:==|>=|<=|~=|!=|<|>|@\^?~?)\d")
# Not an e-mail, an npm scope (@types/node) or a decorator (@pytest.fixture, @app.get(…)).
_HANDLE = re.compile(r"(?<![A-Za-z0-9_.@])@([A-Za-z][A-Za-z0-9_\-]{1,38})(?![A-Za-z0-9_\-]*(?:[/(@]|\.[A-Za-z]))")
_NAME = r"[A-Z][a-z]+(?: [A-Z][a-z]+)?"
_PERSON_AFTER = re.compile(rf"(?<![A-Za-z0-9_\-])({_NAME})(?= (?:{PERSON_AFTER_EN})\b)")
_HANDLE_AFTER_EN = re.compile(rf"^\s*([a-z][a-z0-9_\-]{{2,30}})(?= (?:{PERSON_AFTER_EN})\b)")
_HANDLE_AFTER_ZH = re.compile(rf"(?<![A-Za-z0-9_\-.@])([A-Za-z][A-Za-z0-9_\-]{{1,30}})\s*(?={PERSON_AFTER_ZH})")
_PERSON_BEFORE = re.compile(rf"(?i:\b(?:{PERSON_BEFORE_EN})) ({_NAME})\b")
_SENTENCE_START = re.compile(r"(?:^\s*|[.!?:;]\s+|\n\s*(?:[-*]\s+)?)$")
_FOLLOWED_BY_VERSION_OR_CJK = re.compile(rf"\s*(?:v?\d|[{_CJK}])")


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)


def _looks_like_code(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    camel = re.search(r"[a-z][A-Z]", last) is not None
    snake = "_" in last.strip("_") and any(c.islower() for c in last)
    return camel or snake or ("." in name and name[0].isupper() and last[:1].islower())


def _library(found: str, text: str, start: int) -> str | None:
    form = _FORMS[found.lower()]
    if form.exact is not None and found != form.exact:
        return None
    # An ordinary English word opening a sentence ("Go to …", "React quickly …").
    if form.guarded and _SENTENCE_START.search(text[:start]):
        if not _FOLLOWED_BY_VERSION_OR_CJK.match(text, start + len(found)):
            return None
    return form.canonical


def _person(name: str) -> bool:
    if name.isupper() and len(name) <= 5:  # PM, QA, CTO: roles, not people
        return False
    return all(w.lower() not in NOT_PERSON and w.lower() not in _FORMS for w in name.split())


def _code_entities(text: str, found: list[tuple[int, Entity]]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for m in _FILE.finditer(text):
        if m.group(1).lower() in _FORMS:
            continue
        found.append((m.start(), Entity("file", m.group(1))))
        spans.append(m.span())
    masked = _mask(text, spans)
    for m in _CALL.finditer(masked):
        name, args = m.group(1), m.group(2)
        if name.lower() in _FORMS or not (args == "" or _looks_like_code(name) or "." in name):
            continue
        found.append((m.start(), Entity("function", name)))
        spans.append(m.span())
    for m in _BACKTICK.finditer(masked):
        if m.group(1).lower() not in _FORMS and _looks_like_code(m.group(1)):
            found.append((m.start(1), Entity("function", m.group(1))))
            spans.append(m.span())
    for m in _PIN.finditer(_mask(text, spans)):
        name = m.group(1)
        form = _FORMS.get(name.lower())
        found.append((m.start(), Entity("library", form.canonical if form else name)))
        spans.append(m.span(1))
    return spans


def _people(text: str, found: list[tuple[int, Entity]]) -> None:
    for pattern in (_HANDLE, _PERSON_AFTER, _HANDLE_AFTER_EN, _HANDLE_AFTER_ZH, _PERSON_BEFORE):
        for m in pattern.finditer(text):
            if _person(m.group(1)):
                found.append((m.start(1), Entity("person", m.group(1))))


def extract_entities(text: str) -> list[Entity]:
    """Entities in order of first appearance, each once."""
    found: list[tuple[int, Entity]] = []
    masked = _mask(text, _code_entities(text, found))
    _people(masked, found)
    person_spans = {pos for pos, e in found if e.kind == "person"}
    for m in _LIBRARY.finditer(masked):
        name = _library(m.group(), masked, m.start())
        if name and m.start() not in person_spans:
            found.append((m.start(), Entity("library", name)))
    out: dict[str, Entity] = {}
    for _, entity in sorted(found, key=lambda pair: pair[0]):
        out.setdefault(entity.id, entity)
    return list(out.values())
