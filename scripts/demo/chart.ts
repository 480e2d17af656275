/**
 * A small static SVG line chart for docs (the demo's loss, reward and accuracy curves): one
 * panel per series group, shared step axis, no dependencies (uPlot, Hearth's chart library,
 * needs a DOM; this is written from Node into docs/).
 *
 * Not here: the live charts of the UI.
 */
export interface Series {
  label: string;
  color: string;
  points: [number, number][];
}

export interface Panel {
  title: string;
  yMin?: number;
  yMax?: number;
  series: Series[];
}

const W = 420;
const H = 220;
const PAD = { l: 44, r: 12, t: 28, b: 30 };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

function panel(p: Panel, x0: number): string {
  const xs = p.series.flatMap((s) => s.points.map((q) => q[0]));
  const ys = p.series.flatMap((s) => s.points.map((q) => q[1]));
  const xMin = Math.min(...xs, 0);
  const xMax = Math.max(...xs, 1);
  const yMin = p.yMin ?? Math.min(...ys);
  const yMax = p.yMax ?? Math.max(...ys, yMin + 1e-9);
  const X = (x: number) => x0 + PAD.l + ((x - xMin) / (xMax - xMin || 1)) * (W - PAD.l - PAD.r);
  const Y = (y: number) => PAD.t + (1 - (y - yMin) / (yMax - yMin || 1)) * (H - PAD.t - PAD.b);
  const parts = [
    `<text x="${x0 + W / 2}" y="16" text-anchor="middle" font-size="13" font-weight="600">${esc(p.title)}</text>`,
    `<rect x="${x0 + PAD.l}" y="${PAD.t}" width="${W - PAD.l - PAD.r}" height="${H - PAD.t - PAD.b}" fill="none" stroke="#ccc"/>`,
  ];
  for (const f of [0, 0.5, 1]) {
    const y = yMin + f * (yMax - yMin);
    parts.push(`<text x="${x0 + PAD.l - 4}" y="${Y(y) + 4}" text-anchor="end" font-size="10">${Number(y.toPrecision(3))}</text>`);
  }
  parts.push(`<text x="${X(xMin)}" y="${H - 12}" font-size="10">${xMin}</text>`);
  parts.push(`<text x="${X(xMax)}" y="${H - 12}" text-anchor="end" font-size="10">${xMax}</text>`);
  p.series.forEach((s, i) => {
    const d = s.points.map((q, j) => `${j ? 'L' : 'M'}${X(q[0]).toFixed(1)},${Y(q[1]).toFixed(1)}`).join('');
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"/>`);
    for (const q of s.points) parts.push(`<circle cx="${X(q[0]).toFixed(1)}" cy="${Y(q[1]).toFixed(1)}" r="2" fill="${s.color}"/>`);
    parts.push(`<text x="${x0 + PAD.l + 6}" y="${PAD.t + 14 + 13 * i}" font-size="11" fill="${s.color}">${esc(s.label)}</text>`);
  });
  return parts.join('\n');
}

export function lineChartSvg(panels: Panel[], xLabel: string): string {
  const width = W * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 14}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...panels.map((p, i) => panel(p, i * W)),
    `<text x="${width / 2}" y="${H + 8}" text-anchor="middle" font-size="11">${esc(xLabel)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
