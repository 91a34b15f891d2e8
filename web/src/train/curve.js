// The Train mode's live learning curve on a canvas: every finished episode's return (dots), their running
// mean over the last 20 episodes (line), each evaluation's mean return (squares), and the solve threshold.
const COLOURS = {
  axis: "#c8c8c4",
  ink: "#282c34",
  episode: "rgba(66, 133, 244, 0.25)",
  mean: "#4285f4",
  evaluation: "#34a853",
  threshold: "#db4437",
};

// Where the x axis ends: a little past the furthest step drawn (a run solved early fills the chart instead of
// its first few percent), on a round number, never past the budget.
export function axisEnd(lastStep, timesteps) {
  if (!(lastStep > 0)) return Math.max(timesteps, 1);
  const target = lastStep * 1.2;
  const unit = 10 ** Math.floor(Math.log10(target));
  const round = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((m) => m * unit).find((v) => v >= target);
  return Math.min(Math.max(timesteps, 1), round);
}

export function drawCurve(canvas, { episodes, evals, threshold, timesteps }) {
  const ctx = canvas.getContext("2d");
  const { width, height } = canvas;
  const pad = { left: 48, right: 10, top: 10, bottom: 24 };
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
  const values = [
    ...episodes.map((e) => e.ret),
    ...evals.map((e) => e.mean),
    ...(threshold === null ? [] : [threshold]),
  ];
  const low = values.length ? Math.min(...values) : 0;
  const high = values.length ? Math.max(...values) : 1;
  const span = high - low || 1;
  const lastStep = Math.max(0, ...episodes.map((e) => e.step), ...evals.map((e) => e.step));
  const end = axisEnd(lastStep, timesteps);
  canvas.dataset.xEnd = String(end); // what the axis spans, for the tests
  const x = (step) => pad.left + (step / end) * (width - pad.left - pad.right);
  const y = (value) => height - pad.bottom - ((value - low) / span) * (height - pad.top - pad.bottom);
  ctx.strokeStyle = COLOURS.axis;
  ctx.strokeRect(pad.left, pad.top, width - pad.left - pad.right, height - pad.top - pad.bottom);
  ctx.fillStyle = COLOURS.ink;
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillText(high.toFixed(high - low < 10 ? 2 : 0), 4, pad.top + 8);
  ctx.fillText(low.toFixed(high - low < 10 ? 2 : 0), 4, height - pad.bottom);
  ctx.fillText("0", pad.left, height - 8);
  ctx.fillText(`${end.toLocaleString()} steps`, width - pad.right - 80, height - 8);
  if (threshold !== null) {
    ctx.strokeStyle = COLOURS.threshold;
    ctx.setLineDash([5, 4]);
    ctx.beginPath();
    ctx.moveTo(pad.left, y(threshold));
    ctx.lineTo(width - pad.right, y(threshold));
    ctx.stroke();
    ctx.setLineDash([]);
  }
  ctx.fillStyle = COLOURS.episode;
  for (const e of episodes) ctx.fillRect(x(e.step) - 1, y(e.ret) - 1, 2, 2);
  ctx.strokeStyle = COLOURS.mean;
  ctx.lineWidth = 2;
  ctx.beginPath();
  let sum = 0;
  episodes.forEach((e, i) => {
    sum += e.ret - (i >= 20 ? episodes[i - 20].ret : 0);
    const mean = sum / Math.min(i + 1, 20);
    if (i === 0) ctx.moveTo(x(e.step), y(mean));
    else ctx.lineTo(x(e.step), y(mean));
  });
  ctx.stroke();
  ctx.lineWidth = 1;
  ctx.fillStyle = COLOURS.evaluation;
  for (const e of evals) ctx.fillRect(x(e.step) - 3, y(e.mean) - 3, 6, 6);
}
