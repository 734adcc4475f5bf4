#!/usr/bin/env bash
# Makes a throw-away certificate authority and one certificate per bridge,
# for `corecast bridge --tls-ca/--tls-cert/--tls-key` (tests, trials).
#
#   bash scripts/certs.sh DIR NAME[=SAN,...] ...
#
# DIR gets ca.pem (and ca.key), and NAME.pem / NAME.key for each NAME: an
# ECDSA P-256 key (PKCS#8), an X.509 v3 certificate whose common name is
# NAME (what --allow names) and whose subject alternative names are the
# SANs given (the addresses peers dial it at, e.g.
# forwarder-a=IP:10.213.0.1), valid for both server and client use.
# `ca2` and anything after `--other-ca` are signed by a second, unrelated CA
# (ca2.pem): what a peer not of this deployment would have.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME[=SAN,...] ... [--other-ca NAME[=SAN,...] ...]" >&2; exit 2; }
dir=$1; shift
mkdir -p "$dir"
cd "$dir"
umask 077

authority() { # $1 = file stem, $2 = common name
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
  openssl req -x509 -new -key "$1.key" -sha256 -days 30 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" -out "$1.pem" 2>/dev/null
}

leaf() { # $1 = CA stem, $2 = NAME[=SAN,...]
  local name=${2%%=*} san="IP:127.0.0.1,DNS:localhost"
  [ "$name" != "$2" ] && san=${2#*=}
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key" 2>/dev/null
  openssl req -new -key "$name.key" -subj "/CN=$name" -out "$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" \
    "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$1.pem" -CAkey "$1.key" -CAcreateserial -sha256 -days 30 \
    -extfile "$name.ext" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

authority ca "corecast bridge test CA"
ca=ca
for arg in "$@"; do
  if [ "$arg" = "--other-ca" ]; then
    authority ca2 "an unrelated CA"
    ca=ca2
    continue
  fi
  leaf "$ca" "$arg"
done
