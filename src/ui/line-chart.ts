/**
 * `<hearth-line-chart>`: one metric (or a few) against the step, drawn with uPlot, resized with
 * its box and recoloured with the theme. Series are given as point lists; the element exposes
 * how many points it draws in `data-points`, so a person (and a test) can tell an empty chart
 * from a drawn one, and lists the latest values as text for screen readers.
 *
 * Not here: where the points come from (the views and their feeds).
 */
import { LitElement, css, html, unsafeCSS, type PropertyValues } from 'lit';
import { customElement, property, query } from 'lit/decorators.js';
import uPlot from 'uplot';
import uplotCss from 'uplot/dist/uPlot.min.css?inline';
import { alignSeries, type ChartSeries } from './chart-data';
import { formatMetric } from './format';

export type { ChartSeries } from './chart-data';

const PALETTE = ['--hearth-series-1', '--hearth-series-2', '--hearth-series-3', '--hearth-series-4', '--hearth-series-5'];
const STEP_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

@customElement('hearth-line-chart')
export class HearthLineChart extends LitElement {
  static override styles = [
    unsafeCSS(uplotCss),
    css`
      :host {
        display: block;
        background: var(--hearth-surface);
        border: 1px solid var(--hearth-border);
        border-radius: 0.5rem;
        padding: 0.5rem;
        min-width: 0;
      }
      h4 {
        margin: 0 0 0.25rem;
        font-size: 0.9rem;
        font-weight: 600;
      }
      .plot {
        min-height: 160px;
      }
      .empty {
        color: var(--hearth-muted);
        font-size: 0.85rem;
        padding: 2rem 0;
        text-align: center;
      }
      .u-legend {
        font-size: 0.8rem;
        color: var(--hearth-fg);
      }
    `,
  ];

  @property() heading = '';
  @property({ attribute: false }) series: readonly ChartSeries[] = [];
  @property() xLabel = 'step';

  @query('.plot') private _plotBox!: HTMLDivElement;
  private _plot: uPlot | undefined;
  private _plotKey = '';
  private _resize: ResizeObserver | undefined;
  private _scheme = matchMedia('(prefers-color-scheme: dark)');
  private readonly _onScheme = () => this._rebuild();

  private get _points(): number {
    return this.series.reduce((n, s) => n + s.points.filter((p) => Number.isFinite(p[1])).length, 0);
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this._scheme.addEventListener('change', this._onScheme);
  }

  override disconnectedCallback(): void {
    this._scheme.removeEventListener('change', this._onScheme);
    this._resize?.disconnect();
    this._resize = undefined;
    this._plot?.destroy();
    this._plot = undefined;
    super.disconnectedCallback();
  }

  protected override updated(changed: PropertyValues): void {
    this.dataset.points = String(this._points);
    if (changed.has('series')) this._draw();
  }

  private _rebuild(): void {
    this._plot?.destroy();
    this._plot = undefined;
    this._draw();
  }

  private _draw(): void {
    const box = this._plotBox;
    if (!box) return;
    if (this._points === 0) {
      this._plot?.destroy();
      this._plot = undefined;
      return;
    }
    const data = alignSeries(this.series) as uPlot.AlignedData;
    const key = this.series.map((s) => s.label).join('\u0000');
    if (this._plot && key === this._plotKey) {
      this._plot.setData(data);
      this._padSingleX(data);
      return;
    }
    this._plot?.destroy();
    this._plotKey = key;
    const style = getComputedStyle(this);
    const color = (v: string) => style.getPropertyValue(v).trim() || '#888';
    const axis = {
      stroke: color('--hearth-muted'),
      grid: { stroke: color('--hearth-border'), width: 1 },
      ticks: { stroke: color('--hearth-border') },
    };
    this._plot = new uPlot(
      {
        width: Math.max(200, box.clientWidth),
        height: 180,
        scales: { x: { time: false } },
        // Steps are whole numbers: no 1.2, 1.4 ticks between two points.
        axes: [
          { ...axis, label: this.xLabel, incrs: STEP_INCREMENTS },
          { ...axis, size: 56 },
        ],
        series: [
          { label: this.xLabel },
          ...this.series.map((s, i) => ({
            label: s.label,
            stroke: color(PALETTE[i % PALETTE.length]),
            width: 2,
            spanGaps: true,
            points: { show: true, size: 5 },
            value: (_u: uPlot, v: number | null) => (v === null ? '—' : formatMetric(v)),
          })),
        ],
      },
      data,
      box,
    );
    this._padSingleX(data);
    this._resize ??= new ResizeObserver(() => {
      if (this._plot && box.clientWidth > 0) this._plot.setSize({ width: box.clientWidth, height: 180 });
    });
    this._resize.observe(box);
  }

  /** One x value would get uPlot's default 0..100 axis: centre it in a range of ±1 instead. */
  private _padSingleX(data: uPlot.AlignedData): void {
    const xs = data[0] as number[];
    if (xs.length === 1) this._plot?.setScale('x', { min: xs[0] - 1, max: xs[0] + 1 });
  }

  override render() {
    const latest = this.series
      .map((s) => (s.points.length ? `${s.label}: ${formatMetric(s.points[s.points.length - 1][1])}` : ''))
      .filter(Boolean)
      .join(', ');
    return html`
      <figure style="margin:0" aria-label=${this.heading}>
        ${this.heading ? html`<h4>${this.heading}</h4>` : ''}
        <div class="plot" role="img" aria-label=${`${this.heading}: ${this._points} points${latest ? `; latest ${latest}` : ''}`}></div>
        ${this._points === 0 ? html`<div class="empty">No points yet</div>` : ''}
      </figure>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-line-chart': HearthLineChart;
  }
}
