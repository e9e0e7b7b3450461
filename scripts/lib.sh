# Shared by the scripts: where things are and how to install them. Source it, do not run it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

# Debian packages: C libraries the player links, and tools the tests use.
RUNTIME_PACKAGES=(pkg-config libasound2-dev libflac-dev libopus-dev libopusfile-dev libogg-dev libmpg123-dev libsoxr-dev libvorbis-dev libfaad-dev libssl-dev)
TEST_PACKAGES=(python3 openssl python3-venv gcc sox flac lame mpg123 opus-tools vorbis-tools ffmpeg faad squeezelite procps iptables pulseaudio pulseaudio-utils libasound2-plugins
  chromium chromium-driver fonts-dejavu-core man-db)

log() { printf '==> [%d s] %s\n' "$SECONDS" "$*" >&2; }  # seconds since the script started

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages that are missing (apt-get update first, once).
ensure_packages() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

ensure_swift() {
  if ! command -v swift >/dev/null 2>&1; then
    for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
      [ -x "$dir/swift" ] && export PATH="$dir:$PATH" && break
    done
  fi
  command -v swift >/dev/null 2>&1 || { echo "error: a Swift 6 toolchain is needed (swift not found)" >&2; exit 1; }
}

# Every function in a section of its own, for every target including the dependencies (which
# Package.swift cannot give flags to): the linker then drops what is never called and lays out
# what runs while playing side by side (Sources/slimplay/link-order.txt), so fewer code pages
# are resident.
RELEASE_FLAGS=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcc -fdata-sections)

# The release binary: optimised, Swift runtime linked in statically.
build_release() {
  ensure_swift
  log "building slimplay (release)"
  (cd "$ROOT" && swift build -c release --static-swift-stdlib "${RELEASE_FLAGS[@]}" --product slimplay >&2)
  echo "$ROOT/.build/release/slimplay"
}

# --- arm64 (Raspberry Pi OS bookworm, 64-bit), cross-built here -------------------------------------
# ../shared/arm64/cross-toolchain sets up (once, about 7 minutes) Debian's Swift 6.2 cross compiler in an
# amd64 sid chroot, a bookworm arm64 userland (the sysroot, and where arm64 binaries run under qemu) and the
# Swift SDK bundle; see its README. Root is needed (debootstrap, chroot, bind mounts).
ARM64_TOOLCHAIN="$ROOT/../shared/arm64/cross-toolchain"

ensure_arm64_toolchain() {
  [ -f "$ARM64_TOOLCHAIN" ] || { echo "error: $ARM64_TOOLCHAIN is missing" >&2; return 1; }
  as_root bash "$ARM64_TOOLCHAIN" setup >&2
  as_root bash "$ARM64_TOOLCHAIN" binfmt
  eval "$(bash "$ARM64_TOOLCHAIN" env)"
  export ARM64_ROOTFS ARM64_COMPILER_ROOTFS ARM64_SYSROOT ARM64_SDK ARM64_SDKS_PATH
}

# Bind-mounts `source` at `target` (made if missing) unless something is mounted there already.
# A mount left from an earlier clone at the same path still answers `mountpoint` but shows the deleted
# folder (seen: a fresh clone where an old one had been removed; swift's driver then stops on SIGILL):
# a mount whose folder is not the source's is replaced.
bind_mount() {
  mkdir -p "$2"
  if mountpoint -q "$2"; then
    [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ] && return 0
    echo "replacing the stale mount at $2 ($(findmnt -n -o SOURCE --target "$2" 2>/dev/null | tail -n1))" >&2
    as_root umount -l "$2"
  fi
  as_root mount --bind "$1" "$2"
}

