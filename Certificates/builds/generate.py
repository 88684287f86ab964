#!/usr/bin/env python3
"""Regenerates kkpush's TEST-ONLY iOS build files (see ../README.md, "Builds"). Never use them for anything real.

Usage: Certificates/builds/generate.py [-f]
  Without -f it does nothing when the files already exist; -f regenerates everything (new random keys, so every
  signature, certificate hash and file that embeds one changes; the rest is deterministic).
Needs: Python 3 (standard library only) and the openssl command line (OpenSSL 3).

Everything is produced the way Apple's tools produce it, from a test CA chain shaped like Apple's:
  ca/           the chain: a root, the iPhone CA with the profile signer, the WWDR CA with three developer
                certificates, and an unrelated self-signed "Stranger"
  profiles/     provisioning profiles: CMS SignedData (openssl cms -sign) around Apple's plist
  executables/  Mach-O executables with code-signature SuperBlobs (CodeDirectory, requirements, XML and DER
                entitlements, CMS signature), written byte by byte
  apps/ ipas/ archives/ export/ entitlements/
                an .app bundle, .ipa files (good and hostile), an .xcarchive, an export's DistributionSummary.plist
                and ExportOptions.plist, and Xcode project entitlements files
"""

import base64
import datetime as dt
import hashlib
import os
import plistlib
import shutil
import struct
import subprocess
import sys
import tempfile
import uuid
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT_DIRS = ["ca", "profiles", "executables", "apps", "ipas", "archives", "export", "entitlements"]

TEAM = "KKTEAM0001"
TEAM_NAME = "Kantine Koning (test)"
ENTERPRISE_TEAM = "KKENTR0001"
ENTERPRISE_TEAM_NAME = "Kantine Koning Enterprise (test)"
BUNDLE_ID = "nl.kantinekoning.app"
ENTERPRISE_BUNDLE_ID = "nl.kantinekoning.enterprise"
EXTENSION_BUNDLE_ID = BUNDLE_ID + ".NotificationService"
APP_NAME = "Kantine Koning"
SHORT_VERSION = "2.4.1"
BUILD_NUMBER = "57"

UTC = dt.timezone.utc
CREATED = dt.datetime(2026, 1, 15, 9, 30, 0, tzinfo=UTC)  # profiles' CreationDate
EXPIRES = dt.datetime(2036, 1, 15, 9, 30, 0, tzinfo=UTC)  # profiles' ExpirationDate
SIGNED = dt.datetime(2026, 1, 15, 10, 15, 0, tzinfo=UTC)  # code signatures' signingTime
ARCHIVED = dt.datetime(2026, 1, 15, 10, 5, 0, tzinfo=UTC)  # the .xcarchive's CreationDate
ZIP_TIME = (2026, 1, 15, 10, 20, 0)  # every zip member's modification time
UUID_NAMESPACE = uuid.UUID("6b6b7075-7368-4275-696c-647300000000")  # fixed: profile UUIDs derive from names


def fixed_uuid(name):
    return str(uuid.uuid5(UUID_NAMESPACE, name))


def pseudo_random(label, length):
    """Deterministic bytes (SHA-256 in counter mode), for device ids and 'random' files."""
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return out[:length]


# ---------------------------------------------------------------------------------------------------------------
# openssl


def openssl(*args, stdin=None):
    result = subprocess.run(["openssl", *map(str, args)], input=stdin, capture_output=True)
    if result.returncode != 0:
        sys.exit(f"openssl {' '.join(map(str, args))} failed:\n{result.stderr.decode(errors='replace')}")
    return result.stdout


def pem_to_der(pem_path):
    return openssl("x509", "-in", pem_path, "-outform", "DER")


# ---------------------------------------------------------------------------------------------------------------
# DER


