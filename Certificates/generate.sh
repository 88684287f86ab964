#!/usr/bin/env bash
# Regenerates kkpush's TEST-ONLY certificates and keys (see README.md). Never use them in production.
#
# Usage: Certificates/generate.sh [-f]
#   Without -f it does nothing when the files already exist (idempotent); -f regenerates everything.
# Needs: bash and the openssl command line (OpenSSL 3; the legacy provider for client-legacy.p12).
set -euo pipefail

cd "$(dirname "$0")"
DIR="$(pwd)"

FORCE=0
if [[ "${1:-}" == "-f" ]]; then FORCE=1; fi

if [[ $FORCE -eq 0 && -f ca.crt && -f server.crt && -f keys.json && -f client-universal.p12 && -f client-legacy.p12 ]]; then
    echo "Certificates/ is complete; use -f to regenerate."
    exit 0
fi

BUNDLE_ID="nl.kantinekoning.app"
P12_PASS="kkpush"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

rm -rf bad
mkdir -p bad
rm -f ./*.crt ./*.key ./*.p12 ./*.p8 ./*.srl keys.json

echo "== local CA (kkpush test CA) =="
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout ca.key -out ca.crt -days 3650 -sha256 \
    -subj "/CN=kkpush test CA/O=kkpush test/C=NL" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

echo "== mock server certificate =="
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout server.key -out "$WORK/server.csr" -subj "/CN=localhost/O=kkpush test/C=NL" 2>/dev/null
cat > "$WORK/server.ext" <<'EOF'
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost
EOF
openssl x509 -req -in "$WORK/server.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -CAserial "$WORK/ca.srl" \
    -out server.crt -days 3650 -sha256 -extfile "$WORK/server.ext" 2>/dev/null

echo "== provider keys (.p8) =="
for kid in KKTEST0001 KKTEST0002; do
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "AuthKey_${kid}.p8"
done
cat > keys.json <<'EOF'
[
  {
    "key_id": "KKTEST0001",
    "team_id": "KKTEAM0001",
    "file": "AuthKey_KKTEST0001.p8",
    "environments": ["sandbox", "production"]
  },
  {
    "key_id": "KKTEST0002",
    "team_id": "KKTEAM0001",
    "file": "AuthKey_KKTEST0002.p8",
    "environments": ["sandbox"]
  }
]
EOF

echo "== bad keys =="
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out bad/rsa.p8 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out bad/p384.p8
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/enc.pem"
openssl pkcs8 -topk8 -in "$WORK/enc.pem" -out bad/encrypted.p8 -v2 aes-256-cbc -passout "pass:${P12_PASS}"

echo "== test WWDR CA (kkpush test Apple Worldwide Developer Relations CA) =="
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout wwdr.key -out wwdr.crt -days 3650 -sha256 \
    -subj "/CN=kkpush test Apple WWDR CA/OU=G4/O=kkpush test/C=NL" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

# A minimal `openssl ca` setup, so client certificates can have fixed start and end dates.
mkdir -p "$WORK/ca/newcerts"
: > "$WORK/ca/index.txt"
echo 1000 > "$WORK/ca/serial"
cat > "$WORK/ca.cnf" <<EOF
[ ca ]
default_ca = wwdr

[ wwdr ]
dir = $WORK/ca
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
certificate = $DIR/wwdr.crt
private_key = $DIR/wwdr.key
default_md = sha256
policy = policy_any
unique_subject = no
copy_extensions = none
email_in_dn = no

[ policy_any ]
userId = optional
commonName = supplied
organizationalUnitName = optional
organizationName = optional
countryName = optional

[ apns_development ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
1.2.840.113635.100.6.3.1 = ASN1:NULL

[ apns_production ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
1.2.840.113635.100.6.3.2 = ASN1:NULL

[ apns_universal ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
1.2.840.113635.100.6.3.1 = ASN1:NULL
1.2.840.113635.100.6.3.2 = ASN1:NULL
1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:apns_topics

# Pushy's apns-extensions.cnf layout: topic, SEQUENCE{kind}, topic, SEQUENCE{kind}, ...
[ apns_topics ]
topic1 = UTF8:${BUNDLE_ID}
topic1_kind = SEQUENCE:kind_app
topic2 = UTF8:${BUNDLE_ID}.voip
topic2_kind = SEQUENCE:kind_voip
topic3 = UTF8:${BUNDLE_ID}.complication
topic3_kind = SEQUENCE:kind_complication

[ kind_app ]
kind = UTF8:app
[ kind_voip ]
kind = UTF8:voip
[ kind_complication ]
kind = UTF8:complication
EOF

# utc DATE_OFFSET_DAYS -> YYYYMMDDHHMMSSZ
utc() { date -u -d "@$(( $(date -u +%s) + $1 * 86400 ))" +%Y%m%d%H%M%SZ; }

# client NAME EXTENSIONS CN_PREFIX START_DAYS END_DAYS
client() {
    local name="$1" ext="$2" cnprefix="$3" start="$4" end="$5"
    openssl req -new -newkey rsa:2048 -nodes -keyout "client-${name}.key" -out "$WORK/${name}.csr" \
        -subj "/CN=x" 2>/dev/null
    openssl ca -batch -config "$WORK/ca.cnf" -extensions "$ext" -notext -preserveDN -utf8 \
        -subj "/UID=${BUNDLE_ID}/CN=${cnprefix}: ${BUNDLE_ID}/OU=KKTEAM0001/O=Kantine Koning (test)/C=NL" \
        -startdate "$(utc "$start")" -enddate "$(utc "$end")" \
        -in "$WORK/${name}.csr" -out "client-${name}.crt" 2>"$WORK/ca.log" || { cat "$WORK/ca.log" >&2; exit 1; }
    openssl pkcs12 -export -in "client-${name}.crt" -inkey "client-${name}.key" -certfile wwdr.crt \
        -name "${cnprefix}: ${BUNDLE_ID}" -out "client-${name}.p12" -passout "pass:${P12_PASS}"
}

echo "== client certificates =="
client development apns_development "Apple Development IOS Push Services" -1 3650
client production apns_production "Apple Production IOS Push Services" -1 3650
client universal apns_universal "Apple Push Services" -1 3650
client expired apns_development "Apple Development IOS Push Services" -400 -35
client expiring-soon apns_universal "Apple Push Services" -355 7

echo "== p12 variants =="
openssl pkcs12 -export -in client-universal.crt -inkey client-universal.key -certfile wwdr.crt \
    -name "Apple Push Services: ${BUNDLE_ID}" -out client-nopass.p12 -passout pass:
openssl pkcs12 -export -legacy -in client-universal.crt -inkey client-universal.key -certfile wwdr.crt \
    -name "Apple Push Services: ${BUNDLE_ID}" -out client-legacy.p12 -passout "pass:${P12_PASS}"

chmod 600 ./*.key ./*.p8 bad/*.p8 ./*.p12
echo "== done =="
ls -1