# Runs a command in the arm64 bookworm userland (under qemu) with the project at the same path.
in_arm64_userland() {
  bind_mount "$ROOT" "$ARM64_ROOTFS$ROOT"
  bind_mount /proc "$ARM64_ROOTFS/proc"
  bind_mount /dev "$ARM64_ROOTFS/dev"
  as_root chroot "$ARM64_ROOTFS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

# Runs `swift build` with the arguments given for arm64 in the compiler's chroot, which sees the project
# and the machine's Swift packages at their own paths and the sysroot at /sysroot (where the SDK bundle
# expects it), into .build-arm64; prints the folder the products are in.
swift_build_arm64() {
  ensure_arm64_toolchain
  local jail="$ARM64_COMPILER_ROOTFS"
  bind_mount "$ROOT" "$jail$ROOT"
  bind_mount "$ARM64_SYSROOT" "$jail/sysroot"
  bind_mount /proc "$jail/proc"
  bind_mount /dev "$jail/dev"
  # The machine's Swift packages and the git rewrite that points package URLs at them.
  local packages
  packages="$(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null | sed -n 's/^url\.\(.*\)\.insteadof .*/\1/p' | head -n1)"
  if [ -n "$packages" ] && [ -d "$packages" ]; then
    bind_mount "$packages" "$jail$packages"
    as_root cp /etc/gitconfig "$jail/etc/gitconfig"
  fi
  log "building for arm64 ($(as_root chroot "$jail" swift --version 2>/dev/null | head -n1)): $*"
  # Run from the chroot's root with --package-path: swift's driver stops on a precondition (SIGILL, in
  # Foundation's fileSystemRepresentation) when its working directory or the package is unreachable.
  local build=(swift build --package-path "$ROOT" --swift-sdks-path "$ARM64_SDKS_PATH" --swift-sdk "$ARM64_SDK"
    --scratch-path "${ARM64_SCRATCH:-$ROOT/.build-arm64}" "$@")
  as_root chroot "$jail" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PKG_CONFIG_PATH=/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sysroot/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=/sysroot \
    bash -c 'set -o pipefail; cd / && "$@" >&2 && "$@" --show-bin-path | tail -n1' _ "${build[@]}" || {
    local status=$?
    echo "error: the arm64 build failed ($status); what is mounted in the compiler's chroot:" >&2
    findmnt -o TARGET,SOURCE,FSTYPE | grep -F "$jail" >&2 || true
    return "$status"
  }
}

# The arm64 release binary: the same flags as build_release, cross-compiled.
build_release_arm64() {
  local folder
  folder="$(swift_build_arm64 -c release --static-swift-stdlib "${RELEASE_FLAGS[@]}" --product slimplay)" || return 1
  echo "$folder/slimplay"
}

# The arm64 unit-test binary, optimised as the product is (`-enable-testing` for the tests' `@testable`
# imports), into .build-arm64-tests: under emulation debug code is too slow for the decoder tests. Swift
# 6.2's type checker gives up, within its default scope limit, on `#expect(a == b + c + d)` over byte
# arrays, which 6.3 checks at once: the limit is raised for the tests. Debian's swiftlang 6.2.3 ships Swift
# Testing's Foundation overlay as a module without its library, so the overlay is left out. Its test
# libraries want glibc 2.38 symbols the bookworm sysroot lacks: they are resolved where the tests run
# (trixie), not at the link.
build_tests_arm64() {
  local folder
  folder="$(ARM64_SCRATCH="$ROOT/.build-arm64-tests" swift_build_arm64 -c release --build-tests -Xswiftc -enable-testing \
    -Xswiftc -Xfrontend -Xswiftc -solver-scope-threshold=50000000 \
    -Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays -Xlinker --allow-shlib-undefined)" || return 1
  echo "$folder/slimplayPackageTests.xctest"
}

# The test venv: aioslimproto 3.3.0 and the rest of Tests/integration/requirements.txt, and the
# harness package (Tests/harness) the integration tests and the scripts share, found by a .pth.
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import aioslimproto, pytest, selenium, numpy, xdist' 2>/dev/null; then
    log "creating the test venv with aioslimproto 3.3.0"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/Tests/integration/requirements.txt"
  fi
  local site
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  [ "$(cat "$site/slimplay-harness.pth" 2>/dev/null)" = "$ROOT/Tests" ] || echo "$ROOT/Tests" >"$site/slimplay-harness.pth"
}

# The lean upstream squeezelite (codecs loaded at run time), built once from ../shared/peers into
# .build-squeezelite with its own Makefile: the bench's second reference player.
SQUEEZELITE_UPSTREAM_TARBALL="$ROOT/../shared/peers/squeezelite-2.0.0-1577.tar.xz"
build_squeezelite_upstream() {
  local folder="$ROOT/.build-squeezelite"
  local binary="$folder/squeezelite-2.0.0-1577/squeezelite"
  # With faad (AAC), which earlier builds here left out: rebuilt once.
  if [ -x "$binary" ] && [ ! -f "$folder/with-faad" ]; then rm -rf "$folder/squeezelite-2.0.0-1577"; fi
  if [ ! -x "$binary" ]; then
    [ -f "$SQUEEZELITE_UPSTREAM_TARBALL" ] || { echo "error: $SQUEEZELITE_UPSTREAM_TARBALL is missing" >&2; return 1; }
    ensure_packages make gcc pkg-config libasound2-dev libflac-dev libmad0-dev libmpg123-dev libvorbis-dev \
      libopusfile-dev libsoxr-dev libfaad-dev
    log "building squeezelite 2.0.0 (upstream) in $folder"
    mkdir -p "$folder"
    tar -xJf "$SQUEEZELITE_UPSTREAM_TARBALL" -C "$folder"
    (cd "$folder/squeezelite-2.0.0-1577" && make OPTS="-DOPUS -DRESAMPLE" \
      CFLAGS="-Wall -fPIC -O2 $(pkg-config --cflags opusfile)" -j2 >&2)
    touch "$folder/with-faad"
  fi
  echo "$binary"
}
