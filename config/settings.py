"""Settings for the demonstration platform.

Everything is read from the environment through the small typed helpers below. The defaults run with no
services at all (SQLite, files under ``var/``, in-memory channel layer, Celery on a filesystem broker);
``DATABASE_URL`` and ``REDIS_URL`` switch to PostgreSQL and Redis. See README.md, "Configuration".
"""

import os
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF

from .secret_key import secret_key

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    """The variable's value, or ``default`` when unset or empty."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    """True for 1/true/yes/on (any case), False for 0/false/no/off; ``default`` when unset."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    """The variable as an integer; ``default`` when unset."""
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated variable as a list of non-empty, stripped items."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# SECRET_KEY, else var/secret_key (created by `make run`), else a development key that DEBUG alone may run with.
SECRET_KEY = secret_key(VAR_DIR)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "annotation.apps.AdminConfig",  # django.contrib.admin, staff only (annotation/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "annotation",
    "api",
    "workers",
]

MIDDLEWARE = [  # Django's, with their hooks run in the ASGI server's event loop (config/middleware.py)
    "config.middleware.SecurityMiddleware",
    "config.middleware.StaticFilesMiddleware",  # WhiteNoise, async-capable
    "config.middleware.SessionMiddleware",
    "config.middleware.CommonMiddleware",
    "config.middleware.CsrfViewMiddleware",
    "config.middleware.AuthenticationMiddleware",
    "config.middleware.MessageMiddleware",
    "config.middleware.XFrameOptionsMiddleware",
    "config.middleware.CSPMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.views.nav.roles",  # nav_roles: the header shows each link to the roles that use it
            ],
        },
    },
]

# --- Browser security (docs/security.md) -----------------------------------------------------------------------
# The app's own pages run only scripts and styles served from this origin: no inline script, style or event handler
# (a template that ever needs an inline script gives it ``nonce="{{ request.csp_nonce }}"``). Views that serve
# recorded pages or blobs set their own, stricter policy, which the middleware leaves alone. ``connect-src 'self'``
# covers this origin's WebSocket (ws/wss) as well.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "frame-src": [SELF],
        "frame-ancestors": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
    }
}
# Behind TLS (a proxy terminating HTTPS): cookies only over HTTPS, HSTS, and how to tell the request was secure.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SESSION_COOKIE_SECURE)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    # Only behind a proxy that sets X-Forwarded-Proto itself (and strips it from clients' requests).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Reverse proxies whose X-Forwarded-For (the client's address: sign-in throttling) and X-Forwarded-Proto the server
# believes: addresses or networks (``10.0.0.0/8``), comma-separated. None by default: the client is the connection's
# peer, whatever headers it sends (config/asgi.py; uvicorn's own forwarded-header handling is off, config/server.py).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", [])
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --- Database -------------------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 600)
    # IMMEDIATE transactions + WAL let the ASGI server and the Celery worker write concurrently without
    # "database is locked" errors on the embedded default.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Parameters bound by the server, and a statement a connection runs DB_PREPARE_THRESHOLD times prepared: planning
    # was half of PostgreSQL's time for an upload's statements (docs/notes.md). Django turns preparing
    # off unless asked; 0 keeps it off (a pooler in transaction mode that does not track prepared statements).
    prepare_threshold = env_int("DB_PREPARE_THRESHOLD", 5)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=prepare_threshold if prepare_threshold > 0 else None
    )
# The ASGI server's threads for requests' sync work (config/handler.py); 0 starts a thread per request as Django does.
REQUEST_THREADS = env_int("REQUEST_THREADS", 8)
# A pool of PostgreSQL connections per process (Django's psycopg pool), for the ASGI server: config/asgi.py turns
# it on. Without it every request opens a connection (and the body guard's credential check another): a backend
# process forked and warmed for a dozen queries, a fifth of the server's CPU per recorder upload
# (docs/notes.md).
# Workers and commands keep plain connections (a prefork worker must not inherit its parent's pool). DB_POOL_SIZE:
# connections per process at most.
DB_POOL_SIZE = env_int("DB_POOL_SIZE", 0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_SIZE > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # pooled connections go back to the pool after each request
    pool = {"min_size": 1, "max_size": DB_POOL_SIZE, "timeout": env_int("DB_POOL_TIMEOUT", 60)}
    # pg_stat_activity names the process that holds each pooled connection
    DATABASES["default"].setdefault("OPTIONS", {}).update(pool=pool, application_name=f"webdemos-server-{os.getpid()}")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Channels layer, Celery broker, cache -----------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # socket_timeout above channels_redis' 5 s blocking read (redis-py's default is also 5 s: an idle socket's
    # receive then times out, its consumer crashes and the client has to reconnect every few seconds).
    REDIS_LAYER_HOST = {"address": REDIS_URL, "socket_timeout": 30}
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_LAYER_HOST]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds small shared state (the live session's clock offset, the review page's enqueue guard): in Redis
# when configured, so every server process sees the same values; per process otherwise. Never ``cache.clear()``:
# on Redis that would flush the broker's and the channel layer's keys too.
CACHE_KEY_PREFIX = env_str("CACHE_KEY_PREFIX", "webdemos")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CACHE_KEY_PREFIX,
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "KEY_PREFIX": CACHE_KEY_PREFIX}
    )
}

BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        # The embedded broker: producer and worker share one folder of message files.
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem://")
    else {
        # A message taken by a worker that then vanished (machine lost, SIGKILL) is handed out again after this
        # long; it must exceed the longest task, or a task still running gets a second delivery (which the job rows
        # make harmless, but wasteful). Swept every quarter of it.
        "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
        "unacked_restore_interval": max(1, min(10, CELERY_VISIBILITY_TIMEOUT // 4)),
        "unacked_restore_throttle": 1 if CELERY_VISIBILITY_TIMEOUT < 600 else 10,
    }
)
if CELERY_BROKER_URL.startswith("filesystem://"):
    for folder in CELERY_BROKER_TRANSPORT_OPTIONS.values():
        if isinstance(folder, str):
            Path(folder).mkdir(parents=True, exist_ok=True)
# Separate queues let several platforms share one Redis (e.g. test runs next to each other).
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "celery")
# Background work is recorded in database rows (ExportJob, ...), never in Celery results.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
# A task whose worker process died (killed, out of memory) goes back to the queue instead of being acknowledged; the
# job rows make a second delivery harmless (a job runs only from queued; thumbnails and re-alignment are idempotent).
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Files ----------------------------------------------------------------------------------------------
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# The live session's protocol client is one file, shared by the extension's side panel and the session pages
# (/static/recorder_lib/live.js); nothing else of the extension is served.
STATIC_SHARED_FILES = [("recorder_lib", BASE_DIR / "recorder_extension" / "lib", ["live.js"])]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "config.staticfiles.SharedFilesFinder",
]

AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
# Exports are uploaded to S3 as they are archived, in parts of this size (S3's minimum is 5 MiB); at most
# S3_UPLOAD_CONCURRENCY parts are in flight, so a worker holds about their product in memory (docs/deployment.md).
S3_PART_BYTES = max(5, env_int("S3_PART_MB", 16)) * 1024 * 1024
S3_UPLOAD_CONCURRENCY = max(1, env_int("S3_UPLOAD_CONCURRENCY", 4))
# Export downloads from S3: streamed through the server (default, Range included), or a redirect to a presigned
# URL valid for AWS_QUERYSTRING_EXPIRE seconds, which the client then reads from S3 directly.
S3_DOWNLOAD_REDIRECT = env_bool("S3_DOWNLOAD_REDIRECT", False)
if AWS_STORAGE_BUCKET_NAME:
    # S3-compatible storage for blobs, thumbnails and exports; credentials come from the usual AWS_* variables.
    AWS_S3_ENDPOINT_URL = env_str("AWS_S3_ENDPOINT_URL") or None
    AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME") or None
    # Path-style addressing unless told otherwise: S3-compatible servers (SeaweedFS, MinIO) rarely have bucket DNS.
    AWS_S3_ADDRESSING_STYLE = env_str("AWS_S3_ADDRESSING_STYLE", "path" if AWS_S3_ENDPOINT_URL else "auto")
    AWS_S3_SIGNATURE_VERSION = "s3v4"
    AWS_QUERYSTRING_EXPIRE = env_int("AWS_QUERYSTRING_EXPIRE", 300)
    AWS_DEFAULT_ACL = None
    AWS_S3_FILE_OVERWRITE = True
    DEFAULT_STORAGE = {"BACKEND": "storages.backends.s3.S3Storage"}
else:
    # Blob names are content addresses, so overwriting a name rewrites the same bytes.
    DEFAULT_STORAGE = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "allow_overwrite": True},
    }
STORAGES = {
    "default": DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if env_bool("STATIC_COMPRESS", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

# --- Ingest limits (see README "Configuration") ------------------------------------------------------------
INGEST_MAX_BATCH_BYTES = env_int("INGEST_MAX_BATCH_BYTES", 16 * 1024 * 1024)
INGEST_MAX_BATCH_TURNS = env_int("INGEST_MAX_BATCH_TURNS", 1000)
INGEST_MAX_BLOB_BYTES = env_int("INGEST_MAX_BLOB_BYTES", 64 * 1024 * 1024)
# Step mode's raw dump (docs/recorder.md#raw-dump): a step's HAR and DOM snapshot blobs; 413 naming the setting.
INGEST_MAX_HAR_BYTES = env_int("INGEST_MAX_HAR_BYTES", 32 * 1024 * 1024)
INGEST_MAX_DOM_SNAPSHOT_BYTES = env_int("INGEST_MAX_DOM_SNAPSHOT_BYTES", 16 * 1024 * 1024)
# Local storage: a new blob's file and its folder entry are flushed to disk (fsync) before its row commits, so a
# power loss cannot leave a stored row naming a missing or partial file (docs/ingest.md). Off: the OS writes them back
# within seconds, and a crash in that window can lose blobs the database says it has.
BLOB_FSYNC = env_bool("BLOB_FSYNC", True)
# A batch upload (blobs + turns, POST /api/recordings/<name>/batch/): its body as sent and once gunzipped.
INGEST_MAX_UPLOAD_BYTES = env_int("INGEST_MAX_UPLOAD_BYTES", 64 * 1024 * 1024)
# A released benchmark uploaded for import (POST /api/projects/<name>/imports/), as sent and once unpacked.
IMPORT_MAX_UPLOAD_BYTES = env_int("IMPORT_MAX_UPLOAD_BYTES", 2 * 1024**3)
IMPORT_MAX_UNPACKED_BYTES = env_int("IMPORT_MAX_UNPACKED_BYTES", 8 * 1024**3)
# Images (screenshots) whose header declares more pixels are refused before decoding (decompression bombs); the
# same limit is Pillow's everywhere else an image is decoded (thumbnails, re-alignment).
INGEST_MAX_IMAGE_PIXELS = env_int("INGEST_MAX_IMAGE_PIXELS", 40_000_000)
# Django refuses to read larger bodies into memory; the ingest views stream and check their own limits.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(INGEST_MAX_BATCH_BYTES, 2_621_440)

# --- Form tasks (Turkle-compatible batches; see docs/form-tasks.md) ------------------------------------------
FORM_TEMPLATE_MAX_BYTES = env_int("FORM_TEMPLATE_MAX_BYTES", 512 * 1024)  # klxu03/turkle's limit (upstream: 64 KB)
FORM_CSV_MAX_BYTES = env_int("FORM_CSV_MAX_BYTES", 50 * 1024 * 1024)
# CSV rows of one form batch upload on SQLite, whose one write lock a batch's import holds (docs/limits.md)
FORM_SQLITE_MAX_ROWS = env_int("FORM_SQLITE_MAX_ROWS", 100_000)
# Where task frames may load scripts, styles, images, fonts, media and frames from besides their own server ('self':
# the vendored template libraries under /static/vendor/); space-separated CSP sources. Empty (the default): nothing
# else, so no request of a task page leaves for another server. Each source widens it (docs/security.md: the risk).
FORM_TASK_ASSET_SOURCES = env_str("FORM_TASK_ASSET_SOURCES", "")
# Templates' CDN scripts and styles (jQuery, Bootstrap, ...): "vendored" serves the mapped ones from the pinned
# copies in static/vendor/ (agents/vendor.py), "original" leaves the CDN URLs (a deployment with Internet access).
TEMPLATE_SCRIPTS = env_str("TEMPLATE_SCRIPTS", "vendored")
# `predict` (WebLINX / Mind2Web predictions from a model endpoint): requests in flight at once, unless a run says.
PREDICT_IN_FLIGHT = env_int("PREDICT_IN_FLIGHT", 4)
# Model endpoints (docs/agents.md) may point at loopback, private (RFC 1918, ULA), link-local and other non-global
# addresses only when this is on (a model server on the same host or network): off, a URL whose host is or resolves to
# one is refused when saved, and a run refuses to connect to one (the address actually connected to is checked).
MODEL_ENDPOINTS_ALLOW_PRIVATE = env_bool("MODEL_ENDPOINTS_ALLOW_PRIVATE", False)
# How long a signed preview URL (what agents and previews load) stays valid.
FORM_PREVIEW_TOKEN_MAX_AGE_SECONDS = env_int("FORM_PREVIEW_TOKEN_MAX_AGE_SECONDS", 24 * 3600)
# How often Celery beat marks assignments past their allotted time as expired.
FORM_EXPIRY_SWEEP_SECONDS = env_int("FORM_EXPIRY_SWEEP_SECONDS", 60)
# How often beat approves submitted form work left unreviewed past its batch's delay (docs/quality.md).
FORM_AUTO_APPROVE_SWEEP_SECONDS = env_int("FORM_AUTO_APPROVE_SWEEP_SECONDS", 300)
# How long a decision on form work (approve, reject, reopen, automatic approval) can be undone (docs/quality.md).
FORM_DECISION_UNDO_MINUTES = env_int("FORM_DECISION_UNDO_MINUTES", 1440)
# The most fields one submission of a form task may hold (the largest real TurkingBench task has 75).
FORM_ANSWER_FIELDS_MAX = env_int("FORM_ANSWER_FIELDS_MAX", 300)
REVIEW_CLAIM_SECONDS = env_int("REVIEW_CLAIM_SECONDS", 30 * 60)  # the hold on a demo its reviewer works on
REVIEW_OPEN_SECONDS = env_int("REVIEW_OPEN_SECONDS", 120)  # the hold on a demo "Review next" opened, not yet acted on
# Submit & next (accept the batch's next task after a submission) is on unless the worker switches it off.
FORM_AUTO_ACCEPT_DEFAULT = env_bool("FORM_AUTO_ACCEPT_DEFAULT", True)

# Mind2Web collection (docs/mind2web.md). Seed-task generation is off unless an OpenAI-compatible base URL is set.
SEED_TASKS_LLM_URL = env_str("SEED_TASKS_LLM_URL")
SEED_TASKS_LLM_MODEL = env_str("SEED_TASKS_LLM_MODEL", "gpt-4o-mini")
SEED_TASKS_LLM_KEY = env_str("SEED_TASKS_LLM_KEY")
SEED_TASKS_LLM_TIMEOUT_SECONDS = env_int("SEED_TASKS_LLM_TIMEOUT_SECONDS", 120)
SEED_TASKS_PER_WEBSITE = env_int("SEED_TASKS_PER_WEBSITE", 50)

# --- Background jobs ------------------------------------------------------------------------------------------
# A running job whose worker has not reported for this long is marked failed (its worker was killed or crashed).
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 120)
EXPORT_TMP_DIR = Path(env_str("EXPORT_TMP_DIR", str(VAR_DIR / "tmp" / "exports")))
# How often Celery beat sweeps EXPORT_TMP_DIR: work folders of jobs no longer running (a killed worker never ran its
# cleanup) are removed, after stale jobs are reaped.
EXPORT_SWEEP_SECONDS = env_int("EXPORT_SWEEP_SECONDS", 300)
# Agent runs (docs/agents.md): python:module:Class solvers the API may start, by module prefix (the code must be
# installed on the workers). `manage.py run_agent` may load any module.
AGENT_SOLVER_MODULES = env_list("AGENT_SOLVER_MODULES", ["agents"])
# Bounds of an agent run's work in its browsers: a field's actions (from its first; the model's answer not counted),
# a whole instance (page load to scores, the model's answer included: its browser is ended past it), and the
# longest text typed into a field. A real template's field takes a second or two, an instance well under a minute.
AGENT_FIELD_SECONDS = env_int("AGENT_FIELD_SECONDS", 60)
AGENT_INSTANCE_SECONDS = env_int("AGENT_INSTANCE_SECONDS", 600)
AGENT_TEXT_MAX_CHARS = env_int("AGENT_TEXT_MAX_CHARS", 200_000)
# Every periodic task, in one place (`make run` starts beat beside the worker).
CELERY_BEAT_SCHEDULE = {
    "sweep-export-folders": {"task": "workers.sweep_export_folders", "schedule": EXPORT_SWEEP_SECONDS},
    # blob files staged by a server process killed mid-batch (annotation/actions/recordings/staging.py); hourly is
    # enough
    "sweep-staged-blobs": {"task": "workers.sweep_staged_blobs", "schedule": 3600.0},
    "expire-form-assignments": {"task": "workers.expire_assignments", "schedule": float(FORM_EXPIRY_SWEEP_SECONDS)},
    "auto-approve-form-work": {
        "task": "workers.auto_approve_assignments",
        "schedule": float(FORM_AUTO_APPROVE_SWEEP_SECONDS),
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Auth and API -----------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in throttling (annotation/actions/manage/signin.py): failures per username and address within the window → 429.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 300)
# Mail: only password reset sends any. Off unless configured: EMAIL_HOST (SMTP, with EMAIL_PORT, EMAIL_HOST_USER,
# EMAIL_HOST_PASSWORD, EMAIL_USE_TLS / EMAIL_USE_SSL) or an explicit EMAIL_BACKEND. Without mail the password-reset
# pages answer 404 and the sign-in page offers no link (annotation/views/manage/signin.py).
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "webdemos@localhost")
PASSWORD_RESET_ENABLED = bool(env_str("EMAIL_BACKEND") or env_str("EMAIL_HOST"))
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if PASSWORD_RESET_ENABLED
    else "django.core.mail.backends.dummy.EmailBackend",
)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.LimitedJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["api.filters.CheckedFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 50),
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Web demonstration platform API",
    "DESCRIPTION": "Recording ingest for the recorder extension, and the researcher API.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "DemoStatusEnum": "annotation.models.recordings.DemoStatus",
        "JobStatusEnum": "annotation.models.exports.JobStatus",
        "AssignmentStatusEnum": "annotation.models.forms.AssignmentStatus",
        "ProposalStatusEnum": "annotation.models.mind2web.ProposalStatus",
        "DecisionKindEnum": "annotation.models.quality.DecisionKind",
        "KindEnum": "annotation.models.forms.BatchKind",  # the name it had before the trail's kind came
    },
}

# --- Live session (annotation/views/live_socket.py) ---------------------------------------------------------------
# WebSocket origins besides ALLOWED_HOSTS: the recorder extension's side panel (chrome-extension://<id>).
LIVE_EXTENSION_IDS = env_list("LIVE_EXTENSION_IDS", ["ojofndafcmbnamgfemifimjhmebbdglk"])
LIVE_JOIN_TIMEOUT_SECONDS = env_int("LIVE_JOIN_TIMEOUT_SECONDS", 10)  # socket closed (4401) without a join message
# A joined socket's access is checked again before a relay when its last check is older than this (every write
# checks at once; a grant's end also tells the socket): the most a change that sent no event can go unseen.
LIVE_ACCESS_RECHECK_SECONDS = env_int("LIVE_ACCESS_RECHECK_SECONDS", 15)
LIVE_INVITE_MAX_AGE_SECONDS = env_int("LIVE_INVITE_MAX_AGE_SECONDS", 7 * 24 * 3600)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Every record goes out with capability tokens redacted, and an ordinary refusal (a 4xx) as one line without its
# traceback (config/logs.py; uvicorn's own request lines are redacted by config/asgi.py).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {
        "blob_probes": {"()": "django.utils.log.CallbackFilter", "callback": "ext://api.log_filters.not_a_blob_probe"},
        "one_line_refusals": {"()": "config.logs.OneLineRefusals"},
        "redact_tokens": {"()": "config.logs.RedactTokens"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["one_line_refusals", "redact_tokens"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "django.request": {"filters": ["blob_probes"]}},
}
