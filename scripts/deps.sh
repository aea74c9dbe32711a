#!/usr/bin/env bash
# Installs the Debian packages fleetbench needs, only those missing; sudo only when not root.
# Sourced by scripts/test and scripts/quickstart.
set -euo pipefail

# rabbitmq-server (with Erlang): the second broker of the tests and EngineBenchmark, its MQTT plugin run as a private
# node (Sources/FleetBroker/RabbitMQBroker.swift); the package's own service is not used.
# python3-yaml: tests parse deploy/kubernetes/ and docs/ci/ with it (Tests/FleetCLITests/DeployFilesTests.swift).
fleetbench_packages=(mosquitto mosquitto-clients libjansson-dev libssl-dev zlib1g-dev liburing-dev pkg-config openssl
                     rabbitmq-server python3-yaml)

missing=()
for package in "${fleetbench_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "fleetbench: installing ${missing[*]}" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian starts the package's system-wide RabbitMQ node on install (where systemd runs): tests and benchmarks
    # start private nodes of their own, so a service installed just now is stopped and disabled again.
    case " ${missing[*]} " in
        *" rabbitmq-server "*)
            if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
                $sudo systemctl disable --now rabbitmq-server >/dev/null 2>&1 || true
            fi ;;
    esac
fi

# The reference HdrHistogram implementation (Python package hdrhistogram, module hdrh): tests check that it
# reads fleetbench's encoded histograms and logs. Only tests use it.
if ! command -v python3 >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
fi
if ! python3 -c "import hdrh.histogram, hdrh.log" >/dev/null 2>&1; then
    echo "fleetbench: installing the hdrhistogram Python package (reference for tests)" >&2
    python3 -m pip install --quiet --disable-pip-version-check hdrhistogram 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages hdrhistogram
fi

# A python3 other than Debian's (pyenv, a virtual environment) does not see python3-yaml: PyYAML from pip then.
if ! python3 -c "import yaml" >/dev/null 2>&1; then
    echo "fleetbench: installing the PyYAML Python package (tests parse YAML with it)" >&2
    python3 -m pip install --quiet --disable-pip-version-check pyyaml 2>/dev/null \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages pyyaml
fi

# Debian installs mosquitto in /usr/sbin, which is not on every user's PATH.
case ":$PATH:" in *":/usr/sbin:"*) ;; *) export PATH="$PATH:/usr/sbin" ;; esac
