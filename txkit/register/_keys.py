"""Who signs: the project's ``allowed_signers``, a signer's own OpenSSH ed25519 key, and
signatures in OpenSSH's SSHSIG format.

A signature is what ``ssh-keygen -Y sign -n txkit`` writes, so an auditor checks it with
standard tools::

    ssh-keygen -Y verify -f allowed_signers -I "Ada Obi" -n txkit \\
        -s reports/2026-10/signatures/preparer.sig < reports/2026-10/signatures/preparer.txt

``allowed_signers`` is OpenSSH's (and git's) format, one line a key:
``"Ada Obi" namespaces="txkit" ssh-ed25519 AAAA...``; the principal is the name a pack shows.
The keys are loaded and the ed25519 signatures made and checked by ``cryptography``; this module
only lays out the SSHSIG envelope around them (PROTOCOL.sshsig), which the tests check against
``ssh-keygen -Y verify``. A key held by the running ``ssh-agent`` signs through the agent's
protocol (:class:`AgentKey`: ``--key`` names its ``.pub``; the agent makes the ed25519
signature, ``cryptography`` checks it). Names are compared as people read them
(:func:`fold_name`). The texts a signer signs (a sign-off: :func:`statement_of`; a
reopening: :func:`reopen_statement`) are laid out here too, so that signing and verifying
read one definition.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import hashlib
import os
import re
import struct
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from txkit import config
from txkit.errors import DataFileError, ReportSignedError

__all__ = [
    "NAMESPACE",
    "AgentKey",
    "Signer",
    "check_name",
    "fingerprint",
    "fold_name",
    "load_allowed_signers",
    "load_signing_key",
    "public_blob",
    "reopen_statement",
    "signer_of",
    "sshsig_sign",
    "sshsig_verify",
    "statement_of",
]

#: The SSHSIG namespace of every txkit signature (``ssh-keygen -Y ... -n txkit``).
NAMESPACE: Final = "txkit"
_MAGIC: Final = b"SSHSIG"
_ARMOR_BEGIN: Final = "-----BEGIN SSH SIGNATURE-----"
_ARMOR_END: Final = "-----END SSH SIGNATURE-----"
_ED25519: Final = b"ssh-ed25519"
_ACCEPTED: Final = 'principal namespaces="txkit" ssh-ed25519 AAAA... (one line a key)'

#: Characters that show as nothing (Unicode's Default_Ignorable_Code_Point, and the blank
#: Hangul and Braille fillers): a name holding one looks like another person's.
_INVISIBLE: Final = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3"
    "\U000e0000-\U000e0fff]"
)


def check_name(name: str, where: str) -> str:
    """``name`` (a signer's principal) trimmed, refused unless people can read it as one name:
    printable, no invisible character (U+034F, U+3164, zero-width...), one script (not
    Cyrillic ``А`` among Latin letters).

    Raises:
        ValueError: one line naming ``where`` and the character.
    """
    for char in name:
        kind = unicodedata.category(char)
        if kind[0] == "C" or kind in ("Zl", "Zp") or _INVISIBLE.match(char):
            raise ValueError(
                f"{where}: the name {_shown(name)} holds a character that shows as nothing or "
                f"is not printable (U+{ord(char):04X} {unicodedata.name(char, '')}): a signer's "
                "name is plain text"
            )
    text = " ".join(unicodedata.normalize("NFKC", name).split())
    if not text:
        raise ValueError(f"{where}: an empty name")
    from confusable_homoglyphs import confusables

    if confusables.is_mixed_script(text, allowed_aliases=["COMMON", "INHERITED"]):
        raise ValueError(
            f"{where}: the name {_shown(name)} mixes scripts (e.g. a Cyrillic letter among "
            "Latin ones), so it can look like another name: write it in one script"
        )
    return " ".join(name.split())


def _shown(name: str) -> str:
    return ascii(name)


def fold_name(name: str) -> str:
    """``name`` as it reads: NFKC (full-width letters are letters), case folded, each letter
    that looks like a Latin one (Unicode's confusables) as that letter, spaces collapsed. Two
    names with one fold are one person."""
    from confusable_homoglyphs import confusables

    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", name)).casefold()
    out = []
    for char in text:
        if not char.isascii():
            found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin"])
            latin = [
                g["c"]
                for entry in found or []
                for g in entry["homoglyphs"]
                if g["c"].isascii() and g["c"].isalpha()
            ]
            char = latin[0].casefold() if latin else char
        out.append(char)
    return " ".join("".join(out).split())


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class _Reader:
    """SSH wire format: uint32-prefixed strings, refused when truncated."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def uint32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def string(self) -> bytes:
        return self.take(self.uint32())

    def done(self) -> bool:
        return self.at == len(self.data)


def fingerprint(blob: bytes) -> str:
    """OpenSSH's fingerprint of a public key (``ssh-keygen -l``): ``SHA256:...``."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _ed25519_key(blob: bytes) -> bytes:
    """The 32 bytes of an ``ssh-ed25519`` public key blob."""
    reader = _Reader(blob)
    kind, raw = reader.string(), reader.string()
    if kind != _ED25519 or len(raw) != 32 or not reader.done():
        raise ValueError(f"not an ssh-ed25519 key ({kind[:40]!r})")
    return raw


@dataclass(frozen=True)
class Signer:
    """One line of ``allowed_signers``: the principal (the name shown), its key (the SSH
    public key blob) and the line."""

    principal: str
    key: bytes
    line: int

    @property
    def fingerprint(self) -> str:
        """``SHA256:...`` as ``ssh-keygen -l`` shows it."""
        return fingerprint(self.key)


def _tokens(line: str) -> list[str]:
    """Whitespace-separated fields, a double-quoted field kept whole (OpenSSH's strdelim)."""
    out, i = [], 0
    while i < len(line):
        if line[i].isspace():
            i += 1
            continue
        j = i
        quoted = False
        while j < len(line) and (quoted or not line[j].isspace()):
            if line[j] == '"':
                quoted = not quoted
            j += 1
        if quoted:
            raise ValueError("a quote is not closed")
        out.append(line[i:j])
        i = j
    return out


def _options(text: str) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for part in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, _, value = part.partition("=")
        found[name.strip().lower()] = value.strip('"') if value else None
    return found


_WHAT: Final = "allowed signers file"


def _conflict(other: Signer, signer: Signer) -> str | None:
    if other.key == signer.key and other.principal != signer.principal:
        return (
            f"the key of {other.principal!r} (line {other.line}) again, for "
            f"{signer.principal!r}: one key is one person"
        )
    if other.principal != signer.principal and fold_name(other.principal) == fold_name(
        signer.principal
    ):
        return (
            f"the name {signer.principal!a} reads as {other.principal!r} (line "
            f"{other.line}): two people's names must read differently"
        )
    return None


def _signer_line(where: Path, number: int, line: str) -> Signer | None:
    """One line of ``allowed_signers``: its signer, None for a comment, a blank line or a key
    of another namespace."""
    if not line or line.startswith("#"):
        return None

    def bad(problem: str) -> DataFileError:
        return DataFileError(where, problem, f"each line: {_ACCEPTED}", lines=[number], what=_WHAT)

    try:
        fields = _tokens(line)
    except ValueError as exc:
        raise bad(str(exc)) from None
    if len(fields) < 3:
        raise bad("a line is a principal, options and a key")
    principals, rest = fields[0], fields[1:]
    options: dict[str, str | None] = {}
    if not rest[0].startswith(("ssh-", "ecdsa-", "sk-")):
        options, rest = _options(rest[0]), rest[1:]
    if len(rest) < 2:
        raise bad("no key after the principal and options")
    if "cert-authority" in options:
        raise bad("cert-authority keys are not taken: list each signer's own key")
    for name in ("valid-after", "valid-before"):
        if name in options:
            raise bad(
                f"{name}: txkit takes no dates from the signer's clock; list a key "
                "while it may sign and keep its line for the packs it signed"
            )
    namespaces = options.get("namespaces")
    if namespaces is not None and NAMESPACE not in namespaces.split(","):
        return None  # a key for git or another tool, not for txkit's sign-off
    if rest[0] != _ED25519.decode():
        raise bad(f"a {rest[0][:40]} key: txkit signs with ssh-ed25519 keys")
    try:
        blob = base64.b64decode(rest[1], validate=True)
        _ed25519_key(blob)
    except (binascii.Error, ValueError):
        raise bad("the key is not base64 of an ssh-ed25519 public key") from None
    principal = principals.strip('"')
    if any(c in principal for c in "*?!,"):
        raise bad(f"the principal {principal!a} is a pattern: name one person")
    try:
        principal = check_name(principal, "x")
    except ValueError as exc:
        raise DataFileError(
            where,
            str(exc).split(": ", 1)[1],
            "write the name in plain text of one script",
            lines=[number],
            what=_WHAT,
        ) from None
    return Signer(principal, blob, number)


def load_allowed_signers(path: str | os.PathLike[str] | None = None) -> list[Signer]:
    """Who may sign: every line of the project's ``allowed_signers`` (OpenSSH's format) whose
    namespaces include ``txkit``. One person may have several keys (lines with one
    principal); one key is one person; two principals that read alike (:func:`fold_name`)
    are refused.

    Raises:
        DataFileError: the file is missing or a line is not one (file and line named).
    """
    where = Path(path) if path is not None else config.allowed_signers_path()
    what = _WHAT
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFileError(
            where, "not found", f"list who may sign, one line a key: {_ACCEPTED}", what=what
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(
            where, f"cannot be read ({exc})", "give a UTF-8 text file", what=what
        ) from None
    signers: list[Signer] = []
    for number, raw in enumerate(text.splitlines(), 1):
        signer = _signer_line(where, number, raw.strip())
        if signer is None:
            continue
        for other in signers:
            problem = _conflict(other, signer)
            if problem:
                raise DataFileError(
                    where, problem, f"each line: {_ACCEPTED}", lines=[number], what=_WHAT
                )
        signers.append(signer)
    if not signers:
        raise DataFileError(
            where,
            f"lists no key for the {NAMESPACE!r} namespace",
            f"each line: {_ACCEPTED}",
            what=what,
        )
    return signers


def load_signing_key(path: str | os.PathLike[str]) -> object:
    """The signer's OpenSSH ed25519 private key (as ``ssh-keygen -t ed25519`` writes it). An
    encrypted key's passphrase comes from ``TXKIT_KEY_PASSPHRASE``, else a prompt when a
    person is at the terminal; else it is refused. A public key (``.pub``) names a key held
    by the running ``ssh-agent`` (``SSH_AUTH_SOCK``): the agent signs, and no passphrase is
    asked (:class:`AgentKey`).

    Raises:
        ValueError: no such file, not an OpenSSH private key, not ed25519, a wrong or missing
            passphrase, a public key with no agent or that the agent does not hold (one line
            naming the file).
    """
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    where = Path(path)
    try:
        data = where.read_bytes()
    except OSError as exc:
        raise ValueError(f"--key {where}: cannot be read ({exc.strerror or exc})") from None
    if data.lstrip().startswith((b"ssh-", b"ecdsa-", b"sk-")):
        return _agent_key(where, data)
    try:
        key = load_ssh_private_key(data, password=None)
    except TypeError:  # encrypted: cryptography asks for the passphrase
        passphrase = config.key_passphrase()
        if passphrase is None and sys.stdin.isatty():
            passphrase = getpass.getpass(f"passphrase for {where}: ")
        if not passphrase:
            raise ValueError(
                f"--key {where} is encrypted: set {config.KEY_PASSPHRASE_VAR} or run the "
                "command at a terminal to be asked for its passphrase"
            ) from None
        try:
            key = load_ssh_private_key(data, password=passphrase.encode("utf-8"))
        except ValueError:
            raise ValueError(f"--key {where}: the passphrase does not open it") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(
            f"--key {where} is not an OpenSSH private key (make one with ssh-keygen -t ed25519 "
            "-f FILE)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(
            f"--key {where} is a {type(key).__name__.removesuffix('PrivateKey').removeprefix('_')} "
            "key: txkit signs with ed25519 keys (ssh-keygen -t ed25519 -f FILE)"
        )
    return key


#: The agent protocol's messages (draft-miller-ssh-agent): list the keys, sign with one.
_AGENT_LIST, _AGENT_KEYS, _AGENT_SIGN, _AGENT_SIGNED, _AGENT_FAILURE = 11, 12, 13, 14, 5
#: The largest agent reply read (a reply's length is the agent's word; its keys fit easily).
_AGENT_REPLY_MAX: Final = 256 * 1024


@dataclass(frozen=True)
class AgentKey:
    """An ed25519 key held by the running ``ssh-agent``: ``--key`` named its public half.
    The agent makes the signature (its private half never leaves the agent);
    :func:`sshsig_sign` checks it with ``cryptography`` before using it."""

    path: Path
    blob: bytes
    socket: str

    def sign(self, data: bytes) -> bytes:
        """The raw ed25519 signature of ``data``, made by the agent.

        Raises:
            ValueError: the agent refused or answered something else (one line).
        """
        reply = _agent_call(self.socket, bytes([_AGENT_SIGN]) + _string(self.blob)
                            + _string(data) + struct.pack(">I", 0), self.path)  # fmt: skip
        if reply[:1] != bytes([_AGENT_SIGNED]):
            raise ValueError(f"--key {self.path}: the ssh-agent refused to sign with it "
                             "(a key added with ssh-add -c needs its confirmation)")  # fmt: skip
        try:
            inner = _Reader(_Reader(reply[1:]).string())
            kind, raw = inner.string(), inner.string()
        except ValueError:
            raise ValueError(f"--key {self.path}: the ssh-agent's signature is not "
                             "readable") from None  # fmt: skip
        if kind != _ED25519 or len(raw) != 64:
            raise ValueError(f"--key {self.path}: the ssh-agent signed with {kind[:40]!r}, "
                             "not ssh-ed25519")  # fmt: skip
        return raw


def _agent_key(where: Path, data: bytes) -> AgentKey:
    """The key of the public key file ``where`` in the running agent, or one line saying why
    it cannot sign (never a passphrase prompt: the private half is the agent's)."""
    fields = data.split()
    try:
        blob = base64.b64decode(fields[1], validate=True) if len(fields) > 1 else b""
        _ed25519_key(blob)
    except (binascii.Error, ValueError):
        kind = fields[0][:40].decode("ascii", "replace") if fields else "?"
        raise ValueError(
            f"--key {where} is a {kind} public key: txkit signs with ed25519 keys (ssh-keygen "
            "-t ed25519 -f FILE)"
        ) from None
    socket = os.environ.get("SSH_AUTH_SOCK", "")
    if not socket:
        raise ValueError(
            f"--key {where} is a public key and no ssh-agent is running (SSH_AUTH_SOCK is not "
            "set): give the private key (the file without .pub), or ssh-add it to an agent"
        )
    reply = _agent_call(socket, bytes([_AGENT_LIST]), where)
    try:
        if reply[:1] != bytes([_AGENT_KEYS]):
            raise ValueError("no list of keys")
        listing = _Reader(reply[1:])
        held = []
        for _ in range(listing.uint32()):
            held.append(listing.string())
            listing.string()  # its comment
    except ValueError:
        raise ValueError(f"--key {where}: the ssh-agent at SSH_AUTH_SOCK did not list its "
                         "keys") from None  # fmt: skip
    if blob not in held:
        raise ValueError(
            f"--key {where}: the ssh-agent (SSH_AUTH_SOCK) does not hold this key "
            f"({fingerprint(blob)}): ssh-add its private key, or give the private key file"
        )
    return AgentKey(where, blob, socket)


def _agent_call(path: str, message: bytes, where: Path) -> bytes:
    """One request to the agent at ``path`` and its reply (the message without its length)."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)  # an agent asking for confirmation waits for a person
            conn.connect(path)
            conn.sendall(_string(message))
            head = _recv(conn, 4)
            size = int(struct.unpack(">I", head)[0])
            if size > _AGENT_REPLY_MAX:
                raise OSError(f"a reply of {size:,} bytes")
            return _recv(conn, size)
    except OSError as exc:
        raise ValueError(
            f"--key {where}: the ssh-agent at SSH_AUTH_SOCK={path} cannot be reached "
            f"({exc.strerror or exc})"
        ) from None


def _recv(conn: Any, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise OSError("the agent closed the connection")
        out += chunk
    return out


def public_blob(key: object) -> bytes:
    """The SSH public key blob of a private key (what ``allowed_signers`` lists)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    if isinstance(key, AgentKey):
        return key.blob
    line = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)  # type: ignore[attr-defined]
    return base64.b64decode(line.split()[1])


def _signed_data(message: bytes, hash_name: bytes) -> bytes:
    digest = hashlib.new(hash_name.decode(), message).digest()
    return (
        _MAGIC + _string(NAMESPACE.encode()) + _string(b"") + _string(hash_name) + _string(digest)
    )


def sshsig_sign(key: object, message: bytes) -> str:
    """An armored SSHSIG signature of ``message`` in the ``txkit`` namespace, as
    ``ssh-keygen -Y sign -n txkit`` writes it."""
    data = _signed_data(message, b"sha512")
    raw = key.sign(data)  # type: ignore[attr-defined]
    if isinstance(key, AgentKey):  # the agent's word is checked, as a verifier will
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(_ed25519_key(key.blob)).verify(raw, data)
        except InvalidSignature:
            raise ValueError(f"--key {key.path}: the ssh-agent's signature does not verify "
                             "with this key") from None  # fmt: skip
    whole = (
        _MAGIC
        + struct.pack(">I", 1)
        + _string(public_blob(key))
        + _string(NAMESPACE.encode())
        + _string(b"")
        + _string(b"sha512")
        + _string(_string(_ED25519) + _string(raw))
    )
    text = base64.b64encode(whole).decode()
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return "\n".join([_ARMOR_BEGIN, *lines, _ARMOR_END]) + "\n"


def sshsig_verify(armored: str, message: bytes, signers: list[Signer]) -> Signer:
    """The signer (a line of ``allowed_signers``) whose key made ``armored`` over ``message``
    in the ``txkit`` namespace.

    Raises:
        ValueError: not an SSHSIG signature, another namespace, a key not allowed, or a
            signature that does not verify (one line each).
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    body = armored.strip()
    if not (body.startswith(_ARMOR_BEGIN) and body.endswith(_ARMOR_END)):
        raise ValueError("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    try:
        data = base64.b64decode(
            "".join(body[len(_ARMOR_BEGIN) : -len(_ARMOR_END)].split()), validate=True
        )
        reader = _Reader(data)
        magic, version = reader.take(6), reader.uint32()
        blob, namespace, _, hash_name, sig = (reader.string() for _ in range(5))
        if magic != _MAGIC or version != 1 or not reader.done():
            raise ValueError("not SSHSIG version 1")
        public = _ed25519_key(blob)
        inner = _Reader(sig)
        kind, raw = inner.string(), inner.string()
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not a readable SSH signature ({exc})") from None
    if namespace != NAMESPACE.encode():
        raise ValueError(f"signed for the namespace {namespace[:40]!r}, not {NAMESPACE!r}")
    if hash_name not in (b"sha256", b"sha512") or kind != _ED25519:
        raise ValueError(f"an {kind[:40]!r}/{hash_name[:20]!r} signature: txkit takes ed25519")
    allowed = [s for s in signers if s.key == blob]
    if not allowed:
        raise ValueError(
            f"signed by the key {fingerprint(blob)}, which allowed_signers does not list"
        )
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(raw, _signed_data(message, hash_name))
    except InvalidSignature:
        raise ValueError(
            f"the signature by {allowed[0].principal} ({fingerprint(blob)}) does not verify: "
            "the text or the signature was changed"
        ) from None
    return allowed[0]


def statement_of(signature: dict[str, Any], files: dict[str, str]) -> str:
    """The text a signer signs: the month, revision and role, the signer's name and key, the
    pack's digest and every file's SHA-256 (the signed manifest), the store's table version,
    the register's version it was signed at and the month's previous signature (its link).
    ``files``: the pack's files as its report recorded them (:func:`pack_files`)."""
    head = [
        "txkit sign-off",
        f"month {signature['month']}",
        f"revision {signature['revision']}",
        f"role {signature['role']}",
        f"signer {signature['name']}",
        f"key {signature['key']}",
        f"pack sha256:{signature['sha256']}",
        f"table-version {signature['table_version']}",
        f"register-version {signature['register_version']}",
        f"previous {signature['previous'] or 'none'}",
        "files (SHA-256; index.html and 00_close_summary.html without their signature blocks, "
        "report.json without its signatures)",
    ]
    return "\n".join(head + [f"{files[rel]}  {rel}" for rel in sorted(files)]) + "\n"


def reopen_statement(month: str, number: int, of: str, pack: str, reason: str,
                     name: str, key: str, register_version: int | None) -> str:  # fmt: skip
    """The text who reopens a signed month signs: the new revision, the signed one it
    revises (its folder and pack digest), why, who, and the register's version."""
    return "\n".join([
        "txkit reopen", f"month {month}", f"revision {number}", f"of {of}",
        f"reopened-pack sha256:{pack}", f"reason {reason}", f"signer {name}", f"key {key}",
        f"register-version {register_version}",
    ]) + "\n"  # fmt: skip


def signer_of(
    key: str | os.PathLike[str], allowed_signers: str | os.PathLike[str] | None
) -> tuple[Any, bytes, str]:
    """The private key, its public blob and the name ``allowed_signers`` gives it.

    Raises:
        ReportSignedError: the key is not listed.
    """
    signers = load_allowed_signers(allowed_signers)
    private = load_signing_key(key)
    blob = public_blob(private)
    mine = [s for s in signers if s.key == blob]
    if not mine:
        raise ReportSignedError(
            f"the key {key} ({fingerprint(blob)}) is not in the allowed signers file: only a "
            'listed key signs (its owner\'s line: "Name" namespaces="txkit" followed by its '
            ".pub)"
        )
    return private, blob, mine[0].principal
