// SPDX-License-Identifier: MIT
// The repose viewer (docs/ARCHITECTURE.md, "The viewer"): lists the daemon's
// scenes and models over its JSON-RPC on /ws (proto/PROTOCOL.md), draws a
// scene with the daemon's own tessellation (the `tessellation` method, which
// the Python glTF export places too), follows it live through `scene.watch`,
// and checks a model at joints chosen with sliders, colouring what violates.
// window.reposeViewer is the hook the browser test reads the page through.
import * as THREE from 'three';
import { OrbitControls } from './OrbitControls.js';

const $ = (id) => document.getElementById(id);
const COLOUR = {
  scene: new THREE.Color(0x9ea3ad), object: new THREE.Color(0x6f8fb8),
  robot: new THREE.Color(0xf08a1c), cloud: new THREE.Color(0x2e8fd9),
  model: new THREE.Color(0x3cb371), violation: new THREE.Color(0xe0301e),
  hover: new THREE.Color(0xffd400),
};
const FINE = { segments: 24, rings: 8 }; // the daemon's default resolution
const COARSE = { segments: 10, rings: 3 }; // for scenes of many round shapes
// Template vertices a frame may draw: past this the scene's shapes are drawn
// as sprites, one vertex each.  A GPU draws millions of vertices a frame; a
// software renderer (Chromium's SwiftShader, Mesa's llvmpipe: what a
// browser without a GPU uses) about 2 million a second, so it gets a
// smaller budget.  `#detail=mesh` in the address forces meshes,
// `#detail=sprites` sprites.
const MESH_BUDGET = 4000000;
const MESH_BUDGET_SOFTWARE = 60000;
const HALFSPACE_MIN_SIZE = 10; // as the glTF export: max(10 m, 4 diagonals)
const HALFSPACE_SCALE = 4;
const FAR = 1e7; // picking rays stop here (metres)
const SCENES_SHOWN = 500; // scenes listed at once (a filter finds the rest)

// ---- JSON-RPC over /ws ---------------------------------------------------------------

class Rpc {
  constructor(onNotify, onState) {
    this.onNotify = onNotify;
    this.onState = onState;
    this.pending = new Map();
    this.next = 1;
    this.ws = null;
  }

  connect() {
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => this.onState('open');
    ws.onclose = () => {
      for (const p of this.pending.values()) p.reject(new Error('connection closed'));
      this.pending.clear();
      if (this.ws === ws) this.onState('closed');
    };
    ws.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch { return; }
      if (m && m.id !== undefined && m.id !== null && this.pending.has(m.id)) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.error) {
          const err = new Error(m.error.message);
          err.code = m.error.code;
          err.data = m.error.data;
          p.reject(err);
        } else {
          p.resolve(m.result);
        }
      } else if (m && m.method) {
        this.onNotify(m);
      }
    };
  }

  call(method, params) {
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new Error('not connected'));
        return;
      }
      const id = this.next++;
      this.pending.set(id, { resolve, reject });
      const msg = { jsonrpc: '2.0', id, method };
      if (params !== undefined) msg.params = params;
      this.ws.send(JSON.stringify(msg));
    });
  }
}

// ---- the daemon's templates as three.js geometry ----------------------------------------

function flat(rows) {
  const out = new Float32Array(rows.length * 3);
  rows.forEach((r, k) => { out[3 * k] = r[0]; out[3 * k + 1] = r[1]; out[3 * k + 2] = r[2]; });
  return out;
}

function indices(tris) {
  const out = new Uint32Array(tris.length * 3);
  tris.forEach((t, k) => { out[3 * k] = t[0]; out[3 * k + 1] = t[1]; out[3 * k + 2] = t[2]; });
  return new THREE.BufferAttribute(out, 1);
}

function roundGeometry(t) {
  const g = new THREE.BufferGeometry();
  const dir = flat(t.round.directions);
  g.setAttribute('position', new THREE.BufferAttribute(dir, 3));
  g.setAttribute('normal', new THREE.BufferAttribute(dir.slice(), 3));
  g.setAttribute('tessEnd', new THREE.BufferAttribute(Float32Array.from(t.round.ends), 1));
  g.setIndex(indices(t.round.triangles));
  return g;
}

function plainGeometry(part) {
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(flat(part.corners), 3));
  g.setAttribute('normal', new THREE.BufferAttribute(flat(part.normals), 3));
  g.setIndex(indices(part.triangles));
  return g;
}

// Spheres and capsules share the round template: the instance matrix puts
// end a's hemisphere (translation a, rotation taking z to b - a, scale r),
// and the vertex shader moves end b's vertices up the axis by |b - a| / r.
function roundMaterial() {
  const m = new THREE.MeshLambertMaterial({ color: 0xffffff });
  m.onBeforeCompile = (sh) => {
    sh.vertexShader = sh.vertexShader
      .replace('#include <common>', '#include <common>\nattribute float tessEnd;\nattribute float capLen;')
      .replace('#include <begin_vertex>', '#include <begin_vertex>\ntransformed.z += tessEnd * capLen;');
  };
  m.customProgramCacheKey = () => 'repose-round';
  return m;
}

// ---- small vector helpers (plain arrays) ----------------------------------------------

const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const scale = (k, a) => [k * a[0], k * a[1], k * a[2]];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const norm = (a) => Math.sqrt(dot(a, a));
const Z = new THREE.Vector3(0, 0, 1);

function quatOf(q) { // protocol {w,x,y,z} (any length) -> unit THREE.Quaternion
  const t = q ? new THREE.Quaternion(q.x, q.y, q.z, q.w) : new THREE.Quaternion();
  return t.length() > 0 ? t.normalize() : t.identity();
}

function rotate(q, p) { // p rotated by the THREE.Quaternion q
  const v = new THREE.Vector3(p[0], p[1], p[2]).applyQuaternion(q);
  return [v.x, v.y, v.z];
}

function kindOf(shape) {
  for (const k of ['sphere', 'capsule', 'box', 'halfspace']) if (k in shape) return k;
  return null;
}

// A link-frame shape where a model.fk pose puts it.
function place(shape, pose) {
  const q = quatOf(pose.rotation);
  const t = pose.translation || [0, 0, 0];
  const tf = (p) => add(rotate(q, p), t);
  if (shape.sphere) return { sphere: { center: tf(shape.sphere.center), radius: shape.sphere.radius } };
  if (shape.capsule) {
    const c = shape.capsule;
    return { capsule: { a: tf(c.a), b: tf(c.b), radius: c.radius } };
  }
  if (shape.box) {
    const r = q.clone().multiply(quatOf(shape.box.rotation));
    return { box: { center: tf(shape.box.center), half_extents: shape.box.half_extents,
                    rotation: { w: r.w, x: r.x, y: r.y, z: r.z } } };
  }
  return null;
}

