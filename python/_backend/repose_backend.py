# SPDX-License-Identifier: MIT
"""The Python package's build backend (PEP 517, PEP 660), standard library only.

pip builds the package with it from ``pyproject.toml`` (``backend-path``),
so installing needs nothing but pip: no setuptools (a Python 3.12+ venv has
none), no ``wheel`` (a pyenv or conda Python may lack it), no network.

    python3 -m venv venv && venv/bin/pip install --no-index ./python
    venv/bin/pip install --no-index -e ./python      # editable: imports python/repose

It writes a pure-Python wheel (``py3-none-any``) holding ``repose/`` and a
``.dist-info`` made from the ``[project]`` table of ``pyproject.toml``, an
sdist, and for editable installs a wheel with one ``.pth`` file that puts
this directory on ``sys.path``.  Python >= 3.11 reads ``pyproject.toml``
with ``tomllib``; older ones with :func:`read_project`'s small reader, which
knows the subset the file uses (python/tests/test_backend.py checks that
both agree).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "repose"
# Zip entries get this date (the earliest a zip can hold), so that a wheel
# built twice from the same files is the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)


# ---- pyproject.toml ------------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(body: str) -> str:
    """The text of a TOML basic string (without its quotes)."""
    def one(m: "re.Match[str]") -> str:
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] in "uU" else _ESCAPES[e]
    return re.sub(r'\\(["\\bfnrt]|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})', one, body)


def _parse_value(text: str) -> Any:
    """A TOML basic string or a one-line array of them."""
    text = text.strip()
    if text.startswith("["):
        inner = text[1:text.rindex("]")]
        return [_parse_value(p) for p in re.findall(r'"(?:[^"\\]|\\.)*"', inner)]
    if text.startswith('"'):
        m = re.match(r'"((?:[^"\\]|\\.)*)"', text)
        if not m:
            raise ValueError(f"pyproject.toml: cannot read {text!r}")
        return _unescape(m.group(1))
    if text.startswith("{"):
        out = {}
        for k, v in re.findall(r'(\w[\w-]*)\s*=\s*("(?:[^"\\]|\\.)*")', text):
            out[k] = _parse_value(v)
        return out
    raise ValueError(f"pyproject.toml: cannot read {text!r} (the backend's reader knows "
                     "strings, arrays of strings and inline tables of strings)")


def _small_toml(text: str) -> Dict[str, Any]:
    """The subset of TOML that pyproject.toml uses: [tables], dotted table
    names, and `key = value` lines whose value is on one line."""
    doc: Dict[str, Any] = {}
    table = doc
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([\w.-]+)\]", line)
        if m:
            table = doc
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        m = re.fullmatch(r'([\w-]+|"[^"]*")\s*=\s*(.+)', line)
        if not m:
            raise ValueError(f"pyproject.toml: cannot read line {raw!r}")
        table[m.group(1).strip('"')] = _parse_value(m.group(2))
    return doc


def read_project(path: Optional[str] = None, use_tomllib: bool = True) -> Dict[str, Any]:
    """The ``[project]`` table of pyproject.toml."""
    path = path or os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    if use_tomllib:
        try:
            import tomllib  # Python >= 3.11
        except ImportError:
            use_tomllib = False
        else:
            return tomllib.loads(data.decode("utf-8"))["project"]
    return _small_toml(data.decode("utf-8"))["project"]


def _dist_name(project: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def metadata_text(project: Dict[str, Any]) -> str:
    """Core metadata 2.1 (PKG-INFO / METADATA)."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append(f"License: {lic['text']}")
    elif isinstance(lic, str):
        lines.append(f"License-Expression: {lic}")
    for req in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {req}")
    for extra, reqs in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        for req in reqs:
            lines.append(f'Requires-Dist: {req}; extra == "{extra}"')
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


# ---- files ---------------------------------------------------------------------------

def _package_files() -> List[str]:
    """The package's files, relative to ROOT, sorted: every .py and py.typed
    under repose/ (no caches)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in filenames:
            if name.endswith(".py") or name == "py.typed":
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return sorted(p.replace(os.sep, "/") for p in out)


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _dist_info_files(project: Dict[str, Any]) -> List[Tuple[str, bytes]]:
    wheel = ("Wheel-Version: 1.0\nGenerator: repose_backend\nRoot-Is-Purelib: true\n"
             "Tag: py3-none-any\n")
    return [("METADATA", metadata_text(project).encode("utf-8")),
            ("WHEEL", wheel.encode("ascii"))]


def _write_wheel(wheel_directory: str, files: List[Tuple[str, bytes]]) -> str:
    project = read_project()
    base = f"{_dist_name(project)}-{project['version']}"
    info = f"{base}.dist-info"
    entries = list(files) + [(f"{info}/{n}", d) for n, d in _dist_info_files(project)]
    record = "".join(f"{n},{_record_hash(d)},{len(d)}\n" for n, d in entries)
    record += f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode("utf-8")))
    name = f"{base}-py3-none-any.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         compression=zipfile.ZIP_DEFLATED) as z:
        for arcname, data in entries:
            zi = zipfile.ZipInfo(arcname, date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


# ---- PEP 517 / PEP 660 hooks ---------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(
        config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = read_project()
    info = f"{_dist_name(project)}-{project['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in _dist_info_files(project):
        with open(os.path.join(metadata_directory, info, name), "wb") as f:
            f.write(data)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(p, _read(p)) for p in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    # One .pth line: site.py adds this directory to sys.path at start-up, so
    # `import repose` finds python/repose itself and edits show at once.
    project = read_project()
    pth = f"__editable__.{_dist_name(project)}-{project['version']}.pth"
    return _write_wheel(wheel_directory, [(pth, (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = read_project()
    base = f"{_dist_name(project)}-{project['version']}"
    files = ["pyproject.toml", "_backend/repose_backend.py"] + _package_files()
    if isinstance(project.get("readme"), str):
        files.append(project["readme"])
    os.makedirs(sdist_directory, exist_ok=True)
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel, data in [("PKG-INFO", metadata_text(project).encode("utf-8"))] + \
                [(p, _read(p)) for p in sorted(files)]:
            ti = tarfile.TarInfo(f"{base}/{rel}")
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = 315532800  # 1980-01-01, as in the wheel
            t.addfile(ti, io.BytesIO(data))
    return name
