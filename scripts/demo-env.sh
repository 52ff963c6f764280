# Sourced by scripts/demo.sh (and scripts/demo-web.sh): the demo runs as production does, with
# DEBUG off. Errors go to the web log (var/log/demo-web.log) and a visitor gets a plain error page,
# never Django's debug page with its traceback and settings.
#
# DEBUG off needs real secrets. They are generated once, on the first run, into
# var/demo-secrets.env (mode 600, root's) and reused by every later run, so the credentials the
# demo stored encrypted stay readable and sessions survive a restart. Delete the file (and the
# demo's database) to start over with new ones. OPGRADE_DEMO_SECRETS names another file.
demo_secrets=${OPGRADE_DEMO_SECRETS:-var/demo-secrets.env}
if [ ! -s "$demo_secrets" ]; then
  mkdir -p "$(dirname "$demo_secrets")"
  (
    umask 077
    python3 - > "$demo_secrets.tmp" <<'PY'
import base64, os, secrets
print("# Generated once by scripts/demo-env.sh for the demo; never used outside it.")
print(f"SECRET_KEY={secrets.token_urlsafe(50)}")
# A Fernet key: 32 random bytes, url-safe base64 (what Fernet.generate_key() returns).
print(f"OPGRADE_ENCRYPTION_KEYS={base64.urlsafe_b64encode(os.urandom(32)).decode()}")
print(f"OPGRADE_PSEUDONYM_KEY={secrets.token_urlsafe(40)}")
PY
  )
  mv "$demo_secrets.tmp" "$demo_secrets"
fi
chmod 600 "$demo_secrets"
set -a
# shellcheck source=/dev/null
. "$demo_secrets"
set +a
export OPGRADE_DEBUG=0
# Served on plain http://127.0.0.1:8000: production's redirect to https would lock the demo out.
export SECURE_SSL_REDIRECT=0
