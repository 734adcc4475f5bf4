#!/usr/bin/env bash
# Installs corecast's C API: the header, the shared library (libcorecast.so,
# soname libcorecast.so.0), the static library (libcorecast.a) and a
# pkg-config file, so that `cc prog.c $(pkg-config --cflags --libs corecast)`
# finds them.
#
#   bash scripts/install-c.sh [--prefix DIR] [--profile release|debug] [--no-build]
#
# --prefix    where to install (default /usr/local: include/, lib/, lib/pkgconfig/)
# --profile   which cargo build to install (default release)
# --no-build  install what target/<profile> already holds
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
profile=release
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "install-c.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$profile" in release|debug) ;; *) echo "install-c.sh: profile is release or debug" >&2; exit 2 ;; esac

if [ "$build" = 1 ]; then
  if [ "$profile" = release ]; then cargo build --release -p corecast-c; else cargo build -p corecast-c; fi
fi
target="${CARGO_TARGET_DIR:-target}/$profile"
for f in libcorecast_c.so libcorecast_c.a; do
  [ -f "$target/$f" ] || { echo "install-c.sh: $target/$f is missing (build corecast-c first)" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
install -m 0644 corecast-c/include/corecast.h "$prefix/include/corecast.h"
install -m 0755 "$target/libcorecast_c.so" "$prefix/lib/libcorecast.so.0"
ln -sf libcorecast.so.0 "$prefix/lib/libcorecast.so"
install -m 0644 "$target/libcorecast_c.a" "$prefix/lib/libcorecast.a"
cat > "$prefix/lib/pkgconfig/corecast.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: corecast
Description: Zero-copy one-to-many message passing between processes on one machine (C API)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lcorecast
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
PC

if [ "$prefix" = /usr/local ] || [ "$prefix" = /usr ]; then
  command -v ldconfig >/dev/null && ldconfig || true
fi
echo "installed corecast $version into $prefix (header, libcorecast.so.0, libcorecast.a, pkgconfig/corecast.pc)"
