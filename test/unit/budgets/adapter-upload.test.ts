// Adapter import's zip reading (issue 10): only the PEFT files are inflated, and the entry count
// and uncompressed sizes are checked from the zip's directory before anything is inflated, so a
// small zip that expands to gigabytes is refused with a 422 naming the file and the limit.
import { zipSync, type Zippable } from 'fflate';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/service/errors';
import { ADAPTER_ZIP_LIMITS, adapterFromUpload } from '../../../src/service/adapters/upload';

const config = new TextEncoder().encode('{"r": 8, "target_modules": ["q_proj"]}');
const weights = new Uint8Array([1, 2, 3, 4]);
const zip = (files: Zippable) => [{ name: 'adapter.zip', bytes: zipSync(files, { level: 9 }) }];

/** The 422 the upload gets (the test fails if it is accepted or fails otherwise). */
function refusal(files: { name: string; bytes: Uint8Array }[]): InvalidInputError {
  let caught: unknown = null;
  try {
    adapterFromUpload(files);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(InvalidInputError);
  return caught as InvalidInputError;
}

/** Sets the uncompressed size of every entry in the zip's central directory (a lying directory). */
function claimSize(bytes: Uint8Array, size: number): Uint8Array {
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  for (let i = 0; i + 46 <= out.length; i++) if (view.getUint32(i, true) === 0x02014b50) view.setUint32(i + 24, size, true);
  return out;
}

describe('adapterFromUpload', () => {
  it('reads the two PEFT files from a zip, in any folder, ignoring the rest', () => {
    const files = adapterFromUpload(
      zip({ 'run/adapter_config.json': config, 'run/adapter_model.safetensors': weights, 'run/README.md': new Uint8Array(10) }),
    );
    expect(files.adapterConfig).toEqual(config);
    expect(files.adapterModel).toEqual(weights);
  });

  it('refuses a highly compressed adapter_config.json over its cap before inflating it', () => {
    const big = new Uint8Array(ADAPTER_ZIP_LIMITS.maxConfigBytes + 1).fill(32);
    const e = refusal(zip({ 'adapter_config.json': big, 'adapter_model.safetensors': weights }));
    expect(e.status).toBe(422);
    expect(e.loc).toEqual(['body', 'files']);
    expect(e.message).toMatch(/adapter\.zip is refused: adapter_config\.json is 1048577 bytes uncompressed, over the limit of 1048576/);
  });

  it('refuses a directory claiming a huge adapter_model.safetensors', () => {
    const bytes = claimSize(zipSync({ 'adapter_model.safetensors': weights }), 2 ** 32 - 1);
    expect(refusal([{ name: 'a.zip', bytes }]).message).toMatch(
      /adapter_model\.safetensors is 4294967295 bytes uncompressed, over the limit of 268435456/,
    );
  });

  it('refuses a directory that understates a size against the compressed data', () => {
    const bytes = claimSize(zipSync({ 'adapter_config.json': new Uint8Array(8192).map((_, i) => (i * 7919) % 251) }, { level: 0 }), 10);
    expect(refusal([{ name: 'a.zip', bytes }]).message).toMatch(/declares 10 bytes uncompressed but 8192 compressed/);
  });

  it('never inflates other entries, however large they claim to be', () => {
    const junk = claimSize(zipSync({ 'optimizer.pt': new Uint8Array(64) }), 2 ** 32 - 1);
    expect(refusal([{ name: 'a.zip', bytes: junk }]).message).toMatch(/got optimizer\.pt/);
  });

  it('refuses too many entries and a duplicated PEFT file', () => {
    const many: Zippable = {};
    for (let i = 0; i <= ADAPTER_ZIP_LIMITS.maxEntries; i++) many[`f${i}.txt`] = new Uint8Array(1);
    expect(refusal(zip(many)).message).toMatch(/more than 64 entries/);
    expect(refusal(zip({ 'a/adapter_config.json': config, 'b/adapter_config.json': config })).message).toMatch(
      /holds adapter_config\.json twice/,
    );
  });

  it('refuses adapter_model.bin with the way out', () => {
    expect(
      refusal([
        { name: 'adapter_config.json', bytes: config },
        { name: 'adapter_model.bin', bytes: weights },
      ]).message,
    ).toMatch(/PyTorch pickle.*safe_serialization=True/);
  });
});
