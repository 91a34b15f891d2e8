// Canvas drawings of the envs from their cores' render_state(), in the colours of
// thrust_app/envs/render.py (the desktop's rgb_array frames).
const C = {
  bg: "#fafaf7",
  ink: "#282c34",
  accent: "#4285f4",
  good: "#34a853",
  bad: "#db4437",
  food: "#ea4335",
  muted: "#c8c8c4",
  cell: "#f0f0ec",
};

function clear(ctx) {
  ctx.fillStyle = C.bg;
  ctx.fillRect(0, 0, ctx.canvas.width, ctx.canvas.height);
}

function line(ctx, x0, y0, x1, y1, width, color) {
  ctx.strokeStyle = color;
  ctx.lineWidth = width;
  ctx.lineCap = "round";
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}

function disc(ctx, x, y, r, color) {
  ctx.fillStyle = color;
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.fill();
}

function cartpole(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const scale = w / (2 * s.x_limit * 1.25);
  const track = h * 0.7;
  ctx.fillStyle = C.ink;
  ctx.fillRect(0, track, w, 2);
  const cx = w / 2 + s.x * scale;
  ctx.fillRect(cx - 30, track - 18, 60, 30);
  const pole = s.pole_length * scale;
  line(ctx, cx, track - 18, cx + pole * Math.sin(s.theta), track - 18 - pole * Math.cos(s.theta), 10, C.accent);
  disc(ctx, cx, track - 18, 5, C.muted);
}

function pendulum(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const c = Math.min(w, h) / 2;
  const r = Math.min(w, h) * 0.38;
  line(ctx, w / 2, c, w / 2 + r * Math.sin(s.theta), c - r * Math.cos(s.theta), 16, C.bad);
  disc(ctx, w / 2, c, 8, C.ink);
  const bar = ((s.torque ?? 0) / s.max_torque) * w * 0.3;
  ctx.fillStyle = C.accent;
  ctx.fillRect(Math.min(w / 2, w / 2 + bar), h - 24, Math.abs(bar), 12);
}

function snake(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const cell = Math.floor(Math.min(w / s.width, h / s.height));
  const ox = (w - cell * s.width) / 2;
  const oy = (h - cell * s.height) / 2;
  for (let r = 0; r < s.height; r++) {
    for (let c = 0; c < s.width; c++) {
      ctx.fillStyle = (r + c) % 2 ? C.cell : "#fff";
      ctx.fillRect(ox + c * cell, oy + r * cell, cell, cell);
    }
  }
  if (s.food) disc(ctx, ox + (s.food[1] + 0.5) * cell, oy + (s.food[0] + 0.5) * cell, cell * 0.35, C.food);
  s.body.forEach(([r, c], i) => {
    ctx.fillStyle = i === 0 ? (s.dead ? C.bad : C.ink) : C.good;
    ctx.fillRect(ox + c * cell + 2, oy + r * cell + 2, cell - 4, cell - 4);
  });
}

function bandit(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  ctx.fillStyle = s.context ? C.accent : C.muted;
  ctx.fillRect(0, 0, w, 40);
  ctx.fillStyle = "#fff";
  ctx.font = "16px system-ui";
  ctx.fillText(`context ${s.context} — lever ${s.correct_lever} pays`, 12, 26);
  for (const lever of [0, 1]) {
    const x = w * (0.3 + 0.4 * lever);
    const pulled = s.last_action === lever;
    const color = pulled ? (s.last_reward ? C.good : C.bad) : C.ink;
    const top = pulled ? h * 0.4 : h * 0.3;
    line(ctx, x, h * 0.8, x, top, 10, color);
    disc(ctx, x, top, 16, color);
    ctx.fillStyle = C.ink;
    ctx.fillRect(x - 40, h * 0.8, 80, 20);
  }
}

// The same drawing as render.py's render_mountain_car.
function mountainCar(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const toX = (x) => ((x + 1.2) / 1.8) * (w - 40) + 20;
  const toY = (y) => h - 30 - y * (h - 80);
  const valley = (x) => Math.sin(3 * x) * 0.45 + 0.55;
  for (let i = 0; i < 59; i++) {
    const [x0, x1] = [-1.2 + (1.8 * i) / 59, -1.2 + (1.8 * (i + 1)) / 59];
    line(ctx, toX(x0), toY(valley(x0)), toX(x1), toY(valley(x1)), 3, C.ink);
  }
  const [goalX, goalY] = [toX(s.goal), toY(valley(s.goal))];
  ctx.fillStyle = C.ink;
  ctx.fillRect(goalX, goalY - 40, 2, 40);
  ctx.fillStyle = C.accent;
  ctx.fillRect(goalX + 2, goalY - 40, 20, 12);
  const [carX, carY] = [toX(s.position), toY(s.height) - 10];
  disc(ctx, carX, carY, 10, C.ink);
  if (s.push) line(ctx, carX, carY, carX + 30 * s.push, carY, 4, s.push > 0 ? C.good : C.bad);
}