def der_length(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def tlv(tag, content):
    return bytes([tag]) + der_length(len(content)) + content


def der_int(value):
    length = max(1, (value.bit_length() + 8) // 8)  # room for the sign bit
    return tlv(0x02, value.to_bytes(length, "big", signed=True))


def der_bool(value):
    return tlv(0x01, b"\xff" if value else b"\x00")


def der_utf8(text):
    return tlv(0x0C, text.encode())


def der_octets(data):
    return tlv(0x04, data)


def der_null():
    return b"\x05\x00"


def oid_body(dotted):
    parts = [int(p) for p in dotted.split(".")]
    out = bytearray([parts[0] * 40 + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.append(0x80 | (p & 0x7F))
            p >>= 7
        out += bytes(reversed(chunk))
    return bytes(out)


def der_oid(dotted):
    return tlv(0x06, oid_body(dotted))


def der_seq(*items):
    return tlv(0x30, b"".join(items))


def der_set(items):
    """A SET OF in DER: members sorted by their encodings."""
    return tlv(0x31, b"".join(sorted(items)))


def der_utctime(when):
    return tlv(0x17, when.strftime("%y%m%d%H%M%SZ").encode())


def der_read(data, offset):
    """(tag, content start, content end) of the element at offset (definite lengths only)."""
    tag = data[offset]
    length = data[offset + 1]
    start = offset + 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[start : start + n], "big")
        start += n
    return tag, start, start + length


def cert_issuer_and_serial(cert_der):
    """The issuer Name and serialNumber INTEGER of a certificate, as encoded (for a SignerInfo)."""
    _, cert_start, _ = der_read(cert_der, 0)
    _, tbs_start, _ = der_read(cert_der, cert_start)
    i = tbs_start
    tag, _, end = der_read(cert_der, i)
    if tag == 0xA0:  # [0] version
        i = end
        tag, _, end = der_read(cert_der, i)
    serial = cert_der[i:end]
    _, _, i = der_read(cert_der, end)  # signature AlgorithmIdentifier
    _, _, issuer_end = der_read(cert_der, i)
    return cert_der[i:issuer_end], serial


# Entitlements as DER. CoreEntitlements' form (codesign since Xcode 13, and the DER-Encoded-Profile):
#   [APPLICATION 16] { INTEGER 1, [CONTEXT 16] { SEQUENCE { UTF8String key, value } ... sorted by key } }
# with values BOOLEAN, INTEGER, UTF8String, SEQUENCE (array) or a nested [CONTEXT 16] dictionary.
# The older form (Xcode 12, as in real binaries of that time): the dictionary alone, a DER SET OF the same pairs.


def ce_value(value, legacy=False):
    if isinstance(value, bool):
        return der_bool(value)
    if isinstance(value, int):
        return der_int(value)
    if isinstance(value, str):
        return der_utf8(value)
    if isinstance(value, list):
        return der_seq(*(ce_value(v, legacy) for v in value))
    if isinstance(value, dict):
        return ce_dictionary(value, legacy)
    raise TypeError(f"no DER form for {value!r}")


def ce_dictionary(d, legacy=False):
    pairs = [der_seq(der_utf8(k), ce_value(d[k], legacy)) for k in sorted(d)]
    if legacy:
        return der_set(pairs)
    return tlv(0xB0, b"".join(pairs))


def der_entitlements(d):
    return tlv(0x70, der_int(1) + ce_dictionary(d))


def legacy_der_entitlements(d):
    return ce_dictionary(d, legacy=True)


# ---------------------------------------------------------------------------------------------------------------
# The CA chain


class Identity:
    def __init__(self, name, directory):
        self.name = name
        self.crt = directory / f"{name}.crt"
        self.key = directory / f"{name}.key"
        self._der = None

    @property
    def der(self):
        if self._der is None:
            self._der = pem_to_der(self.crt)
        return self._der

    @property
    def common_name(self):
        out = openssl("x509", "-in", self.crt, "-noout", "-subject", "-nameopt", "sep_multiline,utf8,sname")
        for line in out.decode().splitlines():
            line = line.strip()
            if line.startswith("CN="):
                return line[3:]
        raise ValueError(f"{self.crt} has no CN")

    @property
    def not_after(self):
        text = openssl("x509", "-in", self.crt, "-noout", "-enddate").decode().strip().split("=", 1)[1]
        return dt.datetime.strptime(text, "%b %d %H:%M:%S %Y %Z").replace(tzinfo=UTC)


CA_CONFIG = """
[ ca ]
default_ca = kk

[ kk ]
dir = {work}
database = $dir/index.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
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

[ root ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
certificatePolicies = 1.2.840.113635.100.5.1

# Apple marks its intermediates: 1.2.840.113635.100.6.2.18 the iPhone CA, 1.2.840.113635.100.6.2.1 WWDR
# (designated requirements test "certificate 1[field.1.2.840.113635.100.6.2.1] exists").
[ iphone_ca ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.2.18 = ASN1:NULL

[ wwdr ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.2.1 = ASN1:NULL

[ profile_signing ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.58 = ASN1:NULL

# Developer certificates: 6.1.2 iPhone Development, 6.1.12 Mac Development, 6.1.4 iPhone Distribution,
# 6.1.7 Mac App Store (Apple Distribution certificates carry both of the last two).
[ development ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
certificatePolicies = 1.2.840.113635.100.5.1
1.2.840.113635.100.6.1.2 = critical,ASN1:NULL
1.2.840.113635.100.6.1.12 = critical,ASN1:NULL

[ distribution ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
certificatePolicies = 1.2.840.113635.100.5.1
1.2.840.113635.100.6.1.7 = critical,ASN1:NULL
1.2.840.113635.100.6.1.4 = critical,ASN1:NULL

[ enterprise ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
certificatePolicies = 1.2.840.113635.100.5.1
1.2.840.113635.100.6.1.4 = critical,ASN1:NULL

[ stranger ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

# name: (subject, issuer or None for self-signed, extensions, validity in years)
CHAIN = {
    "root": (
        "/C=US/O=Apple Inc. (test)/OU=Apple Certification Authority (test)/CN=KKPush Test Apple Root CA",
        None, "root", 25),
    "iphone-ca": (
        "/CN=KKPush Test Apple iPhone Certification Authority/OU=Apple Certification Authority (test)"
        "/O=Apple Inc. (test)/C=US",
        "root", "iphone_ca", 20),
    "profile-signing": (
        "/CN=KKPush Test Apple iPhone OS Provisioning Profile Signing/O=Apple Inc. (test)/C=US",
        "iphone-ca", "profile_signing", 12),
    # "KKPush Test Apple Worldwide Developer Relations Certification Authority" would be 71 characters, over X.509's
    # upper bound for a common name (64, RFC 5280; Apple's own is 59), which openssl refuses.
    "wwdr": (
        "/CN=KKPush Test Apple Worldwide Developer Relations CA/OU=G3"
        "/O=Apple Inc. (test)/C=US",
        "root", "wwdr", 20),
    "apple-development": (
        f"/UID=KKUSER0001/CN=Apple Development: Test Developer (KKDEV00001)/OU={TEAM}/O={TEAM_NAME}/C=NL",
        "wwdr", "development", 12),
    "apple-distribution": (
        f"/UID={TEAM}/CN=Apple Distribution: {TEAM_NAME} ({TEAM})/OU={TEAM}/O={TEAM_NAME}/C=NL",
        "wwdr", "distribution", 12),
    "iphone-distribution-enterprise": (
        f"/UID={ENTERPRISE_TEAM}/CN=iPhone Distribution: {ENTERPRISE_TEAM_NAME}/OU={ENTERPRISE_TEAM}"
        f"/O={ENTERPRISE_TEAM_NAME}/C=NL",
        "wwdr", "enterprise", 12),
    "stranger": ("/CN=Stranger Profile Signer/O=Stranger (test)/C=NL", None, "stranger", 12),
}


def make_chain(ca_dir, work):
    """Keys (RSA 2048, generated in parallel) and certificates. Validity starts on 2026-01-01 (before the profiles'
    CreationDate) or a day ago, whichever is earlier, and lasts 12 to 25 years from now."""
    (work / "newcerts").mkdir()
    (work / "index.txt").write_text("")
    config = work / "ca.cnf"
    config.write_text(CA_CONFIG.format(work=work))

    ids = {name: Identity(name, ca_dir) for name in CHAIN}
    procs = [
        subprocess.Popen(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                          "-out", str(i.key)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for i in ids.values()
    ]
    for p in procs:
        if p.wait() != 0:
            sys.exit("openssl genpkey failed: " + p.stderr.read().decode())

    now = dt.datetime.now(UTC).replace(microsecond=0)
    start = min(now - dt.timedelta(days=1), dt.datetime(2026, 1, 1, tzinfo=UTC))

    def stamp(when):
        return when.strftime("%Y%m%d%H%M%SZ")

    for name, (subject, issuer, extensions, years) in CHAIN.items():
        me = ids[name]
        csr = work / f"{name}.csr"
        openssl("req", "-new", "-key", me.key, "-subj", subject, "-utf8", "-out", csr)
        # A random 64-bit serial, as Apple's; the top bits fixed keep it positive and 8 bytes long.
        serial = bytearray(os.urandom(8))
        serial[0] &= 0x7F
        serial[0] |= 0x10
        (work / "serial").write_text(serial.hex() + "\n")
        args = ["ca", "-batch", "-config", config, "-extensions", extensions, "-notext", "-preserveDN", "-utf8",
                "-startdate", stamp(start), "-enddate", stamp(now.replace(year=now.year + years)),
                "-in", csr, "-out", me.crt]
        if issuer is None:
            args += ["-selfsign", "-keyfile", me.key]
        else:
            args += ["-cert", ids[issuer].crt, "-keyfile", ids[issuer].key]
        openssl(*args)
        os.chmod(me.key, 0o600)

    # The certificates a profile carries besides its signer (Apple's carry the iPhone CA and the root).
    chain_pem = ca_dir / "profile-chain.pem"
    chain_pem.write_bytes(ids["iphone-ca"].crt.read_bytes() + ids["root"].crt.read_bytes())
    return ids


# ---------------------------------------------------------------------------------------------------------------
# Provisioning profiles


def xml_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def apple_date(when):
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def profile_xml(p):
    """The plist exactly as Apple's developer portal writes it: its key order, its tabs and its stray blank lines."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
        '<plist version="1.0">',
        "<dict>",
        "\t<key>AppIDName</key>",
        f"\t<string>{xml_escape(p['AppIDName'])}</string>",
        "\t<key>ApplicationIdentifierPrefix</key>",
        "\t<array>",
        *(f"\t<string>{x}</string>" for x in p["ApplicationIdentifierPrefix"]),
        "\t</array>",
        "\t<key>CreationDate</key>",
        f"\t<date>{apple_date(p['CreationDate'])}</date>",
        "\t<key>Platform</key>",
        "\t<array>",
        *(f"\t\t<string>{x}</string>" for x in p["Platform"]),
        "\t</array>",
        "\t<key>IsXcodeManaged</key>",
        "\t<true/>" if p["IsXcodeManaged"] else "\t<false/>",
        "\t<key>DeveloperCertificates</key>",
        "\t<array>",
        *(f"\t\t<data>{base64.b64encode(c).decode()}</data>" for c in p["DeveloperCertificates"]),
        "\t</array>",
        "",
    ]
    if "DER-Encoded-Profile" in p:
        out += ["\t<key>DER-Encoded-Profile</key>",
                f"\t<data>{base64.b64encode(p['DER-Encoded-Profile']).decode()}</data>"]
    out += ["\t" * 14, "\t<key>Entitlements</key>", "\t<dict>"]
    for key, value in p["Entitlements"].items():
        out += ["\t" * 4, f"\t\t\t\t<key>{xml_escape(key)}</key>"]
        if isinstance(value, bool):
            out.append("\t\t<true/>" if value else "\t\t<false/>")
        elif isinstance(value, str):
            out.append(f"\t\t<string>{xml_escape(value)}</string>")
        elif isinstance(value, list) and not value:
            out.append("\t\t<array></array>")
        elif isinstance(value, list):
            out += ["\t\t<array>", *(f"\t\t\t\t<string>{xml_escape(v)}</string>" for v in value), "\t\t</array>"]
        else:
            raise TypeError(value)
    out += ["", "\t</dict>",
            "\t<key>ExpirationDate</key>", f"\t<date>{apple_date(p['ExpirationDate'])}</date>",
            "\t<key>Name</key>", f"\t<string>{xml_escape(p['Name'])}</string>"]
    if "ProvisionedDevices" in p:
        out += ["\t<key>ProvisionedDevices</key>", "\t<array>",
                *(f"\t\t<string>{d}</string>" for d in p["ProvisionedDevices"]), "\t</array>"]
    if p.get("ProvisionsAllDevices"):
        out += ["\t<key>ProvisionsAllDevices</key>", "\t<true/>"]
    out += ["\t<key>TeamIdentifier</key>", "\t<array>", *(f"\t\t<string>{t}</string>" for t in p["TeamIdentifier"]),
            "\t</array>",
            "\t<key>TeamName</key>", f"\t<string>{xml_escape(p['TeamName'])}</string>",
            "\t<key>TimeToLive</key>", f"\t<integer>{p['TimeToLive']}</integer>",
            "\t<key>UUID</key>", f"\t<string>{p['UUID']}</string>",
            "\t<key>Version</key>", f"\t<integer>{p['Version']}</integer>",
            "</dict>", "</plist>"]
    return "\n".join(out).encode()  # Apple's ends without a newline


def der_encoded_profile(p, distribution_type):
    """The DER-Encoded-Profile's content (Apple adds it since 2021): a DER SET OF SEQUENCE { UTF8String key, value },
    certificates as their SHA-256, dates as UTCTime, entitlements in CoreEntitlements' form."""
    def strings(values):
        return der_seq(*(der_utf8(v) for v in values))

    fields = {
        "AppIDName": der_utf8(p["AppIDName"]),
        "ApplicationIdentifierPrefix": strings(p["ApplicationIdentifierPrefix"]),
        "CreationDate": der_utctime(p["CreationDate"]),
        "DeveloperCertificates": der_seq(*(der_octets(hashlib.sha256(c).digest()) for c in p["DeveloperCertificates"])),
        "Entitlements": der_entitlements(p["Entitlements"]),
        "ExpirationDate": der_utctime(p["ExpirationDate"]),
        "IsXcodeManaged": der_bool(p["IsXcodeManaged"]),
        "Name": der_utf8(p["Name"]),
        "Platform": strings(p["Platform"]),
        "ProfileDistributionType": der_utf8(distribution_type),
        "TeamIdentifier": strings(p["TeamIdentifier"]),
        "TeamName": der_utf8(p["TeamName"]),
        "TimeToLive": der_int(p["TimeToLive"]),
        "UUID": der_utf8(p["UUID"]),
        "Version": der_int(p["Version"]),
    }
    if "ProvisionedDevices" in p:
        fields["ProvisionedDevices"] = strings(p["ProvisionedDevices"])
    if p.get("ProvisionsAllDevices"):
        fields["ProvisionsAllDevices"] = der_bool(True)
    return der_set([der_seq(der_utf8(k), v) for k, v in fields.items()])


def cms_sign(content, signer, work, chain=None, stream=False):
    """openssl cms -sign with the content inside (as Apple signs profiles): DER, or BER with indefinite lengths."""
    src = work / "cms-content"
    src.write_bytes(content)
    args = ["cms", "-sign", "-nodetach", "-binary", "-outform", "DER", "-md", "sha256",
            "-signer", signer.crt, "-inkey", signer.key, "-in", src]
    if chain:
        args += ["-certfile", chain]
    if stream:
        args.append("-stream")
    return openssl(*args)


def device_ids(label, count):
    """UDIDs as Apple lists them: the newer 8-16 hex form, and the older 40 hex digits."""
    out = []
    for i in range(count):
        raw = pseudo_random(f"{label}/{i}", 20)
        if i % 3 == 2:
            out.append(raw.hex())
        else:
            chip = ["00008110", "00008030", "00008120"][i % 3]
            out.append(f"{chip}-{raw[:8].hex().upper()}")
    return out


def ios_entitlements(team, bundle, aps=None, get_task_allow=False, beta=False):
    """A profile's Entitlements in the order Apple's portal writes them."""
    ents = {}
    if beta:
        ents["beta-reports-active"] = True
    if aps:
        ents["aps-environment"] = aps
    ents["application-identifier"] = f"{team}.{bundle}"
    ents["keychain-access-groups"] = [f"{team}.*", "com.apple.token"]
    ents["get-task-allow"] = get_task_allow
    ents["com.apple.developer.team-identifier"] = team
    return ents


def make_profile(name, ids, work, *, kind, cert, aps, team=TEAM, team_name=TEAM_NAME, bundle=BUNDLE_ID,
                 app_id_name=APP_NAME, devices=0, created=CREATED, expires=EXPIRES, platform=None,
                 xcode_managed=False, entitlements=None, signer="profile-signing", stream=False):
    distribution_type = {"development": "LIMITED", "ad-hoc": "ADHOC", "app-store": "STORE",
                         "enterprise": "ENTERPRISE"}[kind]
    p = {
        "AppIDName": app_id_name,
        "ApplicationIdentifierPrefix": [team],
        "CreationDate": created,
        "Platform": platform or ["iOS", "xrOS", "visionOS"],
        "IsXcodeManaged": xcode_managed,
        "DeveloperCertificates": [ids[cert].der],
        "Entitlements": entitlements or ios_entitlements(
            team, bundle, aps=aps, get_task_allow=(kind == "development"), beta=(kind == "app-store")),
        "ExpirationDate": expires,
        "Name": name,
        "TeamIdentifier": [team],
        "TeamName": team_name,
        "TimeToLive": (expires - created).days,
        "UUID": fixed_uuid(name),
        "Version": 1,
    }
    if kind in ("development", "ad-hoc"):
        p["ProvisionedDevices"] = device_ids(name, devices)
    if kind == "enterprise":
        p["ProvisionsAllDevices"] = True
    if signer == "profile-signing":
        p["DER-Encoded-Profile"] = cms_sign(der_encoded_profile(p, distribution_type), ids["profile-signing"], work,
                                            chain=ids["root"].crt.parent / "profile-chain.pem")
        return p, cms_sign(profile_xml(p), ids["profile-signing"], work,
                           chain=ids["root"].crt.parent / "profile-chain.pem", stream=stream)
    return p, cms_sign(profile_xml(p), ids[signer], work)


# ---------------------------------------------------------------------------------------------------------------
# Code signatures

CSMAGIC_REQUIREMENT = 0xFADE0C00
CSMAGIC_REQUIREMENTS = 0xFADE0C01
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_EMBEDDED_ENTITLEMENTS = 0xFADE7171
CSMAGIC_EMBEDDED_DER_ENTITLEMENTS = 0xFADE7172
CSMAGIC_BLOBWRAPPER = 0xFADE0B01
CSSLOT_CODEDIRECTORY, CSSLOT_REQUIREMENTS, CSSLOT_ENTITLEMENTS, CSSLOT_DER_ENTITLEMENTS = 0, 2, 5, 7
CSSLOT_SIGNATURESLOT = 0x10000
CS_ADHOC = 0x2
CS_EXECSEG_MAIN_BINARY, CS_EXECSEG_ALLOW_UNSIGNED = 0x1, 0x10
PAGE_SHIFT = 12

OID_DATA = "1.2.840.113549.1.7.1"
OID_SIGNED_DATA = "1.2.840.113549.1.7.2"
OID_SHA256 = "2.16.840.1.101.3.4.2.1"
OID_SHA256_RSA = "1.2.840.113549.1.1.11"
OID_CONTENT_TYPE = "1.2.840.113549.1.9.3"
OID_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
OID_SIGNING_TIME = "1.2.840.113549.1.9.5"
OID_APPLE_CDHASHES_PLIST = "1.2.840.113635.100.9.1"
OID_APPLE_CDHASHES = "1.2.840.113635.100.9.2"
OID_APPLE_WWDR_MARKER = "1.2.840.113635.100.6.2.1"


def blob(magic, payload):
    return struct.pack(">II", magic, 8 + len(payload)) + payload


def req_data(data):
    return struct.pack(">I", len(data)) + data + b"\0" * (-len(data) % 4)


def designated_requirements(identifier, leaf_cn):
    """Xcode's designated requirement, compiled: identifier "ID" and anchor apple generic and
    certificate leaf[subject.CN] = "CN" and certificate 1[field.1.2.840.113635.100.6.2.1] /* exists */"""
    op = lambda n: struct.pack(">I", n)  # noqa: E731
    expr = (op(6) + op(2) + req_data(identifier.encode())  # opAnd, opIdent
            + op(6) + op(15)  # opAnd, opAppleGenericAnchor
            + op(6) + op(11) + op(0) + req_data(b"subject.CN") + op(1) + req_data(leaf_cn.encode())  # opCertField
            + op(14) + op(1) + req_data(oid_body(OID_APPLE_WWDR_MARKER)) + op(0))  # opCertGeneric, matchExists
    requirement = struct.pack(">III", CSMAGIC_REQUIREMENT, 12 + len(expr), 1) + expr
    return struct.pack(">IIIII", CSMAGIC_REQUIREMENTS, 20 + len(requirement), 1, 3, 20) + requirement


def empty_requirements():
    return struct.pack(">III", CSMAGIC_REQUIREMENTS, 12, 0)


def code_directory(identifier, team, code, specials, exec_seg_limit, exec_seg_flags, flags):
    """CodeDirectory version 0x20400 (with the executable-segment fields), SHA-256, 4 KiB pages, 7 special slots."""
    n_special = 7
    ident = identifier.encode() + b"\0"
    team_bytes = team.encode() + b"\0" if team else b""
    ident_offset = 88
    team_offset = ident_offset + len(ident) if team else 0
    hash_offset = ident_offset + len(ident) + len(team_bytes) + n_special * 32
    pages = [hashlib.sha256(code[i : i + (1 << PAGE_SHIFT)]).digest() for i in range(0, len(code), 1 << PAGE_SHIFT)]
    length = hash_offset + 32 * len(pages)
    header = struct.pack(
        ">9I4B4I4Q",
        CSMAGIC_CODEDIRECTORY, length, 0x20400, flags, hash_offset, ident_offset, n_special, len(pages), len(code),
        32, 2, 0, PAGE_SHIFT,  # hashSize, hashType SHA-256, platform, pageSize
        0, 0, team_offset, 0,  # spare2, scatterOffset, teamOffset, spare3
        0, 0, exec_seg_limit, exec_seg_flags)  # codeLimit64, execSegBase, execSegLimit, execSegFlags
    special = b"".join(specials.get(slot, b"\0" * 32) for slot in range(n_special, 0, -1))
    cd = header + ident + team_bytes + special + b"".join(pages)
    assert len(cd) == length
    return cd


def code_signing_cms(cd, signer, chain, sign=None):
    """The CMS SignedData codesign makes: detached, over the CodeDirectory, with Apple's two signed attributes
    listing the CodeDirectory hashes (1.2.840.113635.100.9.1, a plist; 1.2.840.113635.100.9.2, hash agility)."""
    cdhash = hashlib.sha256(cd).digest()
    cdhashes_plist = plistlib.dumps({"cdhashes": [cdhash[:20]]}, fmt=plistlib.FMT_XML)
    attributes = [
        der_seq(der_oid(OID_CONTENT_TYPE), der_set([der_oid(OID_DATA)])),
        der_seq(der_oid(OID_SIGNING_TIME), der_set([der_utctime(SIGNED)])),
        der_seq(der_oid(OID_MESSAGE_DIGEST), der_set([der_octets(cdhash)])),
        der_seq(der_oid(OID_APPLE_CDHASHES), der_set([der_seq(der_oid(OID_SHA256), der_octets(cdhash))])),
        der_seq(der_oid(OID_APPLE_CDHASHES_PLIST), der_set([der_octets(cdhashes_plist)])),
    ]
    signed_attributes = der_set(attributes)
    signature = sign(signed_attributes) if sign else openssl("dgst", "-sha256", "-sign", signer.key,
                                                             stdin=signed_attributes)
    issuer, serial = cert_issuer_and_serial(signer.der)
    sha256 = der_seq(der_oid(OID_SHA256), der_null())
    signer_info = der_seq(
        der_int(1), der_seq(issuer, serial), sha256,
        b"\xa0" + signed_attributes[1:],  # [0] IMPLICIT SET OF Attribute
        der_seq(der_oid(OID_SHA256_RSA), der_null()),
        der_octets(signature))
    certificates = b"".join(sorted([c.der for c in chain] + [signer.der]))
    signed_data = der_seq(der_int(1), der_set([sha256]), der_seq(der_oid(OID_DATA)), tlv(0xA0, certificates),
                          der_set([signer_info]))
    return der_seq(der_oid(OID_SIGNED_DATA), tlv(0xA0, signed_data))


class Signing:
    """What one code signature says. signer None signs ad hoc (codesign -s -: no team, empty requirements, an
    empty CMS wrapper)."""

    def __init__(self, identifier, team, entitlements, signer=None, chain=(), info_plist=None,
                 code_resources=None, der_override=None, legacy_der=False):
        self.identifier = identifier
        self.team = team if signer else None
        self.entitlements = entitlements
        self.signer = signer
        self.chain = list(chain)
        self.info_plist = info_plist
        self.code_resources = code_resources
        xml = plistlib.dumps(entitlements, fmt=plistlib.FMT_XML)
        der_source = der_override if der_override is not None else entitlements
        der = legacy_der_entitlements(der_source) if legacy_der else der_entitlements(der_source)
        self.entitlements_blob = blob(CSMAGIC_EMBEDDED_ENTITLEMENTS, xml)
        self.der_blob = blob(CSMAGIC_EMBEDDED_DER_ENTITLEMENTS, der)
        if signer:
            self.requirements = designated_requirements(identifier, signer.common_name)
        else:
            self.requirements = empty_requirements()

    def superblob(self, code, exec_seg_limit, sign=None):
        get_task_allow = bool(self.entitlements.get("get-task-allow"))
        specials = {
            2: hashlib.sha256(self.requirements).digest(),
            5: hashlib.sha256(self.entitlements_blob).digest(),
            7: hashlib.sha256(self.der_blob).digest(),
        }
        if self.info_plist is not None:
            specials[1] = hashlib.sha256(self.info_plist).digest()
        if self.code_resources is not None:
            specials[3] = hashlib.sha256(self.code_resources).digest()
        flags = 0 if self.signer else CS_ADHOC
        exec_flags = CS_EXECSEG_MAIN_BINARY | (CS_EXECSEG_ALLOW_UNSIGNED if get_task_allow else 0)
        cd = code_directory(self.identifier, self.team, code, specials, exec_seg_limit, exec_flags, flags)
        cms = code_signing_cms(cd, self.signer, self.chain, sign) if self.signer else b""
        blobs = [
            (CSSLOT_CODEDIRECTORY, cd),
            (CSSLOT_REQUIREMENTS, self.requirements),
            (CSSLOT_ENTITLEMENTS, self.entitlements_blob),
            (CSSLOT_DER_ENTITLEMENTS, self.der_blob),
            (CSSLOT_SIGNATURESLOT, blob(CSMAGIC_BLOBWRAPPER, cms)),
        ]
        offset = 12 + 8 * len(blobs)
        index = b""
        body = b""
        for slot, data in blobs:
            index += struct.pack(">II", slot, offset + len(body))
            body += data
        return struct.pack(">III", CSMAGIC_EMBEDDED_SIGNATURE, offset + len(body), len(blobs)) + index + body

    def reserved_size(self, code_length, exec_seg_limit):
        """Space for the signature, known before the page hashes are (they cover the header that records it):
        the SuperBlob built with a dummy RSA-2048 signature is exactly as long as the real one. Like codesign,
        reserve more than that; the rest stays zero."""
        dummy = self.superblob(b"\0" * code_length, exec_seg_limit, sign=lambda _: b"\0" * 256)
        return (len(dummy) + 512 + 15) & ~15


# Mach-O

CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007
ARCHES = {
    "arm64": (CPU_ARM64, 0, bytes.fromhex("00008052c0035fd6"), 2, 2),  # mov w0, #0; ret   (platform iOS)
    "x86_64": (CPU_X86_64, 3, bytes.fromhex("31c0c3"), 4, 7),  # xor eax, eax; ret (platform iOS simulator)
}
SEGMENT_SIZE = 0x4000
TEXT_VMADDR = 0x100000000
LC_SEGMENT_64, LC_SYMTAB, LC_DYSYMTAB, LC_LOAD_DYLINKER, LC_UUID = 0x19, 0x2, 0xB, 0xE, 0x1B
LC_LOAD_DYLIB, LC_CODE_SIGNATURE, LC_BUILD_VERSION, LC_MAIN = 0xC, 0x1D, 0x32, 0x80000028
MH_FLAGS = 0x00200085  # NOUNDEFS | DYLDLINK | TWOLEVEL | PIE


def pad8(data):
    return data + b"\0" * (-len(data) % 8)


def section64(sectname, segname, addr, size, offset, align, flags):
    return struct.pack("<16s16sQQIIIIIIII", sectname.encode(), segname.encode(), addr, size, offset, align, 0, 0,
                       flags, 0, 0, 0)


def segment64(name, vmaddr, vmsize, fileoff, filesize, maxprot, initprot, sections=()):
    return struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72 + 80 * len(sections), name.encode(), vmaddr, vmsize,
                       fileoff, filesize, maxprot, initprot, len(sections), 0) + b"".join(sections)


def macho(arch, label, signing=None):
    """A minimal well-formed MH_EXECUTE: __PAGEZERO, __TEXT (one 16 KiB page, code and strings at its end, as ld
    places them), __LINKEDIT (a one-symbol table, then the code signature), the usual dyld load commands."""
    cputype, cpusubtype, code, code_align, platform = ARCHES[arch]
    strings = f"{APP_NAME}\0{BUNDLE_ID}\0".encode()
    text_offset = SEGMENT_SIZE - 0x100
    cstring_offset = text_offset + 0x40
    symtab_offset = SEGMENT_SIZE
    string_table = pad8(b" \0__mh_execute_header\0")
    linkedit_used = 16 + len(string_table)
    signature_offset = (SEGMENT_SIZE + linkedit_used + 15) & ~15

    def commands(linkedit_filesize, signature_size):
        text = segment64("__TEXT", TEXT_VMADDR, SEGMENT_SIZE, 0, SEGMENT_SIZE, 5, 5, [
            section64("__text", "__TEXT", TEXT_VMADDR + text_offset, len(code), text_offset, code_align,
                      0x80000400),
            section64("__cstring", "__TEXT", TEXT_VMADDR + cstring_offset, len(strings), cstring_offset, 0, 0x2),
        ])
        linkedit_vmsize = (linkedit_filesize + SEGMENT_SIZE - 1) // SEGMENT_SIZE * SEGMENT_SIZE
        dylinker = pad8(struct.pack("<III", LC_LOAD_DYLINKER, 0, 12) + b"/usr/lib/dyld\0")
        dylib = pad8(struct.pack("<IIIIII", LC_LOAD_DYLIB, 0, 24, 2, (1345 << 16) | (100 << 8) | 2, 1 << 16)
                     + b"/usr/lib/libSystem.B.dylib\0")
        cmds = [
            segment64("__PAGEZERO", 0, TEXT_VMADDR, 0, 0, 0, 0),
            text,
            segment64("__LINKEDIT", TEXT_VMADDR + SEGMENT_SIZE, linkedit_vmsize, SEGMENT_SIZE, linkedit_filesize,
                      1, 1),
            struct.pack("<IIIIII", LC_SYMTAB, 24, symtab_offset, 1, symtab_offset + 16, len(string_table)),
            struct.pack("<II18I", LC_DYSYMTAB, 80, 0, 0, 0, 1, 1, 0, *([0] * 12)),
            dylinker[:4] + struct.pack("<I", len(dylinker)) + dylinker[8:],
            struct.pack("<II", LC_UUID, 24) + uuid.uuid5(UUID_NAMESPACE, f"{label}/{arch}").bytes,
            struct.pack("<IIIIIIII", LC_BUILD_VERSION, 32, platform, 16 << 16, (18 << 16) | (2 << 8), 1, 3,
                        (1115 << 16) | (7 << 8) | 3),  # minos 16.0, sdk 18.2, ld 1115.7.3
            struct.pack("<IIQQ", LC_MAIN, 24, text_offset, 0),
            dylib[:4] + struct.pack("<I", len(dylib)) + dylib[8:],
        ]
        if signature_size:
            cmds.append(struct.pack("<IIII", LC_CODE_SIGNATURE, 16, signature_offset, signature_size))
        return cmds

    def assemble(linkedit_filesize, signature_size):
        cmds = commands(linkedit_filesize, signature_size)
        header = struct.pack("<IiiIIIII", 0xFEEDFACF, cputype, cpusubtype, 2, len(cmds), sum(map(len, cmds)),
                             MH_FLAGS, 0)
        out = bytearray(SEGMENT_SIZE)
        head = header + b"".join(cmds)
        assert len(head) <= text_offset
        out[: len(head)] = head
        out[text_offset : text_offset + len(code)] = code
        out[cstring_offset : cstring_offset + len(strings)] = strings
        # __LINKEDIT: the symbol table (__mh_execute_header, external, in section 1) and its strings
        out += struct.pack("<IBBHQ", 2, 0x0F, 1, 0x10, TEXT_VMADDR) + string_table
        return out

    if signing is None:
        return bytes(assemble(linkedit_used, 0))
    reserved = signing.reserved_size(signature_offset, SEGMENT_SIZE)
    out = assemble(signature_offset - SEGMENT_SIZE + reserved, reserved)
    out += b"\0" * (signature_offset - len(out))
    superblob = signing.superblob(bytes(out), SEGMENT_SIZE)
    assert len(superblob) <= reserved, (len(superblob), reserved)
    return bytes(out + superblob + b"\0" * (reserved - len(superblob)))


def fat(slices):
    """A universal binary: big-endian fat header, each slice at a 2^14 boundary."""
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    offset = SEGMENT_SIZE
    entries = b""
    body = b""
    for arch, data in slices:
        cputype, cpusubtype = ARCHES[arch][:2]
        entries += struct.pack(">iiIII", cputype, cpusubtype, offset, len(data), 14)
        gap = offset - SEGMENT_SIZE - len(body)
        body += b"\0" * gap + data
        offset = (offset + len(data) + SEGMENT_SIZE - 1) // SEGMENT_SIZE * SEGMENT_SIZE
    head = header + entries
    return head + b"\0" * (SEGMENT_SIZE - len(head)) + body


def superblob_range(thin):
    """(offset, SuperBlob length) of a thin Mach-O's code signature."""
    ncmds = struct.unpack_from("<I", thin, 16)[0]
    offset = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", thin, offset)
        if cmd == LC_CODE_SIGNATURE:
            dataoff = struct.unpack_from("<I", thin, offset + 8)[0]
            return dataoff, struct.unpack_from(">I", thin, dataoff + 4)[0]
        offset += size
    raise ValueError("no LC_CODE_SIGNATURE")


# ---------------------------------------------------------------------------------------------------------------
# Bundles

CODE_RESOURCES_RULES = {
    "rules": {
        "^.*": True,
        "^.*\\.lproj/": {"optional": True, "weight": 1000.0},
        "^.*\\.lproj/locversion.plist$": {"omit": True, "weight": 1100.0},
        "^Base\\.lproj/": {"weight": 1010.0},
        "^version.plist$": True,
    },
    "rules2": {
        ".*\\.dSYM($|/)": {"weight": 11.0},
        "^(.*/)?\\.DS_Store$": {"omit": True, "weight": 2000.0},
        "^.*": True,
        "^.*\\.lproj/": {"optional": True, "weight": 1000.0},
        "^.*\\.lproj/locversion.plist$": {"omit": True, "weight": 1100.0},
        "^Base\\.lproj/": {"weight": 1010.0},
        "^Info\\.plist$": {"omit": True, "weight": 20.0},
        "^PkgInfo$": {"omit": True, "weight": 20.0},
        "^embedded\\.provisionprofile$": {"weight": 20.0},
        "^version\\.plist$": {"weight": 20.0},
    },
}


def code_resources(files):
    """_CodeSignature/CodeResources for a bundle whose other files (main executable aside) are `files`
    (relative path -> bytes): SHA-1 under "files", SHA-256 "hash2" under "files2", which omits the top-level
    Info.plist and PkgInfo (the CodeDirectory's special slots cover Info.plist)."""
    return plistlib.dumps({
        "files": {path: hashlib.sha1(data).digest() for path, data in files.items()},
        "files2": {path: {"hash2": hashlib.sha256(data).digest()}
                   for path, data in files.items() if path not in ("Info.plist", "PkgInfo")},
        **CODE_RESOURCES_RULES,
    }, fmt=plistlib.FMT_XML)


def app_info_plist(bundle):
    return plistlib.dumps({
        "BuildMachineOSBuild": "24C101",
        "CFBundleDevelopmentRegion": "nl",
        "CFBundleDisplayName": APP_NAME,
        "CFBundleExecutable": APP_NAME,
        "CFBundleIdentifier": bundle,
        "CFBundleInfoDictionaryVersion": "6.0",
        "CFBundleName": APP_NAME,
        "CFBundlePackageType": "APPL",
        "CFBundleShortVersionString": SHORT_VERSION,
        "CFBundleSupportedPlatforms": ["iPhoneOS"],
        "CFBundleVersion": BUILD_NUMBER,
        "DTCompiler": "com.apple.compilers.llvm.clang.1_0",
        "DTPlatformBuild": "22C146",
        "DTPlatformName": "iphoneos",
        "DTPlatformVersion": "18.2",
        "DTSDKBuild": "22C146",
        "DTSDKName": "iphoneos18.2",
        "DTXcode": "1620",
        "DTXcodeBuild": "16C5032a",
        "LSRequiresIPhoneOS": True,
        "MinimumOSVersion": "16.0",
        "UIBackgroundModes": ["remote-notification"],
        "UIDeviceFamily": [1],
        "UILaunchScreen": {},
        "UIRequiredDeviceCapabilities": ["arm64"],
        "UISupportedInterfaceOrientations": ["UIInterfaceOrientationPortrait"],
    }, fmt=plistlib.FMT_BINARY)


def extension_info_plist():
    return plistlib.dumps({
        "BuildMachineOSBuild": "24C101",
        "CFBundleDevelopmentRegion": "nl",
        "CFBundleDisplayName": "NotificationService",
        "CFBundleExecutable": "NotificationService",
        "CFBundleIdentifier": EXTENSION_BUNDLE_ID,
        "CFBundleInfoDictionaryVersion": "6.0",
        "CFBundleName": "NotificationService",
        "CFBundlePackageType": "XPC!",
        "CFBundleShortVersionString": SHORT_VERSION,
        "CFBundleSupportedPlatforms": ["iPhoneOS"],
        "CFBundleVersion": BUILD_NUMBER,
        "DTCompiler": "com.apple.compilers.llvm.clang.1_0",
        "DTPlatformBuild": "22C146",
        "DTPlatformName": "iphoneos",
        "DTPlatformVersion": "18.2",
        "DTSDKBuild": "22C146",
        "DTSDKName": "iphoneos18.2",
        "DTXcode": "1620",
        "DTXcodeBuild": "16C5032a",
        "MinimumOSVersion": "16.0",
        "NSExtension": {
            "NSExtensionPointIdentifier": "com.apple.usernotifications.service",
            "NSExtensionPrincipalClass": "NotificationService.NotificationService",
        },
        "UIDeviceFamily": [1],
        "UIRequiredDeviceCapabilities": ["arm64"],
    }, fmt=plistlib.FMT_BINARY)


def exe_entitlements(team, bundle, aps, get_task_allow, beta=False):
    """Entitlements as Xcode signs them into the executable (its .xcent: the profile's, narrowed to the app)."""
    ents = {"application-identifier": f"{team}.{bundle}", "com.apple.developer.team-identifier": team,
            "get-task-allow": get_task_allow, "keychain-access-groups": [f"{team}.{bundle}"]}
    if aps:
        ents["aps-environment"] = aps
    if beta:
        ents["beta-reports-active"] = True
    return ents


class Bundle:
    """An .app or .appex: its files in the order Xcode's export zips them (path, bytes or None for a folder,
    mode)."""

    def __init__(self, executable_name, info_plist, profile, signing, arches=("arm64",), plugins=(), label="app"):
        files = {"embedded.mobileprovision": profile, "Info.plist": info_plist}
        if executable_name == APP_NAME:
            files["PkgInfo"] = b"APPL????"
        for plugin_name, plugin in plugins:
            for path, data, _ in plugin.entries:
                if data is not None:
                    files[f"PlugIns/{plugin_name}/{path}"] = data
        resources = code_resources(files)
        signing.info_plist = info_plist
        signing.code_resources = resources
        slices = [(arch, macho(arch, label, signing)) for arch in arches]
        self.executable = slices[0][1] if len(slices) == 1 else fat(slices)
        self.info_plist = info_plist
        self.entitlements = signing.entitlements
        self.arches = list(arches)
        entries = [("_CodeSignature/", None, 0o40755), ("_CodeSignature/CodeResources", resources, 0o100644),
                   (executable_name, self.executable, 0o100755)]
        if plugins:
            entries.append(("PlugIns/", None, 0o40755))
            for plugin_name, plugin in plugins:
                entries.append((f"PlugIns/{plugin_name}/", None, 0o40755))
                entries += [(f"PlugIns/{plugin_name}/{p}", d, m) for p, d, m in plugin.entries]
        entries.append(("embedded.mobileprovision", profile, 0o100644))
        entries.append(("Info.plist", info_plist, 0o100644))
        if "PkgInfo" in files:
            entries.append(("PkgInfo", files["PkgInfo"], 0o100644))
        self.entries = entries

    def write(self, folder):
        folder.mkdir(parents=True, exist_ok=True)
        for path, data, mode in self.entries:
            target = folder / path
            if data is None:
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod(mode & 0o777)

    def zip_members(self, prefix):
        return [(f"{prefix}{path}", data, mode) for path, data, mode in self.entries]


# ---------------------------------------------------------------------------------------------------------------
# Zip


def dos_time(t):
    year, month, day, hour, minute, second = t
    return (hour << 11) | (minute << 5) | (second // 2), ((year - 1980) << 9) | (month << 5) | day


class Member:
    """A zip member. raw (deflate stream, crc, uncompressed size) writes a precompressed stream as is;
    claimed_size puts a different uncompressed size in both headers."""

    def __init__(self, name, data=None, mode=0o100644, raw=None, claimed_size=None):
        self.name = name
        self.mode = mode
        if data is None and raw is None:  # a folder
            self.method, self.payload, self.crc, self.size = 0, b"", 0, 0
        elif raw is not None:
            self.method = 8
            self.payload, self.crc, self.size = raw
        else:
            compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
            self.method = 8
            self.payload = compressor.compress(data) + compressor.flush()
            self.crc, self.size = zlib.crc32(data), len(data)
        if claimed_size is not None:
            self.size = claimed_size


def write_zip(path, members):
    """A zip as Xcode's export writes an .ipa: Unix attributes, folders stored, files deflated."""
    time, date = dos_time(ZIP_TIME)
    out = bytearray()
    central = bytearray()
    for m in members:
        name = m.name.encode()
        version = 20 if m.method == 8 else 10
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, 0, m.method, time, date, m.crc, len(m.payload),
                           m.size, len(name), 0) + name + m.payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 21, version, 0, m.method, time, date,
                               m.crc, len(m.payload), m.size, len(name), 0, 0, 0, 0, m.mode << 16, offset) + name
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                                 len(out), 0)
    path.write_bytes(bytes(out))
    return bytes(out)


