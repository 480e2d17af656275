// GGUF names in a repository (split parts found from any part's name, the model's name without the
// part suffix, paths that may be fetched) and where a Hugging Face token may be sent: only the hub
// and the configured mirror, by origin.
import { describe, expect, it } from 'vitest';
import { ggufDisplayName, ggufModelFile, ggufParts, isGgufPath } from '../../../src/engine/model/sources/gguf-files';
import { hubHeaders } from '../../../src/engine/model/sources/hub-auth';
import { UrlSource } from '../../../src/engine/model/sources/url-source';

describe('GGUF file names', () => {
  it('finds every part of a split file from any one part, in order', () => {
    const parts = ['m-Q4_K_M-00001-of-00003.gguf', 'm-Q4_K_M-00002-of-00003.gguf', 'm-Q4_K_M-00003-of-00003.gguf'];
    expect(ggufParts(parts[1])).toEqual(parts);
    expect(ggufParts('Q8_0/big-Q8_0-00002-of-00002.gguf')).toEqual([
      'Q8_0/big-Q8_0-00001-of-00002.gguf',
      'Q8_0/big-Q8_0-00002-of-00002.gguf',
    ]);
    expect(ggufParts('model-Q4_K_M.gguf')).toEqual(['model-Q4_K_M.gguf']);
  });

  it('refuses split names that cannot be a part', () => {
    expect(() => ggufParts('m-00003-of-00002.gguf')).toThrow(/part 3 of 2/);
    expect(() => ggufParts('m-00000-of-00002.gguf')).toThrow(/part 0 of 2/);
    expect(() => ggufParts('m-00001-of-99999.gguf')).toThrow(/parts 1 to 256/);
  });

  it('names a model by its file without the part suffix', () => {
    expect(ggufModelFile('Q8_0/big-Q8_0-00002-of-00002.gguf')).toBe('Q8_0/big-Q8_0.gguf');
    expect(ggufModelFile('one.gguf')).toBe('one.gguf');
    expect(ggufDisplayName('Q8_0/big-Q8_0-00001-of-00002.gguf')).toBe('big-Q8_0');
  });

  it('accepts only .gguf paths inside the repository', () => {
    expect(isGgufPath('a/b-Q4_0.gguf')).toBe(true);
    for (const bad of ['../x.gguf', '/x.gguf', 'a//x.gguf', 'a/./x.gguf', 'x.safetensors', 'a\\x.gguf'])
      expect(isGgufPath(bad), bad).toBe(false);
  });

  it('fetches a file in a folder of the repository with each segment encoded', () => {
    const source = new UrlSource('org/repo', { hfBase: 'https://mirror.example/' });
    expect(source.fileUrl('Q8_0/a b.gguf')).toBe('https://mirror.example/org/repo/resolve/main/Q8_0/a%20b.gguf');
  });
});

describe('where the Hugging Face token goes', () => {
  const credentials = { token: 'hf_secret', mirror: 'https://mirror.example/hf' };

  it('goes to the hub and to the configured mirror', () => {
    expect(hubHeaders('https://huggingface.co/org/repo/resolve/main/', credentials)).toEqual({ Authorization: 'Bearer hf_secret' });
    expect(hubHeaders('https://mirror.example/hf/org/repo/resolve/main/', credentials)).toEqual({ Authorization: 'Bearer hf_secret' });
  });

  it('goes nowhere else: other hosts, other ports, other schemes, look-alike hosts', () => {
    for (const url of [
      'https://example.com/models/',
      'http://huggingface.co/org/repo/',
      'https://huggingface.co.evil.example/org/repo/',
      'https://cdn-lfs.huggingface.co/repos/x',
      'https://mirror.example:8443/hf/org/repo/',
      'not a url',
    ]) {
      expect(hubHeaders(url, credentials), url).toBeUndefined();
    }
    expect(hubHeaders('https://mirror.example/hf/', { token: 'hf_secret', mirror: null })).toBeUndefined();
    expect(hubHeaders('https://huggingface.co/org/repo/', null)).toBeUndefined();
  });

  it('is sent by a UrlSource only where it may go', () => {
    const hub = new UrlSource('org/repo', { credentials, headers: { 'X-Extra': '1' } });
    expect(hub.headers).toEqual({ 'X-Extra': '1', Authorization: 'Bearer hf_secret' });
    expect(new UrlSource('https://example.com/model/', { credentials }).headers).toEqual({});
  });
});