function bounds(shape) { // [lo, hi] of a bounded shape, null for a half-space
  if (shape.sphere) {
    const { center: c, radius: r } = shape.sphere;
    return [sub(c, [r, r, r]), add(c, [r, r, r])];
  }
  if (shape.capsule) {
    const { a, b, radius: r } = shape.capsule;
    return [[0, 1, 2].map((j) => Math.min(a[j], b[j]) - r), [0, 1, 2].map((j) => Math.max(a[j], b[j]) + r)];
  }
  if (shape.box) {
    const q = quatOf(shape.box.rotation);
    const h = shape.box.half_extents;
    const axes = [[1, 0, 0], [0, 1, 0], [0, 0, 1]].map((e) => rotate(q, e));
    const ext = [0, 1, 2].map((j) => axes.reduce((s, ax, i) => s + Math.abs(ax[j]) * h[i], 0));
    return [sub(shape.box.center, ext), add(shape.box.center, ext)];
  }
  return null;
}

// ---- instanced batches ------------------------------------------------------------------

// Marks one slot's values of an attribute for upload: the next frame sends
// the slots that changed, not the whole buffer (a robot moving in a scene of
// 100,000 shapes re-sends its own few).  Past 256 ranges, the whole buffer.
function touch(attr, slot, width) {
  if (!attr.hooked) {
    attr.hooked = true;
    attr.onUpload(() => { attr.wholeNext = false; });
  }
  if (!attr.wholeNext && attr.updateRanges.length < 256) attr.addUpdateRange(slot * width, width);
  else { attr.clearUpdateRanges(); attr.wholeNext = true; }
  attr.needsUpdate = true;
}

const tmpM = new THREE.Matrix4();
const tmpQ = new THREE.Quaternion();
const tmpP = new THREE.Vector3();
const tmpS = new THREE.Vector3();

// Items in slots 0 .. count-1 of a drawable's buffers: one added takes the
// next slot (the buffers grow by doubling), one removed gives its slot to
// the last.  A subclass makes the buffers (grow), writes a slot (write) and
// says how many are drawn (shown).
class Slots {
  constructor() {
    this.items = [];
    this.capacity = 0;
  }

  add(item) {
    if (this.items.length === this.capacity) this.grow(Math.max(2 * this.capacity, this.initial));
    item.slot = this.items.length;
    this.items.push(item);
    this.write(item);
    this.shown(this.items.length);
  }

  remove(item) {
    const last = this.items.pop();
    if (last !== item) {
      this.items[item.slot] = last;
      last.slot = item.slot;
      this.write(last);
    }
    item.slot = -1;
    this.shown(this.items.length);
  }

  get count() { return this.items.length; }
}

class Batch extends Slots {
  constructor(kind, geometry, material, parent) {
    super();
    this.kind = kind; // 'round' or 'box'
    this.geometry = geometry;
    this.material = material;
    this.parent = parent;
    this.mesh = null;
    this.initial = 64;
    this.grow(this.initial);
  }

  shown(n) { this.mesh.count = n; }

  grow(capacity) {
    const g = this.geometry.clone();
    if (this.kind === 'round') g.setAttribute('capLen', new THREE.InstancedBufferAttribute(new Float32Array(capacity), 1));
    const mesh = new THREE.InstancedMesh(g, this.material, capacity);
    mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    mesh.setColorAt(0, COLOUR.scene);
    mesh.frustumCulled = false;
    if (this.mesh) {
      this.parent.remove(this.mesh);
      this.mesh.geometry.dispose();
      this.mesh.dispose();
    }
    this.mesh = mesh;
    this.capacity = capacity;
    this.parent.add(mesh);
    this.items.forEach((it) => this.write(it));
    mesh.count = this.items.length;
  }

  setGeometry(geometry) {
    this.geometry = geometry;
    this.grow(this.capacity);
  }

  write(item) {
    const s = item.shape;
    if (this.kind === 'round') {
      const a = s.sphere ? s.sphere.center : s.capsule.a;
      const b = s.sphere ? a : s.capsule.b;
      const r = Math.max((s.sphere || s.capsule).radius, 1e-5);
      const ab = sub(b, a);
      const len = norm(ab);
      tmpQ.setFromUnitVectors(Z, len > 0 ? new THREE.Vector3(ab[0] / len, ab[1] / len, ab[2] / len) : Z);
      tmpM.compose(tmpP.set(a[0], a[1], a[2]), tmpQ, tmpS.set(r, r, r));
      const cap = this.mesh.geometry.getAttribute('capLen');
      cap.setX(item.slot, len / r);
      touch(cap, item.slot, 1);
    } else {
      const { center: c, half_extents: h } = s.box;
      tmpM.compose(tmpP.set(c[0], c[1], c[2]), quatOf(s.box.rotation),
        tmpS.set(Math.max(h[0], 1e-6), Math.max(h[1], 1e-6), Math.max(h[2], 1e-6)));
    }
    this.mesh.setMatrixAt(item.slot, tmpM);
    touch(this.mesh.instanceMatrix, item.slot, 16);
    this.paint(item);
  }

  paint(item) {
    this.mesh.setColorAt(item.slot, item.colour());
    touch(this.mesh.instanceColor, item.slot, 3);
  }
}

// Far detail: one sprite per shape, a shaded disc the size of the shape's
// bounding sphere (a capsule's around its middle, a box's through its
// corners), for scenes with more shapes than MESH_BUDGET allows as meshes.
const SPRITE_VERTEX = `
attribute float radius;
attribute vec3 tint;
uniform float scale;
varying vec3 vTint;
void main() {
  vec4 mv = modelViewMatrix * vec4(position, 1.0);
  gl_Position = projectionMatrix * mv;
  gl_PointSize = max(2.0, 2.0 * radius * scale / max(-mv.z, 1e-6));
  vTint = tint;
}`;
const SPRITE_FRAGMENT = `
varying vec3 vTint;
void main() {
  vec2 p = gl_PointCoord * 2.0 - 1.0;
  float d = dot(p, p);
  if (d > 1.0) discard;
  vec3 n = vec3(p.x, -p.y, sqrt(1.0 - d));
  gl_FragColor = vec4(vTint * (0.45 + 0.55 * max(dot(n, normalize(vec3(0.4, 0.5, 0.8))), 0.0)), 1.0);
}`;

class SpriteBatch extends Slots {
  constructor(parent) {
    super();
    this.parent = parent;
    this.material = new THREE.ShaderMaterial({ vertexShader: SPRITE_VERTEX, fragmentShader: SPRITE_FRAGMENT, uniforms: { scale: { value: 1 } } });
    this.points = null;
    this.initial = 1024;
    this.grow(this.initial);
  }

  shown(n) { this.points.geometry.setDrawRange(0, n); }

