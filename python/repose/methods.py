# SPDX-License-Identifier: MIT
"""One Python method per reposed protocol method (proto/PROTOCOL.md).

:class:`Methods` is shared by :class:`repose.Client` (each call waits for
its reply and returns the decoded ``result``) and by pipelines (each call
returns a :class:`repose.Pending`).  A method's name is the protocol's with
``.`` replaced by ``_``; its keyword arguments are the protocol's params,
and an argument left at ``None`` is not sent (the daemon's default
applies).  Shapes are dicts as the protocol writes them, e.g.
``{"sphere": {"center": [0, 0, 1], "radius": 0.5}}``; joint vectors, paths
and batches may be lists or numpy arrays.  A numpy array of joint values
(1-D for one vector, 2-D rows x joints for a batch or a path) goes in
binary, as ``joints_f64`` / ``path_f64`` (little-endian float64 in base64,
proto/PROTOCOL.md, Binary joint arrays): no decimal text either way, and
the same doubles, so the same results bit for bit; lists go as JSON.

Objects (rigid groups of shapes with a pose) go as ``objects={name:
{"pose": pose, "shapes": {id: shape}}}`` in scene_create, scene_put and
scene_replace, and move with :meth:`Methods.scene_move`; a pose is
``{"translation": [x, y, z], "rotation": {"w", "x", "y", "z"}}`` (see
:func:`pose`) or ``{"matrix": [[r00, r01, r02, tx], [r10, ...], [r20, ...]]}``.

Robot instances (a kinematic model placed at a joint vector and a base
pose; its link shapes become scene shapes ``"name/<model shape id>"``) go as
``robots={name: {"model": model, "joints": joint vector, "base": pose}}``
(joints and base optional: the model's default positions, the identity) in
the same three methods, and move with ``scene_move(scene, robots={name:
{"joints": ..., "base": ...}})``, beside objects or alone.  Robot and object
names share one namespace: ``ignore=`` and :meth:`Methods.scene_remove` take
either.

Point clouds (spheres of one radius, one per point or per occupied voxel,
replaced whole by name; proto/PROTOCOL.md, Point clouds) go as
``clouds={name: {"points": points, "radius": r, "voxel": v}}`` (voxel
optional) in the same three methods.  ``points`` is an (N, 3) numpy array
(sent as base64 float32, ``points_f32``) or a list of [x, y, z] rows (sent
as JSON up to :data:`repose.wire.CLOUD_JSON_MAX_POINTS` rows, as
``points_f32`` beyond); a cloud from scene.get ({"radius", "count",
"points_f32"}) can be put back as it is, and :func:`repose.cloud_points`
reads its centres.  A cloud's spheres are the scene shapes ``"name/k"``;
its name shares the objects' namespace (``ignore=``, scene_remove).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .wire import encode_cloud, f64_rows, number_rows

Shape = Mapping[str, Any]
Pose = Mapping[str, Any]
JointVector = Union[Sequence[float], Mapping[str, float], Any]  # list, dict or numpy array
Object = Mapping[str, Any]  # {"pose": Pose (optional), "shapes": {id: Shape}}
Robot = Mapping[str, Any]  # {"model": name, "joints": JointVector (opt.), "base": Pose (opt.)}
RobotMove = Mapping[str, Any]  # {"joints": JointVector (optional), "base": Pose (optional)}
Cloud = Mapping[str, Any]  # {"points": (N, 3) array or rows, "radius": r, "voxel": v (optional)}


def pose(translation: Optional[Sequence[float]] = None,
         rotation: Optional[Sequence[float]] = None) -> Dict[str, Any]:
    """A pose as the protocol reads it: ``translation`` [x, y, z] (none: at
    the origin) and ``rotation`` a Hamilton quaternion given as (w, x, y, z)
    (none: the identity; the daemon wants it of norm within 1e-6 of 1), e.g.
    ``pose([1, 0, 0], (0, 0, 0, 1))`` turns half a turn about z and moves
    1 m along x.  Numpy arrays are accepted for both."""
    out: Dict[str, Any] = {}
    if translation is not None:
        t = [float(v) for v in (translation.tolist() if hasattr(translation, "tolist")
                                else translation)]
        if len(t) != 3:
            raise ValueError(f"translation must have 3 numbers, not {len(t)}")
        out["translation"] = t
    if rotation is not None:
        q = [float(v) for v in (rotation.tolist() if hasattr(rotation, "tolist") else rotation)]
        if len(q) != 4:
            raise ValueError(f"rotation must be a quaternion (w, x, y, z), not {len(q)} numbers")
        out["rotation"] = dict(zip("wxyz", q))
    return out


def _names(names: Optional[Iterable[str]]) -> Optional[List[str]]:
    """A list of object names (ignore=) from any iterable; None stays None.
    A lone string is one name, not its characters."""
    if names is None:
        return None
    if isinstance(names, str):
        return [names]
    return list(names)


def _clouds(clouds: Optional[Mapping[str, Cloud]], method: str) -> Optional[Dict[str, Any]]:
    """The clouds param: each cloud's points encoded by
    :func:`repose.wire.encode_cloud`; None stays None.  A ValueError names
    the method and the value's path."""
    if clouds is None:
        return None
    try:
        return {name: encode_cloud(c, f"params.clouds.{name}") for name, c in clouds.items()}
    except ValueError as e:
        raise ValueError(f"{method}: {e}") from None


