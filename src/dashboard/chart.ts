import { html, type Html } from './html.js';

export interface ChartPoint {
  /** The x label (a day, YYYY-MM-DD). */
  label: string;
  /** A plain number (counts, percentages); money is passed already converted for drawing only. */
  value: number;
  /** The value as the tooltip shows it (e.g. a decimal amount string), when not `value` itself. */
  text?: string;
}

export interface ChartOptions {
  /** The chart's accessible name. */
  title: string;
  kind: 'bar' | 'line';
  /** Appended to the values in the tooltips and the axis (e.g. ' %'). */
  unit?: string;
  /** The y axis's top (e.g. 100 for percentages); otherwise the series' maximum. */
  max?: number;
}

const WIDTH = 400;
const HEIGHT = 180;
const PAD = { left: 44, right: 8, top: 10, bottom: 24 };

/** 3 significant figures at most, no exponent: axis labels stay short. */
function short(n: number): string {
  if (n >= 1_000_000) return `${+(n / 1_000_000).toPrecision(3)}M`;
  if (n >= 1_000) return `${+(n / 1_000).toPrecision(3)}k`;
  return String(+n.toPrecision(3));
}

/**
 * A bar or line chart of a series as inline SVG, drawn on the server: no script and no style
 * attribute (the dashboard's CSP allows neither), a viewBox so it scales to any width, a title and
 * one tooltip per point for screen readers and pointers.
 */
export function svgChart(series: readonly ChartPoint[], options: ChartOptions): Html {
  const unit = options.unit ?? '';
  const top = Math.max(options.max ?? 0, ...series.map((p) => (Number.isFinite(p.value) ? p.value : 0)), 0) || 1;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const n = Math.max(series.length, 1);
  const step = plotW / n;
  const y = (v: number) => PAD.top + plotH - (Math.max(0, Number.isFinite(v) ? v : 0) / top) * plotH;
  const x = (i: number) => PAD.left + step * i + step / 2;
  const r = (v: number) => Math.round(v * 10) / 10;

  const marks =
    options.kind === 'bar'
      ? series.map((p, i) => {
          const h = PAD.top + plotH - y(p.value);
          const w = Math.max(step * 0.7, 1);
          return html`<rect class="chart-bar" x="${r(x(i) - w / 2)}" y="${r(y(p.value))}" width="${r(w)}" height="${r(h)}"><title>${p.label}: ${p.text ?? `${p.value}${unit}`}</title></rect>`;
        })
      : html`<polyline class="chart-line" fill="none" points="${series.map((p, i) => `${r(x(i))},${r(y(p.value))}`).join(' ')}"/>${series.map(
          (p, i) =>
            html`<circle class="chart-dot" cx="${r(x(i))}" cy="${r(y(p.value))}" r="3"><title>${p.label}: ${p.text ?? `${p.value}${unit}`}</title></circle>`,
        )}`;

  // First, middle and last day under the axis: enough to read the range at phone width.
  const ticks = [...new Set([0, Math.floor((series.length - 1) / 2), series.length - 1])].filter((i) => i >= 0 && i < series.length);
  // The last label ends at the plot's right edge, so it is never cut off by the viewBox.
  const last = series.length - 1;
  const labels = ticks.map((i) =>
    i === last && i > 0
      ? html`<text class="chart-label" x="${WIDTH - PAD.right}" y="${HEIGHT - 6}" text-anchor="end">${series[i]!.label}</text>`
      : html`<text class="chart-label" x="${r(x(i))}" y="${HEIGHT - 6}" text-anchor="middle">${series[i]!.label}</text>`,
  );
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-label="${options.title}" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">
<title>${options.title}</title>
<line class="chart-axis" x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${WIDTH - PAD.right}" y2="${PAD.top + plotH}"/>
<line class="chart-rule" x1="${PAD.left}" y1="${PAD.top}" x2="${WIDTH - PAD.right}" y2="${PAD.top}"/>
<text class="chart-label" x="${PAD.left - 4}" y="${PAD.top + 4}" text-anchor="end">${short(top)}${unit}</text>
<text class="chart-label" x="${PAD.left - 4}" y="${PAD.top + plotH}" text-anchor="end">0</text>
${marks}
${labels}
</svg>`;
}

/** Every day (UTC, YYYY-MM-DD) of the last `days` days, oldest first, ending today. */
export function daysEnding(today: Date, days: number): string[] {
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

/** A value for every day of the range: days without a row are 0. */
export function fillDays<T>(days: readonly string[], rows: ReadonlyMap<string, T>, value: (row: T | undefined) => number): ChartPoint[] {
  return days.map((label) => ({ label, value: value(rows.get(label)) }));
}
