"""Opgrade settings, read from the environment.

Development is the default so that the quick start needs no variables: DEBUG on, a SQLite
file in var/, Redis on localhost, and development-only secrets that are refused the moment
DEBUG is off. Production sets OPGRADE_DEBUG=0 and must then provide SECRET_KEY and
OPGRADE_ENCRYPTION_KEYS; `manage.py check --deploy` passes with no warnings.
Every variable is listed in the README's configuration table.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from config.env import database_from_url, env_bool, env_int, env_list, env_networks, env_str, redis_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("OPGRADE_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("OPGRADE_DEBUG", True)

# --- secrets ---------------------------------------------------------------------------
_DEV_SECRET_KEY = "dev-only-insecure-opgrade-key-0123456789-abcdefghijklmnopqrstuvwxyz"  # noqa: S105
SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when OPGRADE_DEBUG is off")
    SECRET_KEY = _DEV_SECRET_KEY

# Fernet keys for credentials at rest, newest first; older keys still decrypt (MultiFernet).
_DEV_ENCRYPTION_KEY = "paCsoWzOvC18iJ5NrWj_wjCifIvVKLX7zxfsqtfrrgU="
OPGRADE_ENCRYPTION_KEYS = env_list("OPGRADE_ENCRYPTION_KEYS", [])
if not OPGRADE_ENCRYPTION_KEYS:
    if not DEBUG:
        raise ImproperlyConfigured("OPGRADE_ENCRYPTION_KEYS must be set when OPGRADE_DEBUG is off")
    OPGRADE_ENCRYPTION_KEYS = [_DEV_ENCRYPTION_KEY]
for _index, _key in enumerate(OPGRADE_ENCRYPTION_KEYS):
    try:
        Fernet(_key)
    except (ValueError, TypeError):
        raise ImproperlyConfigured(
            f"OPGRADE_ENCRYPTION_KEYS entry {_index + 1} is not a valid Fernet key "
            "(32 url-safe base64-encoded bytes; make one with `manage.py shell -c "
            '"from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`)'
        ) from None

# Key for pseudonymising customer organisations (HMAC-SHA256). Rotating it re-keys hashes.
OPGRADE_PSEUDONYM_KEY = env_str("OPGRADE_PSEUDONYM_KEY") or ""
if not OPGRADE_PSEUDONYM_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("OPGRADE_PSEUDONYM_KEY must be set when OPGRADE_DEBUG is off")
    OPGRADE_PSEUDONYM_KEY = "dev-only-pseudonym-key"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- applications ------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI from our own static files, never a CDN
    "axes",  # login lockout for the admin, the portal and the browsable API's login
    "django_celery_beat",
    "simple_history",
    "rubric",
    "providers",
    "ratings",
    "reviews",
    "probes",
    "costs",  # issue 16: prices, availability, cost per useful Mtok (above ratings)
    "grades",  # issue 17: grade definitions, eligibility, price references (above costs)
    "reports",
    "workbench",  # the analysts' cycle workbench: reads every app, imported by none
    "quickstart",  # last: the demo orchestrator (see quickstart/models.py for why it has one)
]

MIDDLEWARE = [
    "config.middleware.ApiJsonErrorsMiddleware",  # outermost: API error pages are JSON, even under DEBUG
    "config.middleware.DatabaseUnavailableMiddleware",  # PostgreSQL away: 503 + Retry-After, not 500
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "config.middleware.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]

# --- login lockout (django-axes) -------------------------------------------------------------
# Failed sign-ins are counted per (username, client address) in the database, so the count
# holds across web processes. After OPGRADE_LOGIN_FAILURE_LIMIT failures that pair is
# locked out for OPGRADE_LOGIN_COOLOFF_MINUTES (answer 429); a success resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("OPGRADE_LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = env_int("OPGRADE_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("OPGRADE_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The client address of a failed sign-in is read by the same rule as the API throttle's
# (OPGRADE_NUM_PROXIES below): REMOTE_ADDR unless proxies are declared, never a header alone.
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"

# History pages are read-only (config/history_admin.py): a revert would bypass the workflow
# services and the change permission, so old values are restored through the change page.
SIMPLE_HISTORY_REVERT_DISABLED = True

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
                "django.template.context_processors.csp",
            ],
        },
    },
]

# --- data --------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or "sqlite:///var/opgrade.sqlite3"
DATABASES = {"default": database_from_url("DATABASE_URL", DATABASE_URL, base_dir=BASE_DIR)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web processes and threads, the worker and beat all write to one file. WAL lets readers run
    # beside the writer; IMMEDIATE takes the write lock when a transaction begins (a deferred one
    # that read first cannot wait for it and fails at once with "database is locked"); the
    # timeout is how long a writer waits for the lock.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": env_int("OPGRADE_SQLITE_TIMEOUT_S", 20, minimum=1),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = redis_url("REDIS_URL", "redis://127.0.0.1:6379/0")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Every process logs to stderr (the terminal, or journald under systemd). OPGRADE_LOG_FILE adds
# a file (relative paths are under the project; `make demo` gives the web server
# var/log/demo-web.log, beside the worker's). WatchedFileHandler reopens the file after
# logrotate moves it, and several processes may append to one file.
OPGRADE_LOG_FILE = env_str("OPGRADE_LOG_FILE") or ""
_LOG_HANDLERS: dict[str, dict[str, str]] = {
    "console": {"class": "logging.StreamHandler", "formatter": "plain"}
}
if OPGRADE_LOG_FILE:
    _log_path = Path(OPGRADE_LOG_FILE)
    _log_path = _log_path if _log_path.is_absolute() else BASE_DIR / _log_path
    _log_path.parent.mkdir(parents=True, exist_ok=True)
    _LOG_HANDLERS["file"] = {
        "class": "logging.handlers.WatchedFileHandler",
        "filename": str(_log_path),
        "formatter": "plain",
    }
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": _LOG_HANDLERS,
    "root": {"handlers": list(_LOG_HANDLERS), "level": env_str("OPGRADE_LOG_LEVEL") or "INFO"},
    # axes logs every sign-in at INFO; its lockouts are WARNING.
    "loggers": {"paramiko": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}

# --- API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # API tokens hashed at rest (reviews/api_tokens.py); DRF's authtoken app is not installed.
        "reviews.authentication.ApiTokenAuthentication",
    ],
    # Signed-in users only, and provider (outside) accounts only where a view opts them in.
    "DEFAULT_PERMISSION_CLASSES": ["config.access.NotProviderUser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # Bounded input: body size, JSON depth and number length; no NUL or bidi override (config/api_input.py).
    "DEFAULT_PARSER_CLASSES": [
        "config.api_input.BoundedJSONParser",
        "config.api_input.CleanFormParser",
        "config.api_input.CleanMultiPartParser",
    ],
    # One handler turns domain and Django errors into JSON 4xx (config/api_errors.py).
    "EXCEPTION_HANDLER": "config.api_errors.exception_handler",
    # ?limit= is clamped (max 500) and ?offset= cannot overflow the database.
    "DEFAULT_PAGINATION_CLASS": "config.api_input.BoundedLimitOffsetPagination",
    # Anonymous clients by address, signed-in users by account, token clients by token's user.
    "DEFAULT_THROTTLE_CLASSES": [
        "config.throttles.AnonThrottle",
        "config.throttles.SessionUserThrottle",
        "config.throttles.TokenThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("OPGRADE_THROTTLE_ANON") or "120/min",
        "user": env_str("OPGRADE_THROTTLE_USER") or "1200/min",
        "token": env_str("OPGRADE_THROTTLE_TOKEN") or "3000/min",
    },
    # How many reverse proxies in front of the web process append to X-Forwarded-For. 0 (the
    # default): the client is REMOTE_ADDR and the header is ignored (left unset, DRF would key the
    # anonymous throttle on whatever X-Forwarded-For a client sends). django-axes reads the same.
    "NUM_PROXIES": env_int("OPGRADE_NUM_PROXIES", 0, minimum=0),
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.AutoSchema",
    "DEFAULT_VERSIONING_CLASS": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Opgrade API",
    "DESCRIPTION": "Hands-on, peer-relative ratings of GPU cloud operators.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and ReDoc from drf-spectacular-sidecar's static files: no CDN, CSP 'self'.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The 4xx answers drf-spectacular cannot infer (config/api_schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api_schema.add_error_responses",
    ],
    # Many models have a `status`; name each choice set after its model so the schema's
    # enums are stable and self-explaining (and `check --deploy` has no W001).
    "ENUM_NAME_OVERRIDES": {
        "ProviderStatusEnum": "providers.models.Provider.Status",
        "CycleStatusEnum": "providers.models.Cycle.Status",
        "RubricVersionStatusEnum": "rubric.models.RubricVersion.Status",
        "ProbeRunStatusEnum": "probes.models.ProbeRun.Status",
        "ReportStatusEnum": "reports.models.Report.Status",
        "ReviewAssignmentStatusEnum": "reviews.models.ReviewAssignment.Status",
        "ScoreOverrideStatusEnum": "ratings.models.ScoreOverride.Status",
        "RightOfReplyStatusEnum": "reviews.models.RightOfReply.Status",
    },
}

# The largest request body the API parsers read (bytes); larger bodies answer 400.
OPGRADE_API_MAX_BODY_BYTES = env_int("OPGRADE_API_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)

# The throttles' counters (and nothing else) live in Django's cache: per process by default;
# OPGRADE_CACHE_URL=redis://host:6379/N shares them between web processes.
_CACHE_URL = env_str("OPGRADE_CACHE_URL")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url(
        "OPGRADE_CACHE_URL", _CACHE_URL)}
    if _CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "opgrade"},
}
# The public report pages' caches (reports.rendering), per process: rendered bytes keyed by
# content hash (a published document never changes; bounded, least recently stored dropped
# first) and a memo of each report's cache key that reports.signals clears on every save.
CACHES["reports"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "opgrade-reports",
    "TIMEOUT": None, "OPTIONS": {"MAX_ENTRIES": 512, "CULL_FREQUENCY": 8},
}
CACHES["report_meta"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "opgrade-report-meta",
    "OPTIONS": {"MAX_ENTRIES": 4096},
}

# --- headers on every page -------------------------------------------------------------------
# Content-Security-Policy through Django's own middleware. Scripts only from our origin (the
# admin, Swagger UI from the sidecar package and the report pages need no inline script).
# Inline styles stay allowed: the portal, the report print view, the browsable API and
# django-simple-history use style attributes, and a style cannot run code.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
# Permissions-Policy (config/middleware.py): no page needs a device or sensor.
OPGRADE_PERMISSIONS_POLICY = env_str("OPGRADE_PERMISSIONS_POLICY") or (
    "accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), "
    "magnetometer=(), microphone=(), midi=(), payment=(), usb=(), xr-spatial-tracking=()"
)

# --- Celery ------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None  # state lives on our rows, not in a result backend
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"probes.*": {"queue": "probes"}}
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # How long an un-acked (acks_late) message waits before Redis redelivers it. It must
    # exceed the longest probe's hard time limit, or a slow probe would be delivered twice
    # (the atomic claim would still refuse to run it twice).
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1),
}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_ALWAYS_EAGER = False

# --- probe runner (probes/services.py) ------------------------------------------------------
# A running probe's worker refreshes ProbeRun.heartbeat_at this often; a run whose heartbeat is
# older than the stale limit belongs to a dead worker and may be re-claimed (redelivery, sweeper).
OPGRADE_PROBE_HEARTBEAT_S = env_int("OPGRADE_PROBE_HEARTBEAT_S", 10, minimum=1)
OPGRADE_PROBE_STALE_S = env_int("OPGRADE_PROBE_STALE_S", 60, minimum=2)
# Transient failures (unreachable, timeouts, resets) retry with exponential backoff from this base.
OPGRADE_PROBE_MAX_ATTEMPTS = env_int("OPGRADE_PROBE_MAX_ATTEMPTS", 3, minimum=1)
OPGRADE_PROBE_RETRY_BASE_S = env_int("OPGRADE_PROBE_RETRY_BASE_S", 30, minimum=0)
# A pending run whose task was sent this long ago and never claimed is re-sent by the sweeper.
OPGRADE_PROBE_RESEND_PENDING_S = env_int("OPGRADE_PROBE_RESEND_PENDING_S", 600, minimum=1)
# Our own writes (findings, run state) wait this long for PostgreSQL to come back before a run
# gives up its attempt; a measurement already made is not lost to a database restart.
OPGRADE_COORDINATION_RETRY_S = env_int("OPGRADE_COORDINATION_RETRY_S", 60, minimum=0)

# --- where probes may send requests (probes/egress.py, issue 24) ----------------------------
# Loopback, link-local, unspecified, multicast and this server's own addresses are refused as
# targets of every URL an analyst enters, unless they lie in one of these networks (comma-separated
# CIDRs). Empty in production; tests and testbeds that listen on loopback name it explicitly.
OPGRADE_URL_ALLOW_NETWORKS = env_networks("OPGRADE_URL_ALLOW_NETWORKS")

# --- production hardening ----------------------------------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
