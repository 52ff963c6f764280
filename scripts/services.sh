#!/usr/bin/env bash
# Start PostgreSQL and Redis when they do not answer on their usual local ports (127.0.0.1:5432,
# :6379), installing them from Debian first when they are missing (root). Idempotent: when both
# answer it only asks them (well under a second). A step it cannot take is an error naming it.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

# The clients the tests and this script use.
need=()
command -v pg_isready >/dev/null && command -v psql >/dev/null || need+=(postgresql-client)
command -v redis-cli >/dev/null || need+=(redis-tools)
if [ "${#need[@]}" -gt 0 ]; then
  apt_install_missing services.sh "${need[@]}"
fi

if ! pg_up; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install_missing services.sh postgresql
  fi
  echo "== starting PostgreSQL"
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start \
    || { echo "error: could not start PostgreSQL $version (root needed; see /var/log/postgresql)" >&2; exit 1; }
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "error: PostgreSQL did not start (see /var/log/postgresql)" >&2; exit 1; }
fi
# Trust auth for local TCP is how this machine kind is set up; the tests rely on user postgres.
psql -h 127.0.0.1 -U postgres -Atc "select 1" >/dev/null \
  || { echo "error: PostgreSQL answers but refuses user postgres over TCP without a password (the tests use it)" >&2; exit 1; }

if ! redis_up; then
  command -v redis-server >/dev/null || apt_install_missing services.sh redis-server
  echo "== starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "error: Redis did not start (see /var/log/redis/ci.log)" >&2; exit 1; }
fi
echo "== PostgreSQL and Redis answer"
