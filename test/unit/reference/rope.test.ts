import { describe, expect, it } from 'vitest';
import type { RopeParams } from '../../../src/engine/model/config/rope';
import { ropeInvFreq, ropeTable } from '../../../src/engine/model/config/rope';
import { ropeForward } from '../../../src/engine/reference/rope';
import { Rng } from '../../../src/engine/tensor/random';

const plain: RopeParams = { headDim: 8, ropeTheta: 10000, ropeScaling: null };

describe('RoPE inverse frequencies', () => {
  it('are theta^(-2i/d)', () => {
    const inv = ropeInvFreq(plain);
    expect(Array.from(inv)).toEqual([1, 0.1, 0.01, 0.001].map(Math.fround));
  });

  it('divide by the factor with linear scaling', () => {
    const inv = ropeInvFreq({ ...plain, ropeScaling: { type: 'linear', factor: 4 } });
    expect(Array.from(inv)).toEqual([0.25, 0.025, 0.0025, 0.00025].map(Math.fround));
  });

  it('follow the three llama3 bands (Llama 3.2: factor 32, low 1, high 4, original 8192)', () => {
    const cfg: RopeParams = {
      headDim: 64,
      ropeTheta: 500000,
      ropeScaling: { type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
    };
    const base = ropeInvFreq({ ...cfg, ropeScaling: null });
    const inv = ropeInvFreq(cfg);
    for (let i = 0; i < 32; i++) {
      const wavelen = (2 * Math.PI) / base[i];
      if (wavelen < 8192 / 4) expect(inv[i]).toBe(base[i]); // high frequency: unchanged
      else if (wavelen > 8192 / 1) expect(inv[i]).toBeCloseTo(base[i] / 32, 12); // low: divided
      else {
        // medium: a blend strictly between the two
        const smooth = (8192 / wavelen - 1) / (4 - 1);
        expect(inv[i]).toBeCloseTo((1 - smooth) * (base[i] / 32) + smooth * base[i], 9);
        expect(inv[i]).toBeLessThan(base[i]);
        expect(inv[i]).toBeGreaterThan(base[i] / 32);
      }
    }
    // The bands all occur for this configuration.
    expect(inv[0]).toBe(base[0]);
    expect(inv[31]).toBeCloseTo(base[31] / 32, 15);
  });
});

describe('RoPE application', () => {
  it('is the identity at position 0', () => {
    const x = new Rng(1).normals(2 * 3 * 8);
    const out = new Float32Array(x.length);
    ropeForward(out, x, [0, 0], ropeInvFreq(plain), 2, 3, 8);
    expect(Array.from(out)).toEqual(Array.from(x));
  });

  it('preserves the norm of every rotated pair and of the head', () => {
    const rng = new Rng(2);
    const x = rng.normals(4 * 2 * 8);
    const out = new Float32Array(x.length);
    ropeForward(out, x, [1, 7, 100, 4096], ropeInvFreq(plain), 4, 2, 8);
    for (let head = 0; head < 8; head++) {
      for (let i = 0; i < 4; i++) {
        const a = head * 8 + i;
        const b = a + 4;
        expect(Math.hypot(out[a], out[b])).toBeCloseTo(Math.hypot(x[a], x[b]), 5);
      }
    }
  });

  it('rotates the first pair by the position angle (rotate_half convention)', () => {
    const x = new Float32Array([1, 0, 0, 0, 0, 0, 0, 0]); // x1 = e0, x2 = 0
    const out = new Float32Array(8);
    ropeForward(out, x, [3], ropeInvFreq(plain), 1, 1, 8);
    // out[i] = x1 cos - x2 sin, out[i + half] = x2 cos + x1 sin with angle 3 * 1
    expect(out[0]).toBeCloseTo(Math.cos(3), 6);
    expect(out[4]).toBeCloseTo(Math.sin(3), 6);
  });

  it('makes q.k depend only on the relative position', () => {
    const rng = new Rng(3);
    const q = rng.normals(8);
    const k = rng.normals(8);
    const dotAt = (pq: number, pk: number) => {
      const rq = new Float32Array(8);
      const rk = new Float32Array(8);
      ropeForward(rq, q, [pq], ropeInvFreq(plain), 1, 1, 8);
      ropeForward(rk, k, [pk], ropeInvFreq(plain), 1, 1, 8);
      return rq.reduce((s, v, i) => s + v * rk[i], 0);
    };
    expect(dotAt(10, 3)).toBeCloseTo(dotAt(107, 100), 4);
  });

  it('table entries are cos and sin of the f32 angle', () => {
    const t = ropeTable(plain, 5);
    const inv = ropeInvFreq(plain);
    expect(t.length).toBe(5 * 4 * 2);
    expect(t[(4 * 4 + 1) * 2]).toBeCloseTo(Math.cos(4 * inv[1]), 7);
    expect(t[(4 * 4 + 1) * 2 + 1]).toBeCloseTo(Math.sin(4 * inv[1]), 7);
    expect(t[0]).toBe(1);
    expect(t[1]).toBe(0);
  });
});
