# SPDX-License-Identifier: MIT
"""Python client for reposed, the repose collision-query daemon.

    import repose
    with repose.Client() as c:                       # /tmp/reposed.sock
        c.scene_create("bench", {"post": {"capsule": {"a": [0.5, 0, 0], "b": [0.5, 0, 1],
                                                     "radius": 0.05}}})
        print(c.scene_distance("bench", {"sphere": {"center": [0, 0, 0.5], "radius": 0.1}}))

Every protocol method is a method of :class:`Client` (``.`` becomes ``_``);
errors are :class:`ReposeError` subclasses; :func:`pose` builds a pose
(translation and quaternion) for objects and checks; :func:`cloud_points`
reads the centres of a point cloud scene.get returned;
:meth:`Client.load_urdf` sends a URDF with the mesh files its collisions
name (:func:`read_urdf_meshes` finds them).  Standard library
only; numpy arrays are accepted wherever the protocol takes numbers (a
cloud's points as packed float32, joint arrays of check, check_batch,
check_motion and model_fk as packed float64).
"""

from .client import Client, Notification, Pending, Pipeline, Watch
from .meshes import MeshNotFound, read_urdf_meshes
from .methods import pose
from .wire import RawJSON, cloud_points, encode_request, f64_rows, number_rows
from .errors import (AlreadyExists, ConnectionLost, InternalError, InvalidParams, InvalidRequest,
                     LimitExceeded, MethodNotFound, NotFound, ParseError, ProtocolError,
                     ReposeError, RevisionConflict, ShuttingDown, StorageError, Unauthorized)

__version__ = "0.1.0"

__all__ = [
    "Client", "Notification", "Pending", "Pipeline", "Watch", "encode_request", "RawJSON",
    "number_rows", "f64_rows", "pose", "cloud_points", "MeshNotFound", "read_urdf_meshes",
    "ReposeError", "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams",
    "InternalError", "NotFound", "AlreadyExists", "RevisionConflict", "LimitExceeded",
    "Unauthorized", "ShuttingDown", "StorageError", "ConnectionLost", "ProtocolError",
]
