#!/usr/bin/env bash
# Installs what the PMU lab needs on a Debian bookworm host, idempotently (each
# step checks first, so a second run does nothing and needs no network).
# Needs root for apt. Why each choice is made: ci/pmu-lab/README.md.
set -euo pipefail

log() { printf 'pmu-lab setup: %s\n' "$*"; }
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

need_update=0
# The guest kernel and busybox are arm64 .debs fetched with `apt-get download`.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "adding the arm64 foreign architecture"
  $SUDO dpkg --add-architecture arm64
  need_update=1
fi
# QEMU from bookworm-backports (10.x): bookworm's own 7.2 conflicts with the
# backports qemu-utils some images ship, and installing it removes qemu-utils.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
bp=/etc/apt/sources.list.d/pmu-lab-backports.sources
if [ "${PMU_LAB_BACKPORTS:-1}" = 1 ] && ! grep -rqs "${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  log "adding ${codename}-backports"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$codename" |
    $SUDO tee "$bp" >/dev/null
  need_update=1
fi
EFI=/usr/share/qemu-efi-aarch64/QEMU_EFI.fd
have_qemu() {
  command -v qemu-system-aarch64 >/dev/null && command -v qemu-aarch64 >/dev/null &&
    command -v cpio >/dev/null && [ -f "$EFI" ]
}
if ! have_qemu; then
  need_update=1
fi
if [ "$need_update" = 1 ] || ! apt-cache show "busybox-static:arm64" >/dev/null 2>&1; then
  log "apt-get update"
  $SUDO apt-get update -qq
fi
if ! have_qemu; then
  log "installing qemu-system-arm, qemu-user (the pure-logic test binaries), qemu-efi-aarch64 (EDK2, for the UEFI/ACPI boot) and cpio"
  if [ "${PMU_LAB_BACKPORTS:-1}" = 1 ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t "${codename}-backports" qemu-system-arm qemu-user qemu-efi-aarch64 cpio
  else
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-arm qemu-user qemu-efi-aarch64 cpio
  fi
fi
# Static aarch64 binaries linked by rust-lld: no cross C compiler needed.
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-musl; then
  log "rustup target add aarch64-unknown-linux-musl"
  rustup target add aarch64-unknown-linux-musl
fi
log "ok: $(qemu-system-aarch64 --version | head -1)"
