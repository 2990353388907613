import { describe, expect, it } from 'vitest';
import { daysEnding, fillDays, svgChart } from './chart.js';

describe('svgChart', () => {
  const series = [
    { label: '2026-01-01', value: 2 },
    { label: '2026-01-02', value: 0 },
    { label: '2026-01-03', value: 4 },
  ];

  it('draws one bar per point, scaled to the largest value, inside a viewBox', () => {
    const svg = svgChart(series, { title: 'Transfers per day', kind: 'bar' }).value;
    expect(svg).toMatch(/^<svg class="chart" viewBox="0 0 400 180" width="100%"/);
    expect(svg.match(/<rect /g)).toHaveLength(3);
    // The tallest bar fills the plot (146 units); the empty day has no height.
    expect(svg).toContain('height="146"><title>2026-01-03: 4</title>');
    expect(svg).toContain('height="0"><title>2026-01-02: 0</title>');
    expect(svg).not.toMatch(/style=|<script/);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  it('draws a line with a dot per point, escaping the title and honouring a fixed top', () => {
    const svg = svgChart(series, { title: 'Errors <%>', kind: 'line', unit: ' %', max: 100 }).value;
    expect(svg).toContain('<polyline class="chart-line"');
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain('Errors &lt;%&gt;');
    expect(svg).toContain('>100 %</text>');
  });

  it('ends the last day label at the right edge of the plot, so it is not cut off', () => {
    const svg = svgChart(series, { title: 'Days', kind: 'bar' }).value;
    expect(svg).toContain('<text class="chart-label" x="392" y="174" text-anchor="end">2026-01-03</text>');
  });

  it('draws an empty or all-zero series without dividing by zero', () => {
    expect(svgChart([], { title: 'Empty', kind: 'bar' }).value).not.toContain('NaN');
    const zeros = svgChart([{ label: 'a', value: 0 }], { title: 'Zero', kind: 'line' }).value;
    expect(zeros).not.toContain('NaN');
  });
});

describe('daysEnding and fillDays', () => {
  it('lists the days of the range oldest first and fills gaps with 0', () => {
    const days = daysEnding(new Date('2026-03-01T15:00:00Z'), 3);
    expect(days).toEqual(['2026-02-27', '2026-02-28', '2026-03-01']);
    const filled = fillDays(days, new Map([['2026-02-28', 5]]), (v) => v ?? 0);
    expect(filled.map((p) => p.value)).toEqual([0, 5, 0]);
  });
});
