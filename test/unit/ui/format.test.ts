// Numbers as the UI shows them: bytes, durations, rates, metrics.
import { describe, expect, it } from 'vitest';
import { formatBytes, formatCount, formatDuration, formatMetric, formatRate } from '../../../src/ui/format';

describe('format', () => {
  it('writes bytes in binary units with sensible precision', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(8.27 * 2 ** 20)).toBe('8.27 MiB');
    expect(formatBytes(300 * 2 ** 30)).toBe('300 GiB');
    expect(formatBytes(null)).toBe('—');
  });

  it('writes durations in seconds, minutes, hours', () => {
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(32_400)).toBe('32 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
    expect(formatDuration(3_725_000)).toBe('1 h 2 min');
    expect(formatDuration(-5)).toBe('—');
    expect(formatDuration(Number.NaN)).toBe('—');
  });

  it('writes rates, counts and metric values', () => {
    expect(formatRate(5 * 2 ** 20)).toBe('5.00 MiB/s');
    expect(formatRate(0)).toBe('—');
    expect(formatCount(4_200_000)).toBe('4.2M');
    expect(formatCount(617_000)).toBe('617.0k');
    expect(formatMetric(3)).toBe('3');
    expect(formatMetric(0.123456)).toBe('0.1235');
    expect(formatMetric(1e-4)).toBe('1.000e-4');
    expect(formatMetric(true)).toBe('true');
  });
});