  grow(capacity) {
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(3 * capacity), 3).setUsage(THREE.DynamicDrawUsage));
    g.setAttribute('radius', new THREE.BufferAttribute(new Float32Array(capacity), 1).setUsage(THREE.DynamicDrawUsage));
    g.setAttribute('tint', new THREE.BufferAttribute(new Float32Array(3 * capacity), 3).setUsage(THREE.DynamicDrawUsage));
    const points = new THREE.Points(g, this.material);
    points.frustumCulled = false;
    if (this.points) { this.parent.remove(this.points); this.points.geometry.dispose(); }
    this.points = points;
    this.capacity = capacity;
    this.parent.add(points);
    this.items.forEach((it) => this.write(it));
    g.setDrawRange(0, this.items.length);
  }

  write(item) {
    const s = item.shape, g = this.points.geometry;
    let c, r;
    if (s.sphere) { c = s.sphere.center; r = s.sphere.radius; }
    else if (s.capsule) { c = scale(0.5, add(s.capsule.a, s.capsule.b)); r = s.capsule.radius + 0.5 * norm(sub(s.capsule.b, s.capsule.a)); }
    else { c = s.box.center; r = norm(s.box.half_extents); }
    g.getAttribute('position').setXYZ(item.slot, c[0], c[1], c[2]);
    g.getAttribute('radius').setX(item.slot, r);
    touch(g.getAttribute('position'), item.slot, 3);
    touch(g.getAttribute('radius'), item.slot, 1);
    this.paint(item);
  }

  paint(item) {
    const t = this.points.geometry.getAttribute('tint'), col = item.colour();
    t.setXYZ(item.slot, col.r, col.g, col.b);
    touch(t, item.slot, 3);
  }
}

// ---- picking: a ray against the shapes, exactly enough for a hover ------------------------

// Closest points of segments p1-q1 and p2-q2 (Ericson, Real-Time Collision
// Detection, 5.1.9): [s, t, squared distance].
function segSeg(p1, q1, p2, q2) {
  const d1 = sub(q1, p1), d2 = sub(q2, p2), r = sub(p1, p2);
  const a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
  let s, t;
  if (e <= 1e-300) {
    t = 0;
    s = a > 0 ? Math.min(1, Math.max(0, -dot(d1, r) / a)) : 0;
  } else {
    const c = dot(d1, r), b = dot(d1, d2), den = a * e - b * b;
    s = den > 1e-18 * a * e ? Math.min(1, Math.max(0, (b * f - c * e) / den)) : 0;
    t = (b * s + f) / e;
    if (t < 0) { t = 0; s = Math.min(1, Math.max(0, -c / a)); }
    else if (t > 1) { t = 1; s = Math.min(1, Math.max(0, (b - c) / a)); }
  }
  const c1 = add(p1, scale(s, d1)), c2 = add(p2, scale(t, d2));
  const d = sub(c1, c2);
  return [s, t, dot(d, d)];
}

// Distance along the unit ray o + t d to where it enters the shape, or null.
function hit(shape, o, d) {
  if (shape.sphere || shape.capsule) {
    const a = shape.sphere ? shape.sphere.center : shape.capsule.a;
    const b = shape.sphere ? a : shape.capsule.b;
    const r = (shape.sphere || shape.capsule).radius;
    const [s, , d2] = segSeg(o, add(o, scale(FAR, d)), a, b);
    if (d2 > r * r) return null;
    return Math.max(0, s * FAR - Math.sqrt(r * r - d2));
  }
  if (shape.box) {
    const q = quatOf(shape.box.rotation).invert();
    const lo = rotate(q, sub(o, shape.box.center)), ld = rotate(q, d);
    let t0 = 0, t1 = FAR;
    for (let j = 0; j < 3; j++) {
      const h = shape.box.half_extents[j];
      if (Math.abs(ld[j]) < 1e-300) {
        if (Math.abs(lo[j]) > h) return null;
      } else {
        let ta = (-h - lo[j]) / ld[j], tb = (h - lo[j]) / ld[j];
        if (ta > tb) [ta, tb] = [tb, ta];
        t0 = Math.max(t0, ta);
        t1 = Math.min(t1, tb);
        if (t0 > t1) return null;
      }
    }
    return t0;
  }
  return null;
}

// ---- the viewer ----------------------------------------------------------------------

class Item {
  constructor(id, shape, owner, group) {
    this.id = id;
    this.shape = shape;
    this.kind = kindOf(shape);
    this.owner = owner; // 'scene', 'object', 'robot' or 'model'
    this.group = group; // an object's or robot's name, or null
    this.batch = null;
    this.slot = -1;
    this.hot = false; // in a violating pair of the last check
    this.hover = false;
  }

  colour() {
    if (this.hover) return COLOUR.hover;
    if (this.hot) return COLOUR.violation;
    return COLOUR[this.owner];
  }
}

class Viewer {
  constructor() {
    this.rpc = new Rpc((m) => this.notified(m), (s) => this.connState(s));
    this.conn = 'connecting';
    this.token = null;
    this.tess = null; // {fine, coarse} from the daemon
    this.scenes = [];
    this.models = [];
    this.sceneName = null;
    this.watch = null;
    this.revision = null;
    this.loaded = false;
    this.items = new Map(); // id -> Item (the scene's world shapes)
    this.kinds = { sphere: 0, capsule: 0, box: 0, halfspace: 0 }; // items by kind
    this.preview = new Map(); // id -> Item (the checked model's shapes)
    this.groups = new Map(); // name -> {kind, model, ids: Set}
    this.clouds = new Map(); // name -> {radius, count, points (Float32Array), obj}
    this.halfspaces = new Map(); // id -> THREE.Mesh
    this.modelShapes = new Map(); // model name -> its model.get shapes
    this.dirty = new Set(); // groups to read again
    this.fetching = false;
    this.queued = []; // notifications that came while the scene loaded
    this.updates = 0;
    this.lastUpdateMs = null;
    this.changedAt = new Map(); // group -> time its change arrived
    this.rtt = null;
    this.replicaLag = null;
    this.check = null; // {model, info, joints, result}
    this.opening = 0; // scenes opened (open() of an older one gives up)
    this.tessReady = new Promise((resolve) => { this.tessArrived = resolve; }); // (opening waits for it)
    this.choosing = 0; // models picked (selectModel() of an older one gives up)
    this.detailAt = 0; // shapes when the detail was last chosen
    this.listsAt = 0; // when scene.list and model.list were last read
    this.filter = '';
    this.needsRender = true;
    this.fpsRun = null;
    this.setupScene();
    this.setupUi();
    const m = /(?:^|[#&])token=([^&]*)/.exec(location.hash);
    if (m) this.token = decodeURIComponent(m[1]);
    this.rpc.connect();
    setInterval(() => this.tick(), 2000);
  }

  // -- three.js --

  setupScene() {
    const view = $('view');
    this.renderer = new THREE.WebGLRenderer({ antialias: false });
    this.renderer.setPixelRatio(window.devicePixelRatio || 1);
    const gl = this.renderer.getContext(), info = gl.getExtension('WEBGL_debug_renderer_info');
    this.glRenderer = String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
    this.software = /swiftshader|llvmpipe|softpipe|software/i.test(this.glRenderer);
    view.appendChild(this.renderer.domElement);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0xfbfbfd);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.01, 1000);
    this.camera.up.set(0, 0, 1); // z up, as robots are described
    this.camera.position.set(2.5, -3, 2);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8a8f99, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(3, -2, 5);
    this.scene.add(sun);
    this.grid = new THREE.GridHelper(10, 20, 0xc5c9d2, 0xe2e4ea);
    this.grid.rotation.x = Math.PI / 2;
    this.scene.add(this.grid);
    this.world = new THREE.Group();
    this.scene.add(this.world);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.addEventListener('change', () => { this.needsRender = true; });
    this.roundMat = roundMaterial();
    this.boxMat = new THREE.MeshLambertMaterial({ color: 0xffffff });
    this.planeMat = new THREE.MeshLambertMaterial({ color: 0x9ea3ad, transparent: true, opacity: 0.35, depthWrite: false });
    this.mouse = null;
    this.renderer.domElement.addEventListener('pointermove', (e) => {
      const r = this.renderer.domElement.getBoundingClientRect();
      this.mouse = [e.clientX - r.left, e.clientY - r.top];
    });
    this.renderer.domElement.addEventListener('pointerleave', () => { this.mouse = null; this.setHover(null); });
    new ResizeObserver(() => this.resize()).observe(view);
    this.resize();
    const frame = () => {
      requestAnimationFrame(frame);
      if (this.mouse && this.pickPending !== this.mouse) {
        this.pickPending = this.mouse;
        this.setHover(this.pick(this.mouse[0], this.mouse[1]));
      }
      if (this.needsRender || this.fpsRun) {
        this.renderer.render(this.scene, this.camera);
        this.needsRender = false;
        if (this.fpsRun) this.fpsRun.frames++;
      }
    };
    requestAnimationFrame(frame);
  }

