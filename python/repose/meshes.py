# SPDX-License-Identifier: MIT
"""The mesh files a URDF's collisions name, read on the client's side.

reposed never opens a client's files: ``model.put`` takes each file a
``<collision>``'s ``<mesh filename>`` names in ``meshes`` {filename as
written: base64 of the file's bytes} (proto/PROTOCOL.md, model.put).
:func:`read_urdf_meshes` finds and reads them the way ROS tools do:

- ``package://NAME/rest``: DIR/NAME/rest for the first DIR of the package
  directories where it exists, else DIR/rest for the first DIR named NAME
  where that exists.  The package directories are ``package_path``, then the
  entries of $ROS_PACKAGE_PATH (colon-separated);
- ``file:///abs``: /abs (``file://localhost/abs`` too; a ``file://`` path
  that is not absolute is taken relative to the URDF's folder);
- an absolute path: itself; a relative path: relative to the URDF's folder.

``<visual>`` meshes are left out: the daemon refuses a file no collision
names.  A file that cannot be found raises :class:`MeshNotFound`.
"""

from __future__ import annotations

import base64
import os
import re
import urllib.parse
import xml.etree.ElementTree as ET
from typing import Dict, Iterable, List, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class MeshNotFound(FileNotFoundError):
    """A mesh file a URDF's collision names could not be found on this
    machine (nothing was sent).  Attributes: ``uri`` (the filename as the
    URDF writes it), ``link`` (the link whose collision names it) and
    ``tried`` (the directories or paths looked in, in order)."""

    def __init__(self, uri: str, link: str, tried: Sequence[str], why: str) -> None:
        self.uri = uri
        self.link = link
        self.tried = list(tried)
        super().__init__(f"mesh {uri!r} (a collision of link {link!r}) not found: {why}")


def _local(tag: object) -> str:
    """An element's name without its namespace ({ns}name -> name)."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def collision_meshes(urdf: Union[str, bytes]) -> List[Tuple[str, str]]:
    """(link name, filename as written) of every ``<mesh>`` of every
    ``<collision>`` of every ``<link>`` of the ``<robot>``, in document
    order (repeats included).  A document that is not XML gives [] (the
    daemon then names what is wrong with it)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError:
        return []
    out: List[Tuple[str, str]] = []
    for link in root:
        if _local(link.tag) != "link":
            continue
        name = link.get("name", "")
        for coll in link:
            if _local(coll.tag) != "collision":
                continue
            for geom in coll:
                if _local(geom.tag) != "geometry":
                    continue
                for shape in geom:
                    if _local(shape.tag) == "mesh" and shape.get("filename") is not None:
                        out.append((name, shape.get("filename", "")))
    return out


def package_dirs(package_path: Union[PathLike, Iterable[PathLike], None] = ()) -> List[str]:
    """The directories ``package://`` URIs are looked up in: ``package_path``
    (a directory or a list of them), then $ROS_PACKAGE_PATH's entries."""
    if package_path is None:
        given: List[PathLike] = []
    elif isinstance(package_path, (str, bytes, os.PathLike)):
        given = [package_path]  # one directory, not its characters
    else:
        given = list(package_path)
    dirs = [os.fspath(d) for d in given]
    dirs += [d for d in os.environ.get("ROS_PACKAGE_PATH", "").split(":") if d]
    return dirs


def resolve_mesh(uri: str, link: str, urdf_dir: str, dirs: Sequence[str]) -> str:
    """The local path of the mesh ``uri`` names (rules in the module's
    documentation); :class:`MeshNotFound` when there is none."""
    m = _SCHEME.match(uri)
    scheme = m.group(1).lower() if m else ""
    if scheme == "package":
        rest = uri[m.end():]
        name, _, inner = rest.partition("/")
        if not name or not inner:
            raise MeshNotFound(uri, link, [], "a package URI is package://PACKAGE/PATH")
        for d in dirs:
            p = os.path.join(d, name, inner)
            if os.path.isfile(p):
                return p
        for d in dirs:
            if os.path.basename(os.path.normpath(d)) == name:
                p = os.path.join(d, inner)
                if os.path.isfile(p):
                    return p
        if not dirs:
            why = (f"no package directories to look for {name!r} in (give package_path=, "
                   f"or set ROS_PACKAGE_PATH)")
        else:
            why = (f"in no package directory tried (as DIR/{name}/{inner}, or DIR/{inner} "
                   f"for a DIR named {name}): " + ", ".join(dirs) +
                   " (package_path, then ROS_PACKAGE_PATH)")
        raise MeshNotFound(uri, link, dirs, why)
    if scheme == "file":
        rest = uri[m.end():]
        if rest.startswith("localhost/"):
            rest = rest[len("localhost"):]
        path = urllib.parse.unquote(rest)
    elif scheme:
        raise MeshNotFound(uri, link, [], f"{scheme}:// URIs are not read (package://, "
                                          f"file:// and paths are)")
    else:
        path = uri
    relative = not os.path.isabs(path)
    if relative:
        path = os.path.join(urdf_dir, path)
    if not os.path.isfile(path):
        raise MeshNotFound(uri, link, [os.path.dirname(path)], f"no file {path}" + (
            f" (a relative path is taken from the URDF's folder, {urdf_dir})" if relative else ""))
    return path


def read_urdf_meshes(urdf_path: PathLike, package_path: Union[PathLike, Iterable[PathLike],
                                                              None] = (),
                     urdf: Union[str, bytes, None] = None,
                     skip: Iterable[str] = ()) -> Dict[str, str]:
    """``model.put``'s ``meshes`` for the URDF file ``urdf_path`` (or the
    document ``urdf`` read from there): {filename as written: base64 of the
    file}, every collision mesh but those in ``skip``, each file read once.
    {} when the collisions name no mesh."""
    urdf_path = os.fspath(urdf_path)
    if urdf is None:
        with open(urdf_path, "rb") as f:
            urdf = f.read()
    named = collision_meshes(urdf)
    if not named:
        return {}
    urdf_dir = os.path.dirname(os.path.abspath(urdf_path))
    dirs = package_dirs(package_path)
    skipped = set(skip)
    paths: Dict[str, str] = {}
    for link, uri in named:
        if uri not in paths and uri not in skipped:
            paths[uri] = resolve_mesh(uri, link, urdf_dir, dirs)
    # Every path resolved before any is read: a missing file fails fast.
    read: Dict[str, str] = {}
    out: Dict[str, str] = {}
    for uri, path in paths.items():
        key = os.path.realpath(path)
        if key not in read:
            with open(path, "rb") as f:
                read[key] = base64.b64encode(f.read()).decode("ascii")
        out[uri] = read[key]
    return out
