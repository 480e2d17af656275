/**
 * makeModels: everything under public/models/, built in memory from seeds alone. Steps: generate
 * the corpus, pre-tokenize it with the shipped pre-tokenizer, train the BPE, then for each model
 * write config.json, generation_config.json, tokenizer.json, tokenizer_config.json (and
 * chat_template.jinja where the spec says), model.safetensors with random weights, and finally
 * index.json (the catalogue the app reads). The result maps paths relative to public/models/ to
 * bytes, so a test can build it twice and compare.
 */
import { parseModelConfig } from '../../src/engine/model/config/hf-config';
import { writeSafetensors } from '../../src/engine/model/files/safetensors-writer';
import { numel } from '../../src/engine/tensor/tensor-data';
import { planParameters } from '../../src/engine/model/weights/parameter-plan';
import { trainBpe } from './bpe-trainer';
import { generateCorpus } from './corpus';
import { MODEL_SPECS, VOCAB_SIZE } from './models';
import { ADDED_TOKENS, preTokenize, tokenizerConfigJson, tokenizerJson } from './tokenizer-json';
import { randomWeights } from './weights';

export const CORPUS_SEED = 20250101;
export const CORPUS_DOCUMENTS = 6000;

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 2) + '\n');

/** Trains the shared tokenizer: the tokenizer.json object. */
export function trainTokenizer(): object {
  const counts = new Map<string, number>();
  for (const doc of generateCorpus(CORPUS_SEED, CORPUS_DOCUMENTS)) {
    for (const w of preTokenize(doc)) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const bpe = trainBpe(counts, { specialTokens: ADDED_TOKENS.map((t) => t.content), vocabSize: VOCAB_SIZE, minFrequency: 2 });
  if (bpe.vocab.length !== VOCAB_SIZE) throw new Error(`corpus too small: BPE stopped at ${bpe.vocab.length} tokens`);
  return tokenizerJson(bpe);
}

export function makeModels(): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  const tokenizerBytes = json(trainTokenizer());
  const index: object[] = [];
  for (const spec of MODEL_SPECS) {
    const config = parseModelConfig(spec.config);
    const dir = `${spec.folder}/`;
    const tokenizerConfig = tokenizerConfigJson({
      chatTemplate: spec.chatTemplate,
      bosToken: null,
      eosToken: '<|im_end|>',
      padToken: '<|endoftext|>',
      modelMaxLength: config.maxPositionEmbeddings,
    }) as Record<string, unknown>;
    if (spec.templateFile) {
      delete tokenizerConfig.chat_template;
      files.set(dir + 'chat_template.jinja', new TextEncoder().encode(spec.chatTemplate));
    }
    files.set(dir + 'config.json', json(spec.config));
    files.set(dir + 'generation_config.json', json(spec.generationConfig));
    files.set(dir + 'tokenizer.json', tokenizerBytes);
    files.set(dir + 'tokenizer_config.json', json(tokenizerConfig));
    const weights = randomWeights(config, spec.dtype, spec.seed, spec.config.initializer_range as number);
    files.set(dir + 'model.safetensors', writeSafetensors(weights, { format: 'pt' }));
    const names = [...files.keys()]
      .filter((p) => p.startsWith(dir))
      .map((p) => p.slice(dir.length))
      .sort();
    index.push({
      id: spec.id,
      path: `models/${dir}`,
      architecture: spec.architecture,
      parameters: planParameters(config).reduce((n, w) => n + numel(w.shape), 0),
      bytes: names.reduce((s, n) => s + files.get(dir + n)!.byteLength, 0),
      default: spec.isDefault,
      description: spec.description,
      files: names,
    });
  }
  files.set('index.json', json({ models: index }));
  return files;
}
