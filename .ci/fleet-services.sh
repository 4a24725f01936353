#!/usr/bin/env bash
# The engines a fleet runs on besides PostgreSQL, for the storage, Redis and fleet tests:
# redis-server and haproxy from Debian, and moto's S3-compatible server (pinned, from PyPI, in
# the venv .tools/moto). Starts Redis and moto on ports of their own and prints the variables
# the tests read, for `eval`: STORAGE_TEST_S3 (the S3 endpoint), REDIS_TEST_URL, and
# REQUIRE_FLEET_ENGINES=1 so that a missing engine fails the tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian's package starts its own Redis on 6379 where systemd runs; ours is separate either way.
venv=.tools/moto
if [ ! -x "$venv/bin/moto_server" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.2.6' >&2
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
moto_port=$(free_port)
"$venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >/tmp/ci-moto.log 2>&1 &
echo $! >/tmp/ci-moto.pid
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile /tmp/ci-redis.pid >&2
for _ in $(seq 1 60); do
  curl -fsS -o /dev/null "http://127.0.0.1:$moto_port/" 2>/dev/null && redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$moto_port/"
redis-cli -p "$redis_port" ping >/dev/null
echo "export STORAGE_TEST_S3=http://127.0.0.1:$moto_port REDIS_TEST_URL=redis://127.0.0.1:$redis_port REQUIRE_FLEET_ENGINES=1"
