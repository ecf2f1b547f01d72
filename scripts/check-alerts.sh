#!/usr/bin/env bash
# Validates the Prometheus alerting rules and runs their unit tests:
#   promtool check rules  config/prometheus/alerts.yml
#   promtool test rules   config/prometheus/alerts.test.yml
#   promtool check config config/prometheus/prometheus.yml   (the compose stack's config)
# Needs promtool (Debian/Ubuntu: apt-get install prometheus); installs nothing itself.
# Exits non-zero when promtool is missing or any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "check-alerts: promtool not found on PATH; install it (apt-get install prometheus, or a Prometheus release tarball) and re-run" >&2
  exit 1
fi

promtool check rules config/prometheus/alerts.yml
promtool test rules config/prometheus/alerts.test.yml
promtool check config config/prometheus/prometheus.yml
echo "check-alerts: rules and config valid, unit tests passed"
