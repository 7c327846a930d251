# SPDX-License-Identifier: MIT
"""The package's own build backend (python/_backend/repose_backend.py): what
pip gets from it, without pip.  python/tests/install.sh installs with pip
itself in bare venvs."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(PYDIR, "_backend"))

import repose_backend as backend  # noqa: E402


class BackendTest(unittest.TestCase):
    def test_small_reader_agrees_with_tomllib(self) -> None:
        # Python < 3.11 has no tomllib: the backend's own reader must read
        # pyproject.toml exactly as tomllib does.
        try:
            import tomllib  # noqa: F401
        except ImportError:
            self.skipTest("no tomllib (Python < 3.11)")
        self.assertEqual(backend.read_project(use_tomllib=False),
                         backend.read_project(use_tomllib=True))

    def test_small_reader_strings(self) -> None:
        doc = backend._small_toml('[a.b]\nx = "q\\"\\u00e9\\\\"  # c\ny = ["1", "2"]\n'
                                  'z = {text = "t"}\n')
        self.assertEqual(doc, {"a": {"b": {"x": 'q"\u00e9\\', "y": ["1", "2"],
                                           "z": {"text": "t"}}}})
        with self.assertRaises(ValueError):
            backend._small_toml("x = 3\n")

    def test_needs_nothing(self) -> None:
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        self.assertEqual(backend.get_requires_for_build_editable(), [])
        self.assertEqual(backend.get_requires_for_build_sdist(), [])

    def test_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_wheel(d)
            self.assertEqual(name, "repose-0.1.0-py3-none-any.whl")
            with open(os.path.join(d, name), "rb") as f:
                first = f.read()
            os.remove(os.path.join(d, name))
            backend.build_wheel(d)
            with open(os.path.join(d, name), "rb") as f:
                self.assertEqual(f.read(), first, "the same files give the same wheel")
            z = zipfile.ZipFile(io.BytesIO(first))
            names = z.namelist()
            for mod in ("__init__", "__main__", "client", "errors", "gltf", "methods", "wire"):
                self.assertIn(f"repose/{mod}.py", names)
            self.assertIn("repose/py.typed", names)
            self.assertFalse([n for n in names if "__pycache__" in n or "tests" in n])
            meta = z.read("repose-0.1.0.dist-info/METADATA").decode()
            self.assertIn("Name: repose\n", meta)
            self.assertIn("Version: 0.1.0\n", meta)
            self.assertIn('Requires-Dist: numpy; extra == "numpy"\n', meta)
            wheel = z.read("repose-0.1.0.dist-info/WHEEL").decode()
            self.assertIn("Root-Is-Purelib: true\n", wheel)
            self.assertIn("Tag: py3-none-any\n", wheel)
            # RECORD names every other file with its sha256 and size.
            rows = list(csv.reader(io.StringIO(z.read("repose-0.1.0.dist-info/RECORD")
                                                .decode())))
            self.assertEqual(sorted(r[0] for r in rows), sorted(names))
            for path, digest, size in rows:
                if path.endswith("RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual(digest, "sha256=" + want.decode())
                self.assertEqual(int(size), len(data))

    def test_editable_wheel_points_at_the_source(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_editable(d)
            z = zipfile.ZipFile(os.path.join(d, name))
            pth = [n for n in z.namelist() if n.endswith(".pth")]
            self.assertEqual(len(pth), 1)
            self.assertEqual(z.read(pth[0]).decode().strip(), PYDIR)
            self.assertFalse([n for n in z.namelist() if n.startswith("repose/")])

    def test_metadata_matches_the_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            info = backend.prepare_metadata_for_build_wheel(d)
            with open(os.path.join(d, info, "METADATA"), encoding="utf-8") as f:
                meta = f.read()
            z = zipfile.ZipFile(os.path.join(d, backend.build_wheel(d)))
            self.assertEqual(z.read(f"{info}/METADATA").decode(), meta)

    def test_sdist_builds_again(self) -> None:
        # The sdist holds the backend too, so pip can build a wheel from it.
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_sdist(d)
            with tarfile.open(os.path.join(d, name)) as t:
                names = t.getnames()
            for rel in ("pyproject.toml", "README.md", "PKG-INFO", "_backend/repose_backend.py",
                        "repose/__init__.py", "repose/py.typed"):
                self.assertIn(f"repose-0.1.0/{rel}", names)


if __name__ == "__main__":
    unittest.main()