// The same drawing as render.py's render_acrobot.
function acrobot(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const [scale, px, py] = [h / 5, w / 2, h / 2];
  const [jx, jy] = [px + scale * Math.sin(s.theta1), py + scale * Math.cos(s.theta1)];
  const angle = s.theta1 + s.theta2;
  const [tx, ty] = [jx + scale * Math.sin(angle), jy + scale * Math.cos(angle)];
  line(ctx, 20, py - scale, w - 20, py - scale, 1, C.ink);
  line(ctx, px, py, jx, jy, 8, C.accent);
  line(ctx, jx, jy, tx, ty, 8, C.accent);
  disc(ctx, px, py, 5, C.ink);
  disc(ctx, jx, jy, 6, s.torque > 0 ? C.good : s.torque < 0 ? C.bad : C.ink);
}

// The same drawing as render.py's render_cards.
function cards(ctx, s) {
  const { width: w } = ctx.canvas;
  const slot = w / s.hand.length;
  s.hand.forEach((held, card) => {
    const x = card * slot + 8;
    ctx.fillStyle = held ? C.ink : C.muted;
    ctx.fillRect(x, 90, slot - 16, 120);
    if (card === s.target) {
      ctx.fillStyle = C.accent;
      ctx.fillRect(x, 90, slot - 16, 20);
    }
    if (card === s.last_action) {
      ctx.fillStyle = s.last_reward === 1 ? C.good : s.last_reward < 0 ? C.bad : C.muted;
      ctx.fillRect(x, 225, slot - 16, 15);
    }
  });
}

// A MinAtar board: each layer's cells in its colour, later layers on top (the core's render_state says which).
function minatar(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const cell = Math.floor(Math.min(w, h) / s.size);
  const ox = (w - cell * s.size) / 2;
  const oy = (h - cell * s.size) / 2;
  for (const layer of s.layers) {
    ctx.fillStyle = layer.color;
    layer.board.forEach((row, r) => {
      row.forEach((on, c) => {
        if (on) ctx.fillRect(ox + c * cell + 1, oy + r * cell + 1, cell - 2, cell - 2);
      });
    });
  }
}

// A MuJoCo robot from its geoms (locomotion.py's render_state): capsules as round-capped strokes as thick as they
// are, spheres as discs, the floor as a line with a mark every metre; seen from the side (x, z) or from above (x, y)
// for the swimmer, the view following the root so the marks show its speed, and the distance covered.
function mujoco(ctx, s) {
  const { width: w, height: h } = ctx.canvas;
  const top = s.view === "top";
  const scale = h / (top ? 2.5 : 2.2); // pixels per metre
  const toX = (x) => w / 2 + (x - s.root_x) * scale;
  const toY = (v) => (top ? h / 2 : h * 0.85) - v * scale;
  for (let metre = Math.floor(s.root_x - w / 2 / scale); metre <= s.root_x + w / 2 / scale; metre++) {
    line(ctx, toX(metre), top ? 0 : toY(0), toX(metre), top ? h : toY(0) + 8, 1, C.muted);
  }
  if (!top) line(ctx, 0, toY(0), w, toY(0), 2, C.ink);
  ctx.fillStyle = C.ink;
  ctx.font = "14px sans-serif";
  ctx.fillText(`x = ${s.root_x.toFixed(1)} m`, 10, 20);
  for (const g of s.geoms) {
    const [v, axis] = top ? [g.y, g.axis_y] : [g.z, g.axis_z];
    if (g.type === 2) disc(ctx, toX(g.x), toY(v), g.radius * scale, C.accent);
    else if (g.type !== 0) {
      const [dx, dv] = [g.axis_x * g.half_length, axis * g.half_length];
      line(ctx, toX(g.x - dx), toY(v - dv), toX(g.x + dx), toY(v + dv), Math.max(2, 2 * g.radius * scale), C.accent);
    }
  }
}

const DRAW = {
  "thrust/CartPole-v0": cartpole,
  "thrust/Pendulum-v0": pendulum,
  "thrust/Snake-v0": snake,
  "thrust/Bandit-v0": bandit,
  "thrust/CartPoleNoVel-v0": cartpole,
  "thrust/PendulumNoVel-v0": pendulum,
  "thrust/Cards-v0": cards,
  "thrust/MountainCar-v0": mountainCar,
  "thrust/MountainCarContinuous-v0": mountainCar,
  "thrust/Acrobot-v0": acrobot,
  "thrust/MinAtarBreakout-v0": minatar,
  "thrust/MinAtarSpaceInvaders-v0": minatar,
  "HalfCheetah-v5": mujoco,
  "Hopper-v5": mujoco,
  "Walker2d-v5": mujoco,
  "Swimmer-v5": mujoco,
};

export function draw(canvas, envId, state) {
  const ctx = canvas.getContext("2d");
  clear(ctx);
  const fn = DRAW[envId];
  if (!fn) throw new Error(`no drawing for ${envId}`);
  fn(ctx, state);
}