def ipa_members(bundle, app_folder=f"Payload/{APP_NAME}.app/"):
    members = [Member("Payload/", mode=0o40755), Member(app_folder, mode=0o40755)]
    members += [Member(name, data, mode) for name, data, mode in bundle.zip_members(app_folder)]
    return members


def deflated_zeros(total, chunk=16 << 20):
    """A raw deflate stream of `total` zero bytes, made without holding them: one chunk is compressed with a full
    flush (which resets the compressor, so every chunk compresses to the same bytes) and repeated."""
    assert total % chunk == 0
    zeros = bytes(chunk)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(total // chunk):
        crc = zlib.crc32(zeros, crc)
    return piece * (total // chunk) + tail, crc, total


# ---------------------------------------------------------------------------------------------------------------
# The outputs


def all_outputs_exist():
    sentinels = [
        "ca/root.crt", "ca/stranger.crt", "profiles/development.mobileprovision",
        "profiles/macos-development.provisionprofile", "profiles/truncated.mobileprovision",
        "executables/fat-production", "executables/not-macho", f"apps/development/{APP_NAME}.app/Info.plist",
        "ipas/with-extension.ipa", "ipas/zip-bomb.ipa", "ipas/truncated.ipa",
        f"archives/{APP_NAME}.xcarchive/Info.plist", "export/DistributionSummary.plist",
        "entitlements/KantineKoning-binary.entitlements",
    ]
    return all((HERE / s).exists() for s in sentinels)


def main():
    force = sys.argv[1:] == ["-f"]
    if sys.argv[1:] not in ([], ["-f"]):
        sys.exit(__doc__)
    if not force and all_outputs_exist():
        print("Certificates/builds/ is complete; use -f to regenerate.")
        return
    for name in OUTPUT_DIRS:
        shutil.rmtree(HERE / name, ignore_errors=True)
        (HERE / name).mkdir()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("== CA chain ==")
        ids = make_chain(HERE / "ca", work)
        generate(ids, work)
    print("== done ==")


def generate(ids, work):
    profiles, executables, ipas = HERE / "profiles", HERE / "executables", HERE / "ipas"
    code_chain = [ids["wwdr"], ids["root"]]

    print("== provisioning profiles ==")
    made = {}

    def profile(filename, name, **kw):
        content, data = make_profile(name, ids, work, **kw)
        if filename:
            (profiles / filename).write_bytes(data)
        made[filename or name] = (content, data)
        return data

    development = profile("development.mobileprovision", "Kantine Koning Development", kind="development",
                          cert="apple-development", aps="development", devices=3)
    adhoc = profile("adhoc.mobileprovision", "Kantine Koning Ad Hoc", kind="ad-hoc", cert="apple-distribution",
                    aps="production", devices=2)
    appstore = profile("appstore.mobileprovision", "Kantine Koning App Store", kind="app-store",
                       cert="apple-distribution", aps="production")
    enterprise = profile(
        "enterprise.mobileprovision", f"iOS Team Inhouse Provisioning Profile: {ENTERPRISE_BUNDLE_ID}",
        kind="enterprise", cert="iphone-distribution-enterprise", aps="production", team=ENTERPRISE_TEAM,
        team_name=ENTERPRISE_TEAM_NAME, bundle=ENTERPRISE_BUNDLE_ID, xcode_managed=True)
    profile("appstore-no-push.mobileprovision", "Kantine Koning App Store No Push", kind="app-store",
            cert="apple-distribution", aps=None)
    profile("expired.mobileprovision", "Kantine Koning Development 2023", kind="development",
            cert="apple-development", aps="development", devices=3,
            created=dt.datetime(2023, 1, 15, 9, 30, 0, tzinfo=UTC),
            expires=dt.datetime(2024, 1, 15, 9, 30, 0, tzinfo=UTC))
    # Same plist as appstore.mobileprovision, signed again as a BER stream (indefinite lengths, chunked content).
    appstore_plist = made["appstore.mobileprovision"][0]
    (profiles / "appstore-ber.mobileprovision").write_bytes(
        cms_sign(profile_xml(appstore_plist), ids["profile-signing"], work, chain=HERE / "ca" / "profile-chain.pem",
                 stream=True))
    # The very plist of development.mobileprovision, signed by the self-signed Stranger.
    (profiles / "untrusted-signer.mobileprovision").write_bytes(
        cms_sign(profile_xml(made["development.mobileprovision"][0]), ids["stranger"], work))
    # One character of the first device's UDID changed after signing: still a plist, no longer Apple's.
    udid = made["development.mobileprovision"][0]["ProvisionedDevices"][0].encode()
    at = development.index(b"<string>" + udid) + len(b"<string>") + len(udid) - 1
    tampered = bytearray(development)
    tampered[at] = ord("0") if tampered[at] != ord("0") else ord("1")
    (profiles / "tampered.mobileprovision").write_bytes(bytes(tampered))
    (profiles / "truncated.mobileprovision").write_bytes(development[: len(development) * 40 // 100])
    profile("macos-development.provisionprofile", "Kantine Koning macOS Development", kind="development",
            cert="apple-development", aps=None, devices=1, platform=["OSX"], entitlements={
                "com.apple.developer.aps-environment": "development",
                "com.apple.application-identifier": f"{TEAM}.{BUNDLE_ID}",
                "keychain-access-groups": [f"{TEAM}.*"],
                "com.apple.developer.team-identifier": TEAM,
            })
    extension_profile = profile(
        "appstore-notificationservice.mobileprovision", "Kantine Koning NotificationService App Store",
        kind="app-store", cert="apple-distribution", aps=None, bundle=EXTENSION_BUNDLE_ID,
        app_id_name="Kantine Koning NotificationService")

    print("== apps and executables ==")
    dev_ents = exe_entitlements(TEAM, BUNDLE_ID, "development", True)
    adhoc_ents = exe_entitlements(TEAM, BUNDLE_ID, "production", False)
    store_ents = exe_entitlements(TEAM, BUNDLE_ID, "production", False, beta=True)

    def signing(ents, signer, identifier=BUNDLE_ID, team=TEAM, **kw):
        return Signing(identifier, team, ents, ids[signer], code_chain, **kw)

    info = app_info_plist(BUNDLE_ID)
    dev_app = Bundle(APP_NAME, info, development, signing(dev_ents, "apple-development"), label="development")
    adhoc_app = Bundle(APP_NAME, info, adhoc, signing(adhoc_ents, "apple-distribution"), arches=("arm64", "x86_64"),
                       label="adhoc")
    store_app = Bundle(APP_NAME, info, appstore, signing(store_ents, "apple-distribution"), label="appstore")
    enterprise_app = Bundle(
        APP_NAME, app_info_plist(ENTERPRISE_BUNDLE_ID), enterprise,
        signing(exe_entitlements(ENTERPRISE_TEAM, ENTERPRISE_BUNDLE_ID, "production", False),
                "iphone-distribution-enterprise", identifier=ENTERPRISE_BUNDLE_ID, team=ENTERPRISE_TEAM),
        label="enterprise")
    # The development profile, and an executable (signed with the development certificate, as the profile
    # allows) whose entitlements say production.
    disagree_app = Bundle(APP_NAME, info, development,
                          signing({**dev_ents, "aps-environment": "production"}, "apple-development"),
                          label="disagree")
    extension = Bundle(
        "NotificationService", extension_info_plist(), extension_profile,
        signing(exe_entitlements(TEAM, EXTENSION_BUNDLE_ID, None, False, beta=True), "apple-distribution",
                identifier=EXTENSION_BUNDLE_ID),
        label="notificationservice")
    extension_app = Bundle(APP_NAME, info, appstore, signing(store_ents, "apple-distribution"),
                           plugins=[("NotificationService.appex", extension)], label="with-extension")

    dev_app.write(HERE / "apps" / "development" / f"{APP_NAME}.app")
    (executables / "thin-development").write_bytes(dev_app.executable)
    (executables / "thin-production").write_bytes(store_app.executable)
    (executables / "fat-production").write_bytes(adhoc_app.executable)
    (executables / "unsigned").write_bytes(macho("arm64", "unsigned"))
    dev_context = {"info_plist": info, "code_resources": made_resources(dev_app)}
    (executables / "entitlements-disagree").write_bytes(macho("arm64", "entitlements-disagree", signing(
        dev_ents, "apple-development", der_override={**dev_ents, "aps-environment": "production"}, **dev_context)))
    (executables / "thin-development-legacy-der").write_bytes(macho("arm64", "legacy-der", signing(
        dev_ents, "apple-development", legacy_der=True, **dev_context)))
    (executables / "adhoc-signed").write_bytes(macho("arm64", "adhoc-signed", Signing(
        BUNDLE_ID, None, dev_ents)))
    dataoff, length = superblob_range(store_app.executable)
    (executables / "truncated").write_bytes(store_app.executable[: dataoff + length // 2])
    (executables / "not-macho").write_bytes(
        b"#!/bin/sh\n# Kantine Koning: a shell script where an executable was expected. Not a Mach-O file.\n"
        b"echo 'Kantine Koning'\n")
    os.chmod(executables / "not-macho", 0o755)
    for f in executables.iterdir():
        if f.name != "not-macho":
            f.chmod(0o755)

    print("== ipas ==")
    write_zip(ipas / "development.ipa", ipa_members(dev_app))
    write_zip(ipas / "adhoc.ipa", ipa_members(adhoc_app))
    appstore_ipa = write_zip(ipas / "appstore.ipa", ipa_members(store_app))
    write_zip(ipas / "enterprise.ipa", ipa_members(enterprise_app))
    write_zip(ipas / "disagree.ipa", ipa_members(disagree_app))
    write_zip(ipas / "with-extension.ipa", ipa_members(extension_app))
    # Hostile ones.
    app_folder = f"Payload/{APP_NAME}.app/"

    def with_info_plist(member):
        return [member if m.name == app_folder + "Info.plist" else m for m in ipa_members(store_app)]

    write_zip(ipas / "zip-bomb.ipa", with_info_plist(Member(app_folder + "Info.plist", raw=deflated_zeros(1 << 30))))
    write_zip(ipas / "lying-size.ipa", with_info_plist(
        Member(app_folder + "Info.plist", raw=deflated_zeros(50 << 20, chunk=1 << 20), claimed_size=200)))
    # The .app zipped without the Payload/ folder around it.
    write_zip(ipas / "no-payload.ipa", [Member(f"{APP_NAME}.app/", mode=0o40755)]
              + [Member(name, data, mode) for name, data, mode in store_app.zip_members(f"{APP_NAME}.app/")])
    (ipas / "not-a-zip.ipa").write_bytes(pseudo_random("not-a-zip", 4096))
    (ipas / "truncated.ipa").write_bytes(appstore_ipa[: len(appstore_ipa) // 2])

    print("== archive, export, entitlements ==")
    archive = HERE / "archives" / f"{APP_NAME}.xcarchive"
    extension_app.write(archive / "Products" / "Applications" / f"{APP_NAME}.app")
    signing_identity = ids["apple-distribution"].common_name
    (archive / "Info.plist").write_bytes(plistlib.dumps({
        "ApplicationProperties": {
            "ApplicationPath": f"Applications/{APP_NAME}.app",
            "Architectures": ["arm64"],
            "CFBundleIdentifier": BUNDLE_ID,
            "CFBundleShortVersionString": SHORT_VERSION,
            "CFBundleVersion": BUILD_NUMBER,
            "SigningIdentity": signing_identity,
            "Team": TEAM,
        },
        "ArchiveVersion": 2,
        "CreationDate": ARCHIVED.replace(tzinfo=None),
        "Name": APP_NAME,
        "SchemeName": "Release Testing",
    }, fmt=plistlib.FMT_XML))

    distribution = ids["apple-distribution"]
    expires = distribution.not_after
    certificate = {"SHA1": hashlib.sha1(distribution.der).hexdigest().upper(),
                   "dateExpires": f"{expires.month}/{expires.day}/{expires:%y}", "type": "Apple Distribution"}
    team = {"id": TEAM, "name": TEAM_NAME}

    def summary(bundle_name, profile_key, ents, arches, embedded=None):
        p = made[profile_key][0]
        entry = {"architectures": arches, "buildNumber": BUILD_NUMBER, "certificate": certificate}
        if embedded is not None:
            entry["embeddedBinaries"] = embedded
        entry.update({"entitlements": ents, "name": bundle_name, "profile": {"UUID": p["UUID"], "name": p["Name"]},
                      "team": team, "versionNumber": SHORT_VERSION})
        return entry

    (HERE / "export" / "DistributionSummary.plist").write_bytes(plistlib.dumps({
        f"{APP_NAME}.ipa": [summary(
            f"{APP_NAME}.app", "appstore.mobileprovision", store_ents, ["arm64"],
            embedded=[summary("NotificationService.appex", "appstore-notificationservice.mobileprovision",
                              extension.entitlements, ["arm64"])])],
    }, fmt=plistlib.FMT_XML))
    (HERE / "export" / "ExportOptions.plist").write_bytes(plistlib.dumps({
        "destination": "export",
        "manageAppVersionAndBuildNumber": False,
        "method": "app-store-connect",
        "provisioningProfiles": {
            BUNDLE_ID: made["appstore.mobileprovision"][0]["Name"],
            EXTENSION_BUNDLE_ID: made["appstore-notificationservice.mobileprovision"][0]["Name"],
        },
        "signingCertificate": "Apple Distribution",
        "signingStyle": "manual",
        "stripSwiftSymbols": True,
        "teamID": TEAM,
        "uploadSymbols": True,
    }, fmt=plistlib.FMT_XML))

    project_entitlements = {"aps-environment": "development"}
    (HERE / "entitlements" / "KantineKoning.entitlements").write_bytes(
        plistlib.dumps(project_entitlements, fmt=plistlib.FMT_XML))
    (HERE / "entitlements" / "KantineKoning-binary.entitlements").write_bytes(
        plistlib.dumps(project_entitlements, fmt=plistlib.FMT_BINARY))


def made_resources(bundle):
    return next(data for path, data, _ in bundle.entries if path == "_CodeSignature/CodeResources")


if __name__ == "__main__":
    main()