def _params(**kw: Any) -> Dict[str, Any]:
    """The params object: the arguments that were given."""
    return {k: v for k, v in kw.items() if v is not None}


def _joint_members(key: str, value: Any, ndim: int, name: str,
                   rows: bool = False) -> Dict[str, Any]:
    """The members that carry joint values under ``key``: a numpy array of
    ``ndim`` dimensions in binary (``key_f64``; a table with its row count,
    ``rows``, so that rows of the wrong length are refused, never read as
    other rows), anything else as JSON (with ``rows``, a table of numbers
    formatted by :func:`number_rows`)."""
    binary = f64_rows(value, ndim, name)
    if binary is not None:
        return {key + "_f64": binary, "rows": len(value) if ndim == 2 else None}
    return {key: number_rows(value, name) if rows else value}


class Methods:
    """The protocol's methods over ``_call(method, params)``."""

    def _call(self, method: str, params: Optional[Dict[str, Any]]) -> Any:
        raise NotImplementedError

    def call(self, method: str, params: Optional[Mapping[str, Any]] = None, /,
             **kw: Any) -> Any:
        """Any method by its protocol name, with params as a dict and/or keywords:
        ``call("scene.get", scene="lab")``, ``call("scene.get", {"scene": "lab"})``."""
        merged = dict(params or {})
        merged.update(kw)
        return self._call(method, merged or None)

    # ---- server ------------------------------------------------------------------

    def ping(self) -> Any:
        """Health check: ``{"pong": True}``."""
        return self._call("ping", None)

    def hello(self) -> Any:
        """``server``, ``version``, ``protocol``, ``run_id``, ``methods``, ``limits``."""
        return self._call("hello", None)

    def stats(self) -> Any:
        """Counters: connections, requests by method and error code, limits hit,
        scenes, models, shapes, the store's revision, watches, memory, latency,
        and with --data-dir the journal and the last snapshot."""
        return self._call("stats", None)

    def tessellation(self, *, segments: Optional[int] = None, rings: Optional[int] = None) -> Any:
        """The unit templates of the one tessellation of the shapes (``round``,
        ``box``, ``square``) that the viewer and :mod:`repose.gltf` place per
        shape; ``segments`` around and ``rings`` per hemisphere of the round one."""
        return self._call("tessellation", _params(segments=segments, rings=rings))

    def save(self) -> Any:
        """Writes a snapshot now (daemon started with --data-dir; the journal
        starts again from it): its revision, size in bytes and duration in ms.
        StorageError without --data-dir or when the write fails."""
        return self._call("save", None)

    def auth(self, token: str) -> Any:
        """Authenticates a TCP connection (the client does it itself when given a token)."""
        return self._call("auth", {"token": token})

    # ---- geometry ----------------------------------------------------------------

    def distance(self, a: Shape, b: Shape, *, witness: Optional[bool] = None) -> Any:
        """Signed distance between two shapes (positive gap, 0 touching, negative
        penetration); with ``witness=True`` also ``point_a``, ``point_b``, ``normal``."""
        return self._call("distance", _params(a=a, b=b, witness=witness))

    def violates_margin(self, a: Shape, b: Shape, margin: float) -> Any:
        """``violates`` (distance < margin, strictly) and ``distance``."""
        return self._call("violates_margin", _params(a=a, b=b, margin=margin))

    # ---- scenes ------------------------------------------------------------------

    def scene_create(self, scene: str, shapes: Optional[Mapping[str, Shape]] = None, *,
                     objects: Optional[Mapping[str, Object]] = None,
                     robots: Optional[Mapping[str, Robot]] = None,
                     clouds: Optional[Mapping[str, Cloud]] = None) -> Any:
        """Creates a scene ({id: shape}, ``objects`` {name: {"pose", "shapes"}},
        ``robots`` {name: {"model", "joints", "base"}} and ``clouds`` {name:
        {"points", "radius", "voxel"}}); returns ``scene`` and ``revision``."""
        return self._call("scene.create", _params(scene=scene, shapes=shapes, objects=objects,
                                                  robots=robots,
                                                  clouds=_clouds(clouds, "scene.create")))

    def scene_delete(self, scene: str) -> Any:
        """Deletes a scene; returns ``scene``, ``deleted`` and the ``revision`` it took."""
        return self._call("scene.delete", _params(scene=scene))

    def scene_list(self) -> Any:
        """``scenes``: [{``scene``, ``revision``, ``shapes``}] sorted by name."""
        return self._call("scene.list", None)

    def scene_get(self, scene: str, ids: Optional[Iterable[str]] = None) -> Any:
        """``scene``, ``revision`` and ``shapes`` ({id: shape}, sorted by id).
        Without ``ids``: the scene's own shapes, ``objects`` ({name:
        {"pose": {"matrix": ...}, "shapes": {local id: shape}}}) when it has
        any, ``robots`` ({name: {"model", "joints": [values in the
        model's joint order], "base": {"matrix": ...}}}) when it has any,
        and ``clouds`` ({name: {"radius", "count", "points_f32"}}: read the
        centres with :func:`repose.cloud_points`, put it back as it is)
        when it has any; with ``ids``, any shape, an object's or a robot's
        in world coordinates as ``"name/id"``."""
        return self._call("scene.get", _params(scene=scene, ids=None if ids is None else list(ids)))

    def scene_put(self, scene: str, shapes: Optional[Mapping[str, Shape]] = None, *,
                  objects: Optional[Mapping[str, Object]] = None,
                  robots: Optional[Mapping[str, Robot]] = None,
                  clouds: Optional[Mapping[str, Cloud]] = None,
                  if_revision: Optional[int] = None, create: Optional[bool] = None) -> Any:
        """Inserts or replaces shapes, ``objects`` ({name: {"pose", "shapes"}}),
        ``robots`` ({name: {"model", "joints", "base"}}; joints a list, a
        numpy array or {joint name: value}) and ``clouds`` ({name:
        {"points": (N, 3) array or [x, y, z] rows, "radius", "voxel"}}), each
        object, robot or cloud replacing the one of that name whole, all or
        nothing; returns the new
        ``revision``.  ``if_revision`` makes it a compare-and-set
        (:class:`RevisionConflict`).  An unknown model is :class:`NotFound`
        (``data["kind"] == "model"``); a frame-indexed model or a wrong joint
        count :class:`InvalidParams` at its path, and so is a bad cloud
        (``params.clouds.cam.radius``); a cloud point that is NaN or not
        finite in float32 is a ValueError before anything is sent."""
        return self._call("scene.put", _params(scene=scene, shapes=shapes, objects=objects,
                                               robots=robots, clouds=_clouds(clouds, "scene.put"),
                                               if_revision=if_revision, create=create))

    def scene_remove(self, scene: str, ids: Iterable[str], *,
                     if_revision: Optional[int] = None) -> Any:
        """Removes shapes by id, and objects, robot instances and clouds by
        name (with their shapes); returns ``revision`` and ``removed`` (how
        many were there).  An object's, a robot's or a cloud's own shape
        ``"name/id"`` is refused (:class:`InvalidParams`): remove or put it
        instead."""
        return self._call("scene.remove", _params(scene=scene, ids=list(ids),
                                                  if_revision=if_revision))

    def scene_replace(self, scene: str, shapes: Optional[Mapping[str, Shape]] = None, *,
                      objects: Optional[Mapping[str, Object]] = None,
                      robots: Optional[Mapping[str, Robot]] = None,
                      clouds: Optional[Mapping[str, Cloud]] = None,
                      if_revision: Optional[int] = None, create: Optional[bool] = None) -> Any:
        """Swaps the whole content of a scene (its shapes, ``objects``,
        ``robots`` and ``clouds``) atomically; returns the new ``revision``."""
        return self._call("scene.replace", _params(scene=scene, shapes=shapes, objects=objects,
                                                   robots=robots,
                                                   clouds=_clouds(clouds, "scene.replace"),
                                                   if_revision=if_revision, create=create))

    def scene_move(self, scene: str, objects: Optional[Mapping[str, Pose]] = None, *,
                   robots: Optional[Mapping[str, RobotMove]] = None,
                   if_revision: Optional[int] = None) -> Any:
        """Gives objects new poses ({name: pose}, see :func:`pose`) and robot
        instances new joints and/or bases ({name: {"joints": joint vector,
        "base": pose}}; what is left out stays), all in one revision; returns
        ``scene`` and ``revision``.  Give ``objects``, ``robots`` or both
        (neither is :class:`InvalidParams`).  An unknown object or robot is
        :class:`NotFound` (``data["kind"]`` ``"object"`` or ``"robot"``); an
        object named under ``robots``, or a robot under ``objects``,
        :class:`InvalidParams` at its path."""
        return self._call("scene.move", _params(scene=scene, objects=objects, robots=robots,
                                                if_revision=if_revision))

    def scene_attach(self, scene: str, object: str, robot: str, link: str, *,
                     rel: Optional[Pose] = None, if_revision: Optional[int] = None) -> Any:
        """Fixes object ``object`` to link ``link`` of robot instance ``robot``:
        it then moves with the link, at ``rel`` (its pose in the link's frame;
        left out: where it is now); returns ``scene`` and ``revision``."""
        return self._call("scene.attach", _params(scene=scene, object=object, robot=robot,
                                                  link=link, rel=rel, if_revision=if_revision))

    def scene_detach(self, scene: str, object: str, *,
                     if_revision: Optional[int] = None) -> Any:
        """Frees an attached object where it is; returns ``scene`` and ``revision``."""
        return self._call("scene.detach", _params(scene=scene, object=object,
                                                  if_revision=if_revision))

    def scene_distance(self, scene: str, shape: Optional[Shape] = None, *,
                       shapes: Optional[Mapping[str, Shape]] = None,
                       ids: Optional[Iterable[str]] = None,
                       max_distance: Optional[float] = None,
                       ignore: Optional[Iterable[str]] = None) -> Any:
        """Nearest scene shape to ``shape`` (or to any of ``shapes``): ``distance``,
        ``nearest``, ``revision``; with ``max_distance`` also every closer ``pairs``.
        ``ignore``: names of objects, robot instances or clouds whose shapes
        are left out."""
        return self._call("scene.distance", _params(
            scene=scene, shape=shape, shapes=shapes,
            ids=None if ids is None else list(ids), max_distance=max_distance,
            ignore=_names(ignore)))

    def scene_check(self, scene: str, margin: float, shape: Optional[Shape] = None, *,
                    shapes: Optional[Mapping[str, Shape]] = None,
                    ids: Optional[Iterable[str]] = None,
                    first_only: Optional[bool] = None,
                    ignore: Optional[Iterable[str]] = None) -> Any:
        """``violates`` and the violating ``pairs`` closer than ``margin``;
        ``ignore``: names of objects, robot instances or clouds whose shapes
        are left out."""
        return self._call("scene.check", _params(
            scene=scene, shape=shape, shapes=shapes, margin=margin,
            ids=None if ids is None else list(ids), first_only=first_only,
            ignore=_names(ignore)))

    def scene_watch(self, scene: str, since: Optional[int] = None) -> Any:
        """Low level: starts a watch on this connection (``watch`` id).  Prefer
        :meth:`repose.Client.watch`, which reads the notifications for you."""
        return self._call("scene.watch", _params(scene=scene, since=since))

    def scene_unwatch(self, watch: int) -> Any:
        """Ends a watch of this connection."""
        return self._call("scene.unwatch", _params(watch=watch))

    # ---- models ------------------------------------------------------------------

    def model_put(self, model: str, *, links: Optional[Sequence[Mapping[str, Any]]] = None,
                  urdf: Optional[str] = None, srdf: Optional[str] = None,
                  joints: Optional[Sequence[Mapping[str, Any]]] = None,
                  **options: Any) -> Any:
        """Creates or replaces a robot model: frame-indexed ``links``, a ``urdf``
        document (with ``srdf``), or the kinematic JSON form (``joints``,
        ``links``, ...).  Other params (``safety_margin``, ``allowed_pairs``,
        ``self_collision``, ``allow_adjacent``, ``root``, ...) go as keywords."""
        return self._call("model.put", _params(model=model, links=links, urdf=urdf, srdf=srdf,
                                               joints=joints, **options))

    def model_get(self, model: str) -> Any:
        """The model as stored (a kinematic one with ``joints``, ``limits``, ...)."""
        return self._call("model.get", _params(model=model))

    def model_delete(self, model: str) -> Any:
        """Deletes a model; returns the ``revision`` it took.  A model a
        robot instance uses is :class:`AlreadyExists` (-32002, ``data``:
        ``kind``, ``name``, ``scene``, ``robot``) until the robot is removed
        (model_put refuses to replace it likewise)."""
        return self._call("model.delete", _params(model=model))

    def model_list(self) -> Any:
        """``models``: [{``model``, ``revision``, ``links``, ``shapes``}] sorted
        by name: ``links`` as :meth:`model_get` lists them, ``shapes`` what a
        check tests (a kinematic link may hold several shapes, or none)."""
        return self._call("model.list", None)

    def model_fk(self, model: str, joints: JointVector, *, base: Optional[Pose] = None) -> Any:
        """Forward kinematics: every link's world pose at ``joints`` (a list,
        {joint name: value}, a state's name, or a 1-D numpy array, sent as
        ``joints_f64``)."""
        return self._call("model.fk", _params(
            model=model, base=base,
            **_joint_members("joints", joints, 1, "model.fk: params.joints")))

    # ---- checks ------------------------------------------------------------------

    def check(self, model: str, *, scene: Optional[str] = None, joints: Optional[JointVector] = None,
              frames: Optional[Sequence[Pose]] = None, base: Optional[Pose] = None,
              margin: Optional[float] = None, report: Optional[str] = None,
              ignore: Optional[Iterable[str]] = None, **options: Any) -> Any:
        """Checks one configuration (``joints`` for a kinematic model, else
        ``frames``) against ``scene`` and itself: ``valid``, ``revision``, and
        what ``report`` asks for (``"first"``, ``"closest"``, ``"all"``).
        ``ignore``: names of the scene's objects, robot instances or clouds to leave
        out (needs ``scene``; a robot checking its own model ignores its own
        instance).  ``joints`` as a 1-D numpy array goes as ``joints_f64``
        (binary float64); with ``group=`` it holds the group's joints."""
        return self._call("check", _params(
            model=model, scene=scene, frames=frames, base=base, margin=margin, report=report,
            ignore=_names(ignore), **_joint_members("joints", joints, 1, "check: params.joints"),
            **options))

    def check_batch(self, model: str, *, scene: Optional[str] = None,
                    joints: Optional[Any] = None,
                    configurations: Optional[Sequence[Mapping[str, Any]]] = None,
                    base: Optional[Pose] = None, margin: Optional[float] = None,
                    report: Optional[str] = None, ignore: Optional[Iterable[str]] = None,
                    **options: Any) -> Any:
        """Checks many configurations: ``joints`` (a list of joint vectors, or an
        n x dof numpy array, sent as ``joints_f64``: binary float64 rows, the
        same results as the list) or ``configurations``; ``results`` in order.
        ``ignore``: names of the scene's objects, robot instances or clouds to leave
        out (needs ``scene``; a robot checking its own model ignores its own
        instance)."""
        return self._call("check.batch", _params(
            model=model, scene=scene, configurations=configurations, base=base, margin=margin,
            report=report, ignore=_names(ignore),
            **_joint_members("joints", joints, 2, "check.batch: params.joints", rows=True),
            **options))

    def plan(self, model: str, start: Any, goal: Any = None, *, goals: Any = None,
             scene: Optional[str] = None, edges: Optional[str] = None,
             timeout_ms: Optional[float] = None, seed: Optional[int] = None,
             simplify: Optional[bool] = None, max_step: Optional[float] = None,
             margin: Optional[float] = None, ignore: Optional[Iterable[str]] = None,
             **options: Any) -> Any:
        """Plans a path from joint vector ``start`` to ``goal`` (or to any of
        ``goals``) among ``scene`` with RRT-Connect in the daemon, ``edges``
        ``"certified"`` (default: every configuration of every edge proven
        clear) or ``"discrete"``: ``solved``, ``path`` (a list of joint
        vectors: ``numpy.array(r["path"])`` makes it an array), or ``reason``
        when not solved; ``stats``.  Vectors may be lists, name-to-value
        mappings or numpy arrays.  The same ``seed`` against the same scene
        revision gives the same path.  ``ignore``: names of the scene's
        objects, robot instances or clouds to leave out."""
        def vector(v: Any) -> Any:
            return v.tolist() if hasattr(v, "tolist") else v
        if goals is not None:
            goals = number_rows(goals, "plan: params.goals")
        return self._call("plan", _params(model=model, start=vector(start), goal=vector(goal),
                                          goals=goals, scene=scene, edges=edges,
                                          timeout_ms=timeout_ms, seed=seed, simplify=simplify,
                                          max_step=max_step, margin=margin,
                                          ignore=_names(ignore), **options))

    def check_motion(self, model: str, path: Any, *, scene: Optional[str] = None,
                     mode: Optional[str] = None, resolution: Optional[float] = None,
                     tolerance: Optional[float] = None, earliest: Optional[bool] = None,
                     margin: Optional[float] = None, ignore: Optional[Iterable[str]] = None,
                     **options: Any) -> Any:
        """Checks the motion through the waypoints ``path`` (two or more joint
        vectors, or a waypoints x dof numpy array, sent as ``path_f64``),
        ``mode`` ``"discrete"`` (default) or ``"certified"``: ``valid`` and,
        when not, where it first fails.
        ``ignore``: names of the scene's objects, robot instances or clouds to leave
        out (needs ``scene``; a robot checking its own model ignores its own
        instance)."""
        return self._call("check.motion", _params(
            model=model, scene=scene, mode=mode, resolution=resolution, tolerance=tolerance,
            earliest=earliest, margin=margin, ignore=_names(ignore),
            **_joint_members("path", path, 2, "check.motion: params.path", rows=True), **options))