  resize() {
    const v = $('view');
    const w = Math.max(1, v.clientWidth), h = Math.max(1, v.clientHeight);
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    if (this.sprites) this.sprites.material.uniforms.scale.value = h / (2 * Math.tan((this.camera.fov * Math.PI) / 360));
    this.needsRender = true;
  }

  batches() {
    if (!this.round) {
      this.round = new Batch('round', roundGeometry(this.tess.fine), this.roundMat, this.world);
      this.box = new Batch('box', plainGeometry(this.tess.fine.box), this.boxMat, this.world);
      this.sprites = new SpriteBatch(this.world);
      this.detail = 'fine';
      this.resize();
    }
  }

  // The detail the scene's shapes are drawn with: the fine template, the
  // coarse one, or sprites, whichever is the finest within MESH_BUDGET (or
  // as the address's #detail= says); every drawn shape moves over.
  chooseDetail() {
    this.detailAt = this.items.size;
    let round = 0, boxes = 0;
    for (const it of this.items.values()) {
      if (it.kind === 'box') boxes++;
      else if (it.kind === 'sphere' || it.kind === 'capsule') round++;
    }
    const verts = (t) => round * t.round.directions.length + boxes * 24;
    const budget = this.software ? MESH_BUDGET_SOFTWARE : MESH_BUDGET;
    const forced = /(?:^|[#&])detail=(mesh|sprites)/.exec(location.hash);
    let want = verts(this.tess.fine) <= budget ? 'fine' : verts(this.tess.coarse) <= budget ? 'coarse' : 'sprites';
    if (forced) want = forced[1] === 'sprites' ? 'sprites' : 'fine';
    if (want === this.detail) return;
    const moving = [...this.items.values()].filter((it) => it.batch);
    moving.forEach((it) => it.batch.remove(it));
    if (want !== 'sprites') this.round.setGeometry(roundGeometry(want === 'fine' ? this.tess.fine : this.tess.coarse));
    this.detail = want;
    moving.forEach((it) => { it.batch = this.batchFor(it); it.batch.add(it); });
    this.needsRender = true;
  }

  batchFor(it) {
    if (it.kind !== 'box' && it.kind !== 'sphere' && it.kind !== 'capsule') return null;
    // (robot instances keep their meshes: they are few, and what moves)
    if (this.detail === 'sprites' && (it.owner === 'scene' || it.owner === 'object')) return this.sprites;
    return it.kind === 'box' ? this.box : this.round;
  }

  // -- connection --

  connState(s) {
    if (s === 'open') {
      this.conn = 'connected';
      this.start().catch((e) => this.report(e));
    } else {
      this.conn = 'disconnected';
      this.watch = null;
      setTimeout(() => { this.conn = 'connecting'; this.status(); this.rpc.connect(); }, 1000);
    }
    this.status();
  }

  async start() {
    // A scene open before the connection (re)started is opened again, unless
    // a click opened one meanwhile (the list shows before this ends).
    const opened = this.opening, chosen = this.choosing;
    if (this.token !== null) await this.rpc.call('auth', { token: this.token }).catch(() => {});
    try {
      await this.refreshLists();
    } catch (e) {
      if (e.code === -32005) { // the daemon has a token: ask for it
        this.conn = 'needs token';
        $('auth').style.display = 'block';
        this.status();
        return;
      }
      throw e;
    }
    $('auth').style.display = 'none';
    if (!this.tess) {
      const [fine, coarse] = await Promise.all([this.rpc.call('tessellation', FINE), this.rpc.call('tessellation', COARSE)]);
      this.tess = { fine, coarse };
      this.batches();
      this.tessArrived();
    }
    const hello = await this.rpc.call('hello');
    this.replicaLag = hello.replication ? hello.replication.lag : null;
    if (this.sceneName && this.opening === opened) await this.open(this.sceneName);
    if (this.check && this.choosing === chosen) await this.selectModel(this.check.model).catch(() => {});
  }

  async authenticate() {
    this.token = $('token').value;
    try {
      await this.rpc.call('auth', { token: this.token });
    } catch (e) {
      this.report(e);
      return;
    }
    this.conn = 'connected';
    await this.start().catch((e) => this.report(e));
  }

  async tick() {
    if (this.conn !== 'connected') return;
    try {
      const t0 = performance.now();
      await this.rpc.call('ping');
      this.rtt = performance.now() - t0;
      // (a store of thousands of scenes is listed less often)
      if (performance.now() - this.listsAt > (this.scenes.length > 1000 ? 30000 : 1500)) await this.refreshLists();
      if (this.replicaLag !== null) {
        const hello = await this.rpc.call('hello');
        this.replicaLag = hello.replication ? hello.replication.lag : null;
      }
    } catch (e) { /* the connection's state says it */ }
    this.status();
  }

  async refreshLists() {
    const [s, m] = await Promise.all([this.rpc.call('scene.list'), this.rpc.call('model.list')]);
    this.listsAt = performance.now();
    this.scenes = s.scenes;
    this.models = m.models;
    this.drawLists();
  }

  // -- opening a scene --

  clear() {
    for (const it of this.items.values()) if (it.batch) it.batch.remove(it);
    this.items.clear();
    this.kinds = { sphere: 0, capsule: 0, box: 0, halfspace: 0 };
    this.groups.clear();
    for (const c of this.clouds.values()) if (c.obj) { this.world.remove(c.obj); c.obj.geometry.dispose(); }
    this.clouds.clear();
    for (const m of this.halfspaces.values()) { this.world.remove(m); m.geometry.dispose(); }
    this.halfspaces.clear();
    this.dirty.clear();
    this.loaded = false;
    this.revision = null;
    this.needsRender = true;
  }

  async open(name) {
    const gen = ++this.opening; // a later click wins
    await this.tessReady;
    if (this.watch !== null) {
      const w = this.watch;
      this.watch = null;
      await this.rpc.call('scene.unwatch', { watch: w }).catch(() => {});
    }
    if (gen !== this.opening) return;
    this.sceneName = name;
    this.clear();
    this.drawLists();
    this.queued = [];
    const w = await this.rpc.call('scene.watch', { scene: name });
    if (gen !== this.opening) {
      await this.rpc.call('scene.unwatch', { watch: w.watch }).catch(() => {});
      return;
    }
    this.watch = w.watch;
    for (let attempt = 0; ; attempt++) {
      const got = await this.rpc.call('scene.get', { scene: name });
      const ids = await this.placedIds(got);
      const world = ids.length ? await this.rpc.call('scene.get', { scene: name, ids }).catch(() => null) : got;
      if (gen !== this.opening) return;
      // The placed shapes may be newer than the first read: what changed
      // in between is queued, and applying it reads those groups again.
      // (An id gone in between fails the read: then both are read again.)
      if (world && world.revision >= got.revision) {
        this.load(got, world);
        break;
      }
      if (attempt === 5) {
        this.watch = null;
        this.queued = [];
        await this.rpc.call('scene.unwatch', { watch: w.watch }).catch(() => {});
        throw new Error(`scene ${name} kept changing while it was read`);
      }
    }
    const pending = this.queued;
    this.queued = [];
    for (const m of pending) this.notified(m); // (a resync or a deletion among them too)
    this.frame();
    this.checkNow();
  }

  async modelShapeIds(model) {
    if (!this.modelShapes.has(model)) {
      const info = await this.rpc.call('model.get', { model });
      this.modelShapes.set(model, info.shapes || []);
    }
    return this.modelShapes.get(model).map((s) => s.id);
  }

  async placedIds(got) {
    const ids = [];
    for (const [name, o] of Object.entries(got.objects || {})) for (const sid of Object.keys(o.shapes)) ids.push(`${name}/${sid}`);
    for (const [name, r] of Object.entries(got.robots || {})) for (const sid of await this.modelShapeIds(r.model)) ids.push(`${name}/${sid}`);
    return ids;
  }

  load(got, world) {
    for (const [id, shape] of Object.entries(got.shapes)) this.put(id, shape, 'scene', null);
    for (const [name, o] of Object.entries(got.objects || {})) this.groups.set(name, { kind: 'object', ids: new Set(Object.keys(o.shapes).map((s) => `${name}/${s}`)) });
    for (const [name, r] of Object.entries(got.robots || {})) this.groups.set(name, { kind: 'robot', model: r.model, ids: new Set(this.modelShapes.get(r.model).map((s) => `${name}/${s.id}`)) });
    for (const [id, shape] of Object.entries(world.shapes)) {
      if (id in got.shapes) continue;
      const name = id.slice(0, id.indexOf('/'));
      const g = this.groups.get(name);
      this.put(id, shape, g ? g.kind : 'object', name);
    }
    for (const [name, c] of Object.entries(got.clouds || {})) this.putCloud(name, c);
    this.chooseDetail();
    this.revision = got.revision;
    this.loaded = true;
    this.drawHalfspaces();
    this.status();
  }

  put(id, shape, owner, group) {
    const old = this.items.get(id);
    if (old) this.drop(id);
    const it = new Item(id, shape, owner, group);
    it.hover = id === this.hoverId; // (a moving shape under the mouse stays marked)
    this.items.set(id, it);
    this.kinds[it.kind]++;
    it.batch = this.batchFor(it);
    if (it.batch) it.batch.add(it);
    if (this.check && this.check.hot.has(id)) this.setHot(it, true);
    this.needsRender = true;
  }

  drop(id) {
    const it = this.items.get(id);
    if (!it) return;
    if (it.batch) it.batch.remove(it);
    this.items.delete(id);
    this.kinds[it.kind]--;
    this.needsRender = true;
  }

  dropGroup(name) {
    const g = this.groups.get(name);
    if (g) for (const id of g.ids) this.drop(id);
    this.groups.delete(name);
    const c = this.clouds.get(name);
    if (c) {
      if (c.obj) { this.world.remove(c.obj); c.obj.geometry.dispose(); }
      this.clouds.delete(name);
    }
  }

  putCloud(name, c) {
    this.dropGroup(name);
    const bin = atob(c.points_f32 || '');
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const points = new Float32Array(bytes.buffer, 0, Math.floor(bytes.length / 12) * 3);
    const cloud = { radius: c.radius, count: c.count, points, obj: null };
    if (points.length) {
      const g = new THREE.BufferGeometry();
      g.setAttribute('position', new THREE.BufferAttribute(points, 3));
      cloud.obj = new THREE.Points(g, new THREE.PointsMaterial({ color: COLOUR.cloud, size: Math.max(2 * c.radius, 0.002), sizeAttenuation: true }));
      this.world.add(cloud.obj);
    }
    this.clouds.set(name, cloud);
    this.needsRender = true;
  }

  // Half-spaces have no end: each is a square in its plane, nearest the
  // centre of everything else's bounds and sized to them.
  drawHalfspaces() {
    for (const m of this.halfspaces.values()) { this.world.remove(m); m.geometry.dispose(); }
    this.halfspaces.clear();
    const hs = [...this.items.values()].filter((it) => it.kind === 'halfspace');
    if (!hs.length) return;
    const [lo, hi] = this.extent();
    const centre = lo ? scale(0.5, add(lo, hi)) : [0, 0, 0];
    const size = lo ? Math.max(HALFSPACE_MIN_SIZE, HALFSPACE_SCALE * norm(sub(hi, lo))) : HALFSPACE_MIN_SIZE;
    for (const it of hs) {
      const n0 = it.shape.halfspace.normal, len = norm(n0);
      if (!(len > 0)) continue;
      const n = scale(1 / len, n0), d = it.shape.halfspace.offset / len;
      const p0 = sub(centre, scale(dot(n, centre) - d, n));
      const mesh = new THREE.Mesh(plainGeometry(this.tess.fine.square), this.planeMat);
      mesh.position.set(p0[0], p0[1], p0[2]);
      mesh.quaternion.setFromUnitVectors(Z, new THREE.Vector3(n[0], n[1], n[2]));
      mesh.scale.set(size, size, 1);
      mesh.userData.id = it.id;
      this.halfspaces.set(it.id, mesh);
      this.world.add(mesh);
    }
    this.needsRender = true;
  }

  extent() {
    let lo = null, hi = null;
    const grow = (b) => {
      if (!b) return;
      lo = lo ? lo.map((x, j) => Math.min(x, b[0][j])) : b[0].slice();
      hi = hi ? hi.map((x, j) => Math.max(x, b[1][j])) : b[1].slice();
    };
    for (const it of this.items.values()) grow(bounds(it.shape));
    for (const c of this.clouds.values()) {
      const p = c.points;
      for (let i = 0; i < p.length; i += 3) grow([[p[i] - c.radius, p[i + 1] - c.radius, p[i + 2] - c.radius], [p[i] + c.radius, p[i + 1] + c.radius, p[i + 2] + c.radius]]);
    }
    return [lo, hi];
  }

  frame() { // the camera on what the scene holds
    const [lo, hi] = this.extent();
    if (!lo) return;
    const c = scale(0.5, add(lo, hi)), diag = Math.max(norm(sub(hi, lo)), 0.1);
    this.controls.target.set(c[0], c[1], c[2]);
    this.camera.position.set(c[0] + 0.55 * diag, c[1] - 0.75 * diag, c[2] + 0.45 * diag);
    this.camera.near = diag / 1000;
    this.camera.far = diag * 100 + 10;
    this.camera.updateProjectionMatrix();
    this.controls.update();
    this.grid.position.set(c[0], c[1], Math.min(lo[2], 0));
    this.grid.scale.setScalar(Math.max(1, diag / 5));
    this.needsRender = true;
  }

  // -- following the scene --

  notified(m) {
    const p = m.params || {};
    if (p.watch !== this.watch || this.watch === null) return;
    if (!this.loaded) { this.queued.push(m); return; }
    if (m.method === 'scene.changed') this.apply(p);
    else if (m.method === 'scene.resync') this.open(this.sceneName).catch((e) => this.report(e));
    else if (m.method === 'scene.deleted') {
      this.watch = null;
      this.clear();
      this.sceneName = null;
      this.status();
    }
  }

  apply(p) {
    if (p.revision <= this.revision) return; // the read already had it
    const now = performance.now();
    for (const id of p.removed || []) {
      if (this.groups.has(id) || this.clouds.has(id)) this.dropGroup(id);
      else this.drop(id);
    }
    let planes = false;
    for (const [id, shape] of Object.entries(p.put || {})) {
      if (this.groups.has(id) || this.clouds.has(id)) this.dropGroup(id);
      this.put(id, shape, 'scene', null);
      planes = planes || 'halfspace' in shape;
    }
    for (const [name, o] of Object.entries(p.objects || {})) {
      this.dropGroup(name);
      this.groups.set(name, { kind: 'object', ids: new Set(Object.keys(o.shapes).map((s) => `${name}/${s}`)) });
      this.later(name, now);
    }
    for (const [name, r] of Object.entries(p.robots || {})) {
      this.modelShapes.delete(r.model); // (put again, it may be another model by that name)
      this.dropGroup(name);
      this.groups.set(name, { kind: 'robot', model: r.model, ids: new Set() });
      this.later(name, now);
    }
    for (const name of Object.keys(p.moved || {})) this.later(name, now);
    if (p.clouds && Object.keys(p.clouds).length) this.rereadClouds(Object.keys(p.clouds));
    this.revision = p.revision;
    this.updates++;
    if (Math.abs(this.items.size - this.detailAt) > Math.max(1000, this.detailAt / 10)) this.chooseDetail();
    if (planes || [...(p.removed || [])].some((id) => this.halfspaces.has(id))) this.drawHalfspaces();
    this.status();
    this.pump();
  }

  later(name, now) {
    this.dirty.add(name);
    if (!this.changedAt.has(name)) this.changedAt.set(name, now);
  }

  // Objects and robot instances that changed are read again by their
  // shapes' ids (the daemon places them); one read at a time, so a robot
  // moving 100 times a second is drawn at its latest state.
  async pump() {
    if (this.fetching || !this.dirty.size || !this.loaded) return;
    this.fetching = true;
    const names = [...this.dirty];
    this.dirty.clear();
    const scene = this.sceneName;
    try {
      for (const name of names) {
        const g = this.groups.get(name);
        if (!g) continue;
        if (g.kind === 'robot' && !g.ids.size) {
          const sids = await this.modelShapeIds(g.model).catch(() => null);
          if (!sids) continue; // (the model went: the robot's removal follows)
          g.ids = new Set(sids.map((s) => `${name}/${s}`));
        }
        const ids = [...g.ids];
        let world = null;
        if (ids.length) world = await this.rpc.call('scene.get', { scene, ids }).catch(() => null);
        if (scene !== this.sceneName || this.groups.get(name) !== g) continue;
        if (world) for (const [id, shape] of Object.entries(world.shapes)) this.put(id, shape, g.kind, name);
        const t0 = this.changedAt.get(name);
        if (t0 !== undefined) { this.lastUpdateMs = performance.now() - t0; this.changedAt.delete(name); }
      }
    } finally {
      this.fetching = false;
    }
    this.status();
    if (this.check) this.checkNow();
    if (this.dirty.size) this.pump();
  }

  async rereadClouds(names) {
    const scene = this.sceneName;
    const got = await this.rpc.call('scene.get', { scene }).catch(() => null);
    if (!got || scene !== this.sceneName) return;
    for (const n of names) {
      if (got.clouds && got.clouds[n]) this.putCloud(n, got.clouds[n]);
    }
  }

  // -- hover --

  pick(x, y) {
    const w = this.renderer.domElement.clientWidth, h = this.renderer.domElement.clientHeight;
    const ndc = new THREE.Vector2((x / w) * 2 - 1, -(y / h) * 2 + 1);
    const ray = new THREE.Raycaster();
    ray.setFromCamera(ndc, this.camera);
    const o = ray.ray.origin.toArray(), d = ray.ray.direction.toArray();
    let best = null, bestT = Infinity;
    const consider = (id, t) => { if (t !== null && t < bestT) { bestT = t; best = id; } };
    for (const it of this.items.values()) consider(it.id, hit(it.shape, o, d));
    for (const it of this.preview.values()) consider(it.id, hit(it.shape, o, d));
    for (const [name, c] of this.clouds) {
      const p = c.points, r = Math.max(c.radius, 1e-4);
      for (let i = 0; i < p.length; i += 3) consider(`${name}/${i / 3}`, hit({ sphere: { center: [p[i], p[i + 1], p[i + 2]], radius: r } }, o, d));
    }
    for (const [id, m] of this.halfspaces) {
      const n = new THREE.Vector3(0, 0, 1).applyQuaternion(m.quaternion).toArray();
      const den = dot(n, d);
      if (Math.abs(den) < 1e-12) continue;
      const t = dot(n, sub(m.position.toArray(), o)) / den;
      const q = add(o, scale(t, d)), off = sub(q, m.position.toArray());
      if (t > 0 && norm(off) < m.scale.x * 0.7071) consider(id, t);
    }
    return best;
  }

  setHover(id) {
    if (this.hoverId === id) return;
    const old = this.itemOf(this.hoverId);
    if (old) { old.hover = false; if (old.batch) old.batch.paint(old); }
    this.hoverId = id;
    const it = this.itemOf(id);
    if (it) { it.hover = true; if (it.batch) it.batch.paint(it); }
    const tip = $('tip');
    if (id === null || !this.mouse) { tip.style.display = 'none'; }
    else {
      const kind = it ? (it.owner === 'model' ? `model ${this.check.model}, ${it.kind}` : `${it.owner} ${it.kind}`) : (this.halfspaces.has(id) ? 'halfspace' : 'cloud sphere');
      tip.textContent = `${it && it.owner === 'model' ? id.slice(id.indexOf(':') + 1) : id} · ${kind}`;
      tip.style.left = `${this.mouse[0] + 14}px`;
      tip.style.top = `${this.mouse[1] + 10}px`;
      tip.style.display = 'block';
    }
    this.needsRender = true;
  }

  itemOf(id) { return id === null || id === undefined ? null : this.items.get(id) || this.preview.get(id) || null; }

  // -- a model at chosen joints, checked --

  async selectModel(name) {
    const gen = ++this.choosing; // a later pick wins
    this.clearPreview();
    $('joints').textContent = '';
    $('result').textContent = '';
    $('check').disabled = true;
    this.check = null;
    if (!name) return null;
    const info = await this.rpc.call('model.get', { model: name });
    if (gen !== this.choosing) return null;
    if (!info.kinematic) {
      this.check = null;
      $('result').textContent = 'A frame-indexed model: the viewer checks kinematic models (joints) only.';
      return null;
    }
    const joints = {};
    for (const j of info.joints) {
      const lim = info.limits[j] || { lower: -Math.PI, upper: Math.PI };
      const v = (info.default_positions || {})[j] ?? Math.min(Math.max(0, lim.lower), lim.upper);
      joints[j] = v;
      const row = document.createElement('div');
      row.className = 'joint';
      const label = document.createElement('label');
      const nm = document.createElement('span');
      nm.textContent = j;
      const val = document.createElement('span');
      val.textContent = v.toFixed(3);
      label.append(nm, val);
      const input = document.createElement('input');
      Object.assign(input, { type: 'range', min: lim.lower, max: lim.upper, step: (lim.upper - lim.lower) / 1000, value: v });
      input.dataset.joint = j;
      input.addEventListener('input', () => {
        this.check.joints[j] = Number(input.value);
        val.textContent = Number(input.value).toFixed(3);
        this.checkNow();
      });
      row.append(label, input);
      $('joints').append(row);
    }
    this.check = { model: name, info, joints, result: null, hot: new Set(), busy: false, again: false };
    $('check').disabled = false;
    return this.checkNow();
  }

  clearPreview() {
    for (const it of this.preview.values()) if (it.batch) it.batch.remove(it);
    this.preview.clear();
    this.setHotIds(new Set());
    this.needsRender = true;
  }

  async setJoints(values) {
    if (!this.check) throw new Error('no model selected');
    Object.assign(this.check.joints, values);
    for (const input of $('joints').querySelectorAll('input')) {
      if (input.dataset.joint in values) {
        input.value = values[input.dataset.joint];
        input.previousSibling.lastChild.textContent = Number(values[input.dataset.joint]).toFixed(3);
      }
    }
    return this.checkNow();
  }

  // One check at a time; moves meanwhile are checked once it is back.
  async checkNow() {
    const c = this.check;
    if (!c || this.conn !== 'connected') return null;
    if (c.busy) { c.again = true; return c.pending; }
    c.busy = true;
    c.pending = (async () => {
      try {
        do {
          c.again = false;
          const joints = { ...c.joints };
          const params = { model: c.model, joints, report: 'all' };
          if (this.sceneName && this.loaded) params.scene = this.sceneName;
          const [fk, result] = await Promise.all([
            this.rpc.call('model.fk', { model: c.model, joints }),
            this.rpc.call('check', params)]);
          if (this.check !== c) return null;
          this.showPreview(c, fk.links);
          c.result = result;
          this.showResult(c, result);
        } while (c.again);
        return c.result;
      } catch (e) {
        this.report(e);
        return null;
      } finally {
        c.busy = false;
      }
    })();
    return c.pending;
  }

  showPreview(c, links) {
    const seen = new Set();
    for (const s of c.info.shapes) {
      const pose = links[s.link];
      const shape = pose && place(s.shape, pose);
      if (!shape) continue;
      const id = `model:${s.id}`;
      seen.add(id);
      let it = this.preview.get(id);
      if (it && it.kind === kindOf(shape)) {
        it.shape = shape;
        it.batch.write(it);
      } else {
        if (it) it.batch.remove(it);
        it = new Item(id, shape, 'model', s.link);
        it.batch = it.kind === 'box' ? this.box : this.round;
        it.batch.add(it);
        this.preview.set(id, it);
      }
    }
    for (const [id, it] of this.preview) if (!seen.has(id)) { it.batch.remove(it); this.preview.delete(id); }
    this.needsRender = true;
  }

  showResult(c, r) {
    const hot = new Set();
    // A pair names a kinematic model's shape by its id (`l2#0`), a
    // frame-indexed model's by its link: either way, what to colour.
    const linkShapes = (name) => (this.preview.has(`model:${name}`) ? [`model:${name}`]
      : c.info.shapes.filter((s) => s.link === name).map((s) => `model:${s.id}`));
    for (const v of r.violations || []) {
      if (v.kind === 'scene') { linkShapes(v.link).forEach((id) => hot.add(id)); hot.add(v.other); }
      else if (v.kind === 'self') { linkShapes(v.link).forEach((id) => hot.add(id)); linkShapes(v.other).forEach((id) => hot.add(id)); }
      else if (v.kind === 'attached' && v.with === 'scene') hot.add(v.other);
    }
    c.hot = hot;
    this.setHotIds(hot);
    const box = $('result');
    box.textContent = '';
    const head = document.createElement('div');
    const n = (r.violations || []).length;
    head.textContent = r.valid ? `valid · min distance ${r.min_distance === null ? '—' : r.min_distance.toFixed(4)} m`
      : `${n} violating pair${n === 1 ? '' : 's'}${r.limits ? ' · joints out of limits' : ''}`;
    head.style.color = r.valid ? '#1b7f3b' : '#b3261e';
    box.append(head);
    const ul = document.createElement('ul');
    for (const v of (r.violations || []).slice(0, 20)) {
      const li = document.createElement('li');
      li.textContent = `${v.link} – ${v.other} (${v.kind}) ${v.distance.toFixed(4)}`;
      ul.append(li);
    }
    box.append(ul);
  }

  setHotIds(hot) {
    for (const it of [...this.items.values(), ...this.preview.values()]) {
      const want = hot.has(it.id);
      if (it.hot !== want) this.setHot(it, want);
    }
    this.needsRender = true;
  }

  setHot(it, on) {
    it.hot = on;
    if (it.batch) it.batch.paint(it);
  }

  // -- the page --

  setupUi() {
    $('token-go').addEventListener('click', () => this.authenticate());
    $('token').addEventListener('keydown', (e) => { if (e.key === 'Enter') this.authenticate(); });
    $('model').addEventListener('change', (e) => this.selectModel(e.target.value).catch((err) => this.report(err)));
    $('check').addEventListener('click', () => this.checkNow());
    $('filter').addEventListener('input', (e) => { this.filter = e.target.value; this.drawLists(); });
  }

  drawLists() {
    const ul = $('scenes');
    const key = JSON.stringify([this.scenes, this.sceneName, this.filter]);
    if (ul.dataset.key !== key) {
      ul.dataset.key = key;
      ul.textContent = '';
      const shown = this.scenes.filter((s) => s.scene.includes(this.filter));
      $('filter').style.display = this.scenes.length > 20 ? 'block' : 'none';
      if (shown.length > SCENES_SHOWN) {
        const more = document.createElement('li');
        more.className = 'more';
        more.textContent = `${shown.length - SCENES_SHOWN} more: filter by name`;
        ul.append(more);
      }
      for (const s of shown.slice(0, SCENES_SHOWN)) {
        const li = document.createElement('li');
        li.dataset.scene = s.scene;
        if (s.scene === this.sceneName) li.className = 'open';
        const nm = document.createElement('span');
        nm.textContent = s.scene;
        const n = document.createElement('span');
        n.className = 'n';
        n.textContent = `${s.shapes} · r${s.revision}`;
        li.append(nm, n);
        li.addEventListener('click', () => this.open(s.scene).catch((e) => this.report(e)));
        ul.append(li);
      }
    }
    const sel = $('model');
    const names = this.models.map((m) => m.model);
    if (sel.dataset.key !== names.join('\n')) {
      sel.dataset.key = names.join('\n');
      const cur = sel.value;
      sel.textContent = '';
      const none = document.createElement('option');
      none.value = '';
      none.textContent = '(no model)';
      sel.append(none);
      for (const n of names) {
        const o = document.createElement('option');
        o.value = n;
        o.textContent = n;
        sel.append(o);
      }
      sel.value = names.includes(cur) ? cur : '';
    }
  }

  status() {
    const el = $('status');
    el.textContent = '';
    const line = (text, cls) => {
      const d = document.createElement('div');
      d.textContent = text;
      if (cls) d.className = cls;
      el.append(d);
    };
    line(this.conn, this.conn === 'connected' ? 'good' : 'bad');
    if (this.sceneName) line(`${this.sceneName} · revision ${this.revision ?? '…'}`);
    if (this.rtt !== null) line(`round trip ${this.rtt.toFixed(1)} ms`);
    if (this.lastUpdateMs !== null) line(`last move drawn ${this.lastUpdateMs.toFixed(0)} ms after its change`);
    if (this.replicaLag !== null) line(`replica lag ${this.replicaLag} revisions`, this.replicaLag ? 'bad' : '');
    if (this.sceneName && this.detail !== 'fine') line(this.detail === 'sprites' ? 'many shapes: drawn as sprites' : 'many shapes: drawn coarser');
    const k = this.counts();
    $('counts').textContent = this.sceneName ? `${k.sphere} spheres · ${k.capsule} capsules · ${k.box} boxes · ${k.halfspace} half-spaces · ${k.cloud} clouds (${k.cloud_points} points)` : '';
  }

  counts() { // kept as shapes come and go: status() runs at every change
    const k = { ...this.kinds, cloud: this.clouds.size, cloud_points: 0 };
    for (const c of this.clouds.values()) k.cloud_points += c.points.length / 3;
    return k;
  }

  report(e) {
    console.error(e);
    $('result').textContent = `${e.message}${e.data && e.data.path ? ` (${e.data.path})` : ''}`;
  }

  measureFps(ms) {
    return new Promise((resolve) => {
      this.fpsRun = { frames: 0 };
      const t0 = performance.now();
      setTimeout(() => {
        const frames = this.fpsRun.frames, dt = performance.now() - t0;
        this.fpsRun = null;
        resolve({ frames, ms: dt, fps: (frames * 1000) / dt });
      }, ms);
    });
  }
}

const viewer = new Viewer();

// The hook the browser test (tests/integration/test_viewer.py) reads.
window.reposeViewer = {
  state() {
    const owners = {};
    for (const it of viewer.items.values()) owners[it.owner] = (owners[it.owner] || 0) + 1;
    return {
      connection: viewer.conn, scene: viewer.sceneName, revision: viewer.revision, loaded: viewer.loaded,
      scenes: viewer.scenes.map((s) => s.scene), models: viewer.models.map((m) => m.model),
      counts: viewer.counts(), owners, detail: viewer.detail, renderer: viewer.glRenderer, software: viewer.software,
      drawn: { round: viewer.round ? viewer.round.count : 0, box: viewer.box ? viewer.box.count : 0, sprite: viewer.sprites ? viewer.sprites.count : 0, halfspace: viewer.halfspaces.size },
      updates: viewer.updates, lastUpdateMs: viewer.lastUpdateMs,
      model: viewer.check ? viewer.check.model : null,
      violations: viewer.check && viewer.check.result ? viewer.check.result.violations || [] : [],
      highlighted: [...viewer.items.values(), ...viewer.preview.values()].filter((it) => it.hot).map((it) => it.id).sort(),
      preview: viewer.preview.size,
    };
  },
  shape(id) { const it = viewer.itemOf(id); return it ? it.shape : null; },
  colour(id) { const it = viewer.itemOf(id); return it ? `#${it.colour().getHexString()}` : null; },
  pick(x, y) { return viewer.pick(x, y); },
  open(name) { return viewer.open(name); },
  selectModel(name) { return viewer.selectModel(name); },
  setJoints(values) { return viewer.setJoints(values); },
  measureFps(ms) { return viewer.measureFps(ms); },
  frame() { viewer.frame(); },
  turn(radians) { // the camera about the vertical through its target
    const t = viewer.controls.target, p = viewer.camera.position;
    const x = p.x - t.x, y = p.y - t.y, c = Math.cos(radians), s = Math.sin(radians);
    p.x = t.x + c * x - s * y;
    p.y = t.y + s * x + c * y;
    viewer.controls.update();
  },
  project(p) { // a world point's place on the canvas, in CSS pixels
    const v = new THREE.Vector3(p[0], p[1], p[2]).project(viewer.camera);
    const c = viewer.renderer.domElement;
    return [(v.x + 1) / 2 * c.clientWidth, (1 - v.y) / 2 * c.clientHeight];
  },
};
