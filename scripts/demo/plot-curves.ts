/**
 * docs/training/curves.svg from the demo's curve files (docs/training/pretrain.json, demo.json,
 * json.json): stage 1's held-out and train accuracy, stage 2's SFT loss per batch, the held-out
 * accuracy, held-out reward and RL rollout reward after each checkpoint of stages 2-3, and stage
 * 4's held-out JSON loss beside its held-out sum accuracy.
 *
 *   npx tsx --import ./scripts/register-raw.mjs scripts/demo/plot-curves.ts
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lineChartSvg, type Panel } from './chart';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '../../docs/training');

type Pt = [number, number];

export function plotCurves(dir = OUT): string {
  const read = (f: string) => (existsSync(join(dir, f)) ? JSON.parse(readFileSync(join(dir, f), 'utf8')) : null);
  const pre = read('pretrain.json');
  const demo = read('demo.json');
  const json = read('json.json');
  const panels: Panel[] = [];
  if (pre) {
    panels.push({
      title: 'Stage 1: pretraining (CPU, full parameters)',
      yMin: 0,
      yMax: 1,
      series: [
        { label: 'held-out accuracy', color: '#1b7837', points: pre.curves.map((c: any) => [c.step, c.accuracy] as Pt) },
        {
          label: 'train accuracy',
          color: '#762a83',
          points: pre.curves.filter((c: any) => c.trainAccuracy !== undefined).map((c: any) => [c.step, c.trainAccuracy] as Pt),
        },
      ],
    });
  }
  if (demo) {
    panels.push({
      title: 'Stage 2: SFT loss per batch (API)',
      yMin: 0,
      series: [{ label: 'loss', color: '#b2182b', points: demo.sftLoss.map((c: any) => [c.batch, c.loss] as Pt) }],
    });
    panels.push({
      title: 'Stages 2-3: per checkpoint (API)',
      yMin: 0,
      yMax: 1,
      series: [
        { label: 'held-out accuracy', color: '#1b7837', points: demo.evaluations.map((e: any) => [e.step, e.accuracy] as Pt) },
        { label: 'held-out reward', color: '#2166ac', points: demo.evaluations.map((e: any) => [e.step, e.meanReward] as Pt) },
        { label: 'RL rollout reward', color: '#e08214', points: demo.rl.map((r: any) => [r.step - 1, r.trainReward] as Pt) },
      ],
    });
  }
  if (json) {
    const points = (key: string) => json.curves.filter((c: any) => c[key] !== undefined).map((c: any) => [c.step, c[key]] as Pt);
    panels.push({
      title: 'Stage 4: JSON objects (CPU, full parameters)',
      yMin: 0,
      series: [
        { label: 'held-out JSON loss (nats/token)', color: '#b2182b', points: points('jsonLoss') },
        { label: 'held-out sum accuracy', color: '#1b7837', points: points('sumAccuracy') },
        { label: 'train-split sum accuracy', color: '#762a83', points: points('trainSumAccuracy') },
      ],
    });
  }
  const svg = lineChartSvg(panels, 'x: optimizer step (stages 1 and 4), batch (SFT), checkpoint step (stages 2-3)');
  writeFileSync(join(dir, 'curves.svg'), svg);
  return join(dir, 'curves.svg');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(`wrote ${plotCurves()}`);
