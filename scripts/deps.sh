#!/usr/bin/env bash
# Installs the Debian packages fleetbench needs, only those missing; sudo only when not root.
# Sourced by scripts/test and scripts/quickstart.
set -euo pipefail

fleetbench_packages=(mosquitto libjansson-dev libssl-dev zlib1g-dev pkg-config openssl)

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
fi

# Debian installs mosquitto in /usr/sbin, which is not on every user's PATH.
case ":$PATH:" in *":/usr/sbin:"*) ;; *) export PATH="$PATH:/usr/sbin" ;; esac
