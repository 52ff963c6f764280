#!/usr/bin/env bash
# Start PostgreSQL and Redis when they do not answer on their usual local ports.
set -euo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! command -v pg_isready >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "== installing PostgreSQL and Redis"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql redis-server >/dev/null
fi

if ! pg_up; then
  echo "== starting PostgreSQL"
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "error: PostgreSQL did not start" >&2; exit 1; }
fi
# Trust auth for local TCP is how this machine kind is set up; the tests rely on user postgres.
psql -h 127.0.0.1 -U postgres -Atc "select 1" >/dev/null

if ! redis_up; then
  echo "== starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "error: Redis did not start" >&2; exit 1; }
fi
echo "== PostgreSQL and Redis answer"
